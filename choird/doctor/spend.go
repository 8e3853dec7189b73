package doctor

import (
	"context"
	"strings"

	"choir/internal/config"
)

// checkSpend says which caps hold model calls and which models have no
// price: under a cap in currency those count in tokens only (issue 23).
func (d *Doctor) checkSpend(ctx context.Context) Result {
	l := d.getLoaded()
	if l == nil {
		return skip("the configuration did not load")
	}
	c := l.Config
	capped := c.Spend.Capped()
	currency := c.Spend != nil && (c.Spend.PerDay != nil || c.Spend.PerMonth != nil)
	var agents []string
	for _, id := range config.SortedNames(c.Agents) {
		if s := c.Agents[id].Spend; s.Capped() {
			capped = true
			agents = append(agents, id)
			currency = currency || s.PerDay != nil || s.PerMonth != nil
		}
	}
	if !capped {
		return skip("no spend caps (config.json spend, agents.<id>.spend): model calls are recorded in the ledger, not limited")
	}
	detail := "caps on the installation"
	if c.Spend == nil || !c.Spend.Capped() {
		detail = "caps on " + strings.Join(agents, ", ")
	} else if len(agents) > 0 {
		detail += " and on " + strings.Join(agents, ", ")
	}
	if unpriced := c.Unpriced(); currency && len(unpriced) > 0 {
		return bad(Warn, "add models.<name>.price = {\"input\": …, \"output\": …, \"cached_input\": …} per million tokens in spend.currency, or cap in tokens (per_day_tokens, per_month_tokens)",
			"%s in %s; models without a price count in tokens only, not against a cap in currency: %s", detail, c.Spend.CurrencyOrDefault(), strings.Join(unpriced, ", "))
	}
	return ok("%s", detail)
}
