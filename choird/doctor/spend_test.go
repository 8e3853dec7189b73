package doctor

import (
	"context"
	"strings"
	"testing"

	"choir/internal/config"
)

// The doctor says which caps hold and which models count in tokens only
// under a cap in currency.
func TestSpend(t *testing.T) {
	five, tokens := 5.0, int64(1000)
	models := map[string]config.Model{"cheap": {Price: &config.Price{Input: 1, Output: 2}}, "free": {}}
	for _, tc := range []struct {
		name   string
		cfg    config.Config
		status Status
		want   []string
	}{
		{"no caps", config.Config{Models: models}, Skip, []string{"no spend caps"}},
		{"currency cap, a model unpriced", config.Config{Models: models, Spend: &config.Spend{PerDay: &five}}, Warn,
			[]string{"caps on the installation in USD", "tokens only", "free"}},
		{"an agent's currency cap", config.Config{Models: models, Agents: map[string]config.Agent{"a1": {Spend: &config.Spend{PerMonth: &five}}}}, Warn,
			[]string{"caps on a1", "free"}},
		{"token caps", config.Config{Models: models, Spend: &config.Spend{PerDayTokens: &tokens}}, OK, []string{"caps on the installation"}},
		{"every model priced", config.Config{Models: map[string]config.Model{"cheap": models["cheap"]}, Spend: &config.Spend{Currency: "EUR", PerDay: &five}}, OK, []string{"installation"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := &Doctor{Home: newHome(t, nil)}
			d.loaded = &config.Loaded{Config: &tc.cfg}
			r := d.checkSpend(context.Background())
			if r.Status != tc.status {
				t.Errorf("checkSpend = %+v; want %s", r, tc.status)
			}
			for _, w := range tc.want {
				if !strings.Contains(r.Detail, w) {
					t.Errorf("detail %q; want it to say %q", r.Detail, w)
				}
			}
		})
	}
}
