package doctor

import (
	"context"
	"strings"
	"testing"

	"choir/internal/config"
)

// The doctor says which caps hold, and names the models without a price
// (a warning, caps or none) with what to add.
func TestSpend(t *testing.T) {
	five, tokens := 5.0, int64(1000)
	models := map[string]config.Model{"cheap": {Price: &config.Price{Input: 1, Output: 2}}, "free": {}}
	priced := map[string]config.Model{"cheap": models["cheap"]}
	for _, tc := range []struct {
		name   string
		cfg    config.Config
		status Status
		want   []string
	}{
		{"no caps, a model unpriced", config.Config{Models: models}, Warn, []string{"no spend caps", "without a price", "free", "models.<name>.price"}},
		{"no caps, every model priced", config.Config{Models: priced}, Skip, []string{"no spend caps"}},
		{"currency cap, a model unpriced", config.Config{Models: models, Spend: &config.Spend{PerDay: &five}}, Warn,
			[]string{"caps on the installation", "not count against a cap in USD", "free", "models.<name>.price", "per_day_tokens"}},
		{"an agent's currency cap", config.Config{Models: models, Agents: map[string]config.Agent{"a1": {Spend: &config.Spend{PerMonth: &five}}}}, Warn,
			[]string{"caps on a1", "free"}},
		{"token caps, a model unpriced", config.Config{Models: models, Spend: &config.Spend{PerDayTokens: &tokens}}, Warn, []string{"caps on the installation", "free", "models.<name>.price"}},
		{"token caps, every model priced", config.Config{Models: priced, Spend: &config.Spend{PerDayTokens: &tokens}}, OK, []string{"caps on the installation"}},
		{"every model priced", config.Config{Models: priced, Spend: &config.Spend{Currency: "EUR", PerDay: &five}}, OK, []string{"installation in EUR"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := &Doctor{Home: newHome(t, nil)}
			d.loaded = &config.Loaded{Config: &tc.cfg}
			r := d.checkSpend(context.Background())
			if r.Status != tc.status {
				t.Errorf("checkSpend = %+v; want %s", r, tc.status)
			}
			for _, w := range tc.want {
				if !strings.Contains(r.Detail+" -- "+r.Fix, w) {
					t.Errorf("detail %q, fix %q; want them to say %q", r.Detail, r.Fix, w)
				}
			}
		})
	}
}
