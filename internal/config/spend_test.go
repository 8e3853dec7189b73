package config

import (
	"strings"
	"testing"
)

// Spend caps and prices are judged at their paths; the currency and
// warn_at are the installation's only.
func TestSpendValidation(t *testing.T) {
	neg, big, two, warnLow := -1.0, 2e9, 2.0, 0.0
	negTok := int64(-5)
	c := &Config{
		Spend:  &Spend{Currency: "usd", WarnAt: &two, PerDay: &neg, PerMonth: &big, PerDayTokens: &negTok},
		Agents: map[string]Agent{"a1": {Spend: &Spend{Currency: "EUR", WarnAt: &warnLow, PerMonthTokens: &negTok}}},
		Models: map[string]Model{"m": {Price: &Price{Input: -1, Output: 2e6, CachedInput: &neg}}},
	}
	v := validator{c: c}
	v.spend()
	err := v.ps.sorted().Err()
	if err == nil {
		t.Fatal("spend() found nothing")
	}
	for _, path := range []string{"spend.currency", "spend.warn_at", "spend.per_day", "spend.per_month", "spend.per_day_tokens",
		"agents.a1.spend.currency", "agents.a1.spend.warn_at", "agents.a1.spend.per_month_tokens",
		"models.m.price.input", "models.m.price.output", "models.m.price.cached_input"} {
		if !strings.Contains(err.Error(), path) {
			t.Errorf("problems %q; want one at %s", err, path)
		}
	}
	if !strings.HasPrefix(err.Error(), "11 problems") {
		t.Errorf("problems:\n%s\nwant 11, one per path", err)
	}
}

func TestPriceAndUnpriced(t *testing.T) {
	cached := 0.5
	p := &Price{Input: 2, Output: 10, CachedInput: &cached}
	if got := p.Cost(1000, 400, 100); got != (600*2+400*0.5+100*10)/1e6 {
		t.Errorf("Cost = %v", got)
	}
	if got := p.Cost(100, 500, 0); got != 100*0.5/1e6 {
		t.Errorf("Cost with more cached than prompt = %v; want every prompt token cached", got)
	}
	if got := (*Price)(nil).Cost(1000, 0, 1000); got != 0 {
		t.Errorf("nil price Cost = %v; want 0", got)
	}
	five := 5.0
	for _, tc := range []struct {
		name  string
		spend *Spend
		want  []string
		not   []string
	}{
		{"no caps", nil, []string{"without a price", ": b;", "models.<name>.price", "in USD"}, []string{"cap in"}},
		{"a cap in currency", &Spend{Currency: "EUR", PerDay: &five}, []string{": b;", "models.<name>.price", "in EUR", "does not count their calls", "per_day_tokens"}, nil},
		{"caps in tokens", &Spend{PerDayTokens: new(int64)}, []string{": b;", "models.<name>.price"}, []string{"cap in"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &Config{Models: map[string]Model{"a": {Price: p}, "b": {}}, Spend: tc.spend}
			w := UnpricedWarning(c)
			for _, s := range tc.want {
				if !strings.Contains(w, s) {
					t.Errorf("UnpricedWarning = %q; want it to say %q", w, s)
				}
			}
			for _, s := range tc.not {
				if strings.Contains(w, s) {
					t.Errorf("UnpricedWarning = %q; want no %q", w, s)
				}
			}
		})
	}
	if w := UnpricedWarning(&Config{Models: map[string]Model{"a": {Price: p}}}); w != "" {
		t.Errorf("UnpricedWarning with every model priced = %q; want none", w)
	}
}
