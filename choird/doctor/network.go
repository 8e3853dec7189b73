package doctor

import (
	"context"
	"fmt"
	"strings"

	"choir/internal/config"
)

// checkNetwork says which agents are in network policy mode (their only
// way out is choir.net.fetch) and warns about one whose allowlist is
// empty, which admits nothing: an operator who meant to list hosts finds
// out here rather than from the agent.
func (d *Doctor) checkNetwork(ctx context.Context) Result {
	l := d.getLoaded()
	if l == nil {
		return skip("the configuration did not load")
	}
	c := l.Config
	var policy, empty []string
	for _, id := range config.SortedNames(c.Agents) {
		n := c.Agents[id].Network
		if !n.Policy() {
			continue
		}
		policy = append(policy, fmt.Sprintf("%s (%d entries)", id, len(n.Allow)))
		if len(n.Allow) == 0 {
			empty = append(empty, id)
		}
	}
	research := "headless.moods.CURIOUS.allow lists nothing: research runs fetch nothing"
	if h := c.Headless; h != nil && len(h.Moods["CURIOUS"].Allow) > 0 {
		research = fmt.Sprintf("research runs fetch within %d entries", len(h.Moods["CURIOUS"].Allow))
	}
	if len(policy) == 0 {
		return ok("every agent in open mode (§18.1); %s", research)
	}
	detail := "policy mode (choir.net.fetch only): " + strings.Join(policy, ", ") + "; " + research
	if len(empty) > 0 {
		return bad(Warn, "list the URL prefixes each may reach in agents.<id>.network.allow (or set mode open)",
			"%s; an empty allowlist admits nothing, so %s cannot reach the network at all", detail, strings.Join(empty, ", "))
	}
	return ok("%s", detail)
}
