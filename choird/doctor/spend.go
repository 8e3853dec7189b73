package doctor

import (
	"context"
	"strings"

	"choir/internal/config"
)

// checkSpend says which caps hold model calls and which models have no
// price (issue 23): their calls have no cost in the ledger, and a cap in
// currency does not count them. An unpriced model is a warning whether or
// not a cap is set.
func (d *Doctor) checkSpend(ctx context.Context) Result {
	l := d.getLoaded()
	if l == nil {
		return skip("the configuration did not load")
	}
	c := l.Config
	capped := c.Spend.Capped()
	var agents []string
	for _, id := range config.SortedNames(c.Agents) {
		if s := c.Agents[id].Spend; s.Capped() {
			capped = true
			agents = append(agents, id)
		}
	}
	detail := "no spend caps (config.json spend, agents.<id>.spend): model calls are recorded in the ledger, not limited"
	switch {
	case !capped:
	case c.Spend == nil || !c.Spend.Capped():
		detail = "caps on " + strings.Join(agents, ", ")
	case len(agents) > 0:
		detail = "caps on the installation and on " + strings.Join(agents, ", ")
	default:
		detail = "caps on the installation"
	}
	if unpriced := c.Unpriced(); len(unpriced) > 0 {
		currency := c.Spend.CurrencyOrDefault()
		fix := "add models.<name>.price = {\"input\": …, \"output\": …, \"cached_input\": …} per million tokens in " + currency
		what := "models without a price have no cost in the ledger (tokens only, unless the provider reports one)"
		if config.CurrencyCapped(c) {
			fix += ", or cap in tokens (per_day_tokens, per_month_tokens)"
			what += " and do not count against a cap in " + currency
		}
		return bad(Warn, fix, "%s; %s: %s", detail, what, strings.Join(unpriced, ", "))
	}
	if !capped {
		return skip("%s", detail)
	}
	return ok("%s in %s", detail, c.Spend.CurrencyOrDefault())
}
