package config

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
)

// Spend caps what model calls may cost (issue 23): for the whole
// installation (config.json's "spend") and per agent
// ("agents.<id>.spend"). A cap is per UTC day or per UTC month, in the
// installation's currency (PerDay, PerMonth) or in tokens (PerDayTokens,
// PerMonthTokens); an absent cap does not limit. Currency and WarnAt are
// the installation's only. choird's ledger (choird/ledger) is the one
// place that compares them with what was spent; the agent only asks it.
type Spend struct {
	Currency       string   `json:"currency,omitempty"`
	WarnAt         *float64 `json:"warn_at,omitempty"`
	PerDay         *float64 `json:"per_day,omitempty"`
	PerMonth       *float64 `json:"per_month,omitempty"`
	PerDayTokens   *int64   `json:"per_day_tokens,omitempty"`
	PerMonthTokens *int64   `json:"per_month_tokens,omitempty"`
}

// Price is what a model costs per million tokens in spend.currency:
// prompt tokens (Input), completion tokens (Output), and prompt tokens the
// provider served from its prefix cache (CachedInput; absent means Input).
type Price struct {
	Input       float64  `json:"input"`
	Output      float64  `json:"output"`
	CachedInput *float64 `json:"cached_input,omitempty"`
}

// Spend defaults.
const (
	DefaultCurrency = "USD"
	DefaultWarnAt   = 0.8
)

// CurrencyOrDefault is the installation's currency.
func (s *Spend) CurrencyOrDefault() string {
	if s == nil || s.Currency == "" {
		return DefaultCurrency
	}
	return s.Currency
}

// WarnAtOrDefault is the share of a cap at which the DMs are told once.
func (s *Spend) WarnAtOrDefault() float64 {
	if s == nil || s.WarnAt == nil {
		return DefaultWarnAt
	}
	return *s.WarnAt
}

// Capped says whether any cap is set.
func (s *Spend) Capped() bool {
	return s != nil && (s.PerDay != nil || s.PerMonth != nil || s.PerDayTokens != nil || s.PerMonthTokens != nil)
}

// Cost is what a call costs at price p: cached prompt tokens at
// CachedInput (or Input), the other prompt tokens at Input, completion
// tokens at Output, all per million. A nil price costs nothing (the model
// counts tokens only).
func (p *Price) Cost(prompt, cached, completion int64) float64 {
	if p == nil {
		return 0
	}
	cachedPrice := p.Input
	if p.CachedInput != nil {
		cachedPrice = *p.CachedInput
	}
	cached = min(max(cached, 0), prompt)
	return (float64(prompt-cached)*p.Input + float64(cached)*cachedPrice + float64(completion)*p.Output) / 1e6
}

var currencyRE = regexp.MustCompile(`^[A-Z]{3}$`)

// spend checks the installation's and the agents' caps and the models'
// prices.
func (v *validator) spend() {
	if s := v.c.Spend; s != nil {
		if s.Currency != "" && !currencyRE.MatchString(s.Currency) {
			v.add("spend.currency", s.Currency, "want an ISO 4217 code of three capital letters, like \"USD\" or \"EUR\"")
		}
		if s.WarnAt != nil {
			v.between("spend.warn_at", *s.WarnAt, 0.01, 1)
		}
		v.caps("spend", s)
	}
	for _, id := range sortedKeys(v.c.Agents) {
		s := v.c.Agents[id].Spend
		if s == nil {
			continue
		}
		path := "agents." + id + ".spend"
		if s.Currency != "" {
			v.add(path+".currency", s.Currency, "the currency is the installation's: set it in spend.currency")
		}
		if s.WarnAt != nil {
			v.add(path+".warn_at", strconv.FormatFloat(*s.WarnAt, 'g', -1, 64), "warn_at is the installation's: set it in spend.warn_at")
		}
		v.caps(path, s)
	}
	for _, name := range sortedKeys(v.c.Models) {
		p := v.c.Models[name].Price
		if p == nil {
			continue
		}
		path := "models." + name + ".price"
		v.between(path+".input", p.Input, 0, 1e6)
		v.between(path+".output", p.Output, 0, 1e6)
		if p.CachedInput != nil {
			v.between(path+".cached_input", *p.CachedInput, 0, 1e6)
		}
	}
}

func (v *validator) caps(path string, s *Spend) {
	for _, c := range []struct {
		key string
		x   *float64
	}{{"per_day", s.PerDay}, {"per_month", s.PerMonth}} {
		if c.x != nil && (*c.x < 0 || *c.x > 1e9 || math.IsNaN(*c.x)) {
			v.add(path+"."+c.key, strconv.FormatFloat(*c.x, 'g', -1, 64), "want an amount between 0 and 1e9 in spend.currency (0 refuses every call)")
		}
	}
	for _, c := range []struct {
		key string
		x   *int64
	}{{"per_day_tokens", s.PerDayTokens}, {"per_month_tokens", s.PerMonthTokens}} {
		if c.x != nil && (*c.x < 0 || *c.x > 1e15) {
			v.add(path+"."+c.key, strconv.FormatInt(*c.x, 10), "want a number of tokens between 0 and 1e15 (0 refuses every call)")
		}
	}
}

// Unpriced names the models that have no price: with a cap in currency
// they count tokens only, which config load and the doctor say.
func (c *Config) Unpriced() []string {
	var out []string
	for _, name := range sortedKeys(c.Models) {
		if c.Models[name].Price == nil {
			out = append(out, name)
		}
	}
	return out
}

// UnpricedWarning names the models without a price, whatever the caps:
// their calls are recorded with tokens and no cost (unless the provider
// reports one), and a cap in currency does not count them. It says what
// to add; "" when every model has a price.
func UnpricedWarning(c *Config) string {
	unpriced := c.Unpriced()
	if len(unpriced) == 0 {
		return ""
	}
	currency := c.Spend.CurrencyOrDefault()
	w := fmt.Sprintf("models without a price have no cost in the usage ledger (tokens only, unless the provider reports a cost): %s; "+
		"add models.<name>.price = {\"input\": …, \"output\": …, \"cached_input\": …} per million tokens in %s",
		strings.Join(unpriced, ", "), currency)
	if CurrencyCapped(c) {
		w += fmt.Sprintf(" (a cap in %s does not count their calls), or cap in tokens (per_day_tokens, per_month_tokens)", currency)
	}
	return w
}

// CurrencyCapped says whether the installation or an agent has a cap in
// currency (per_day or per_month).
func CurrencyCapped(c *Config) bool {
	if c.Spend != nil && (c.Spend.PerDay != nil || c.Spend.PerMonth != nil) {
		return true
	}
	for _, a := range c.Agents {
		if a.Spend != nil && (a.Spend.PerDay != nil || a.Spend.PerMonth != nil) {
			return true
		}
	}
	return false
}
