package staging

import (
	"encoding/json"

	"choir/internal/ctl"
)

// agentSpendOnly classifies a change of an agent whose only changed member
// is its spend caps: hot, since choird's ledger reads the running caps at
// every model call (issue 23). Any other change of the agent is its
// section's rule.
func agentSpendOnly(key, name string, from, to json.RawMessage) (ctl.ConfigChange, bool) {
	if key != "agents" {
		return ctl.ConfigChange{}, false
	}
	a, b := members(from), members(to)
	if a == nil || b == nil {
		return ctl.ConfigChange{}, false
	}
	for _, k := range unionKeys(a, b) {
		if k != "spend" && !sameJSON(a[k], b[k]) {
			return ctl.ConfigChange{}, false
		}
	}
	r := rule{class: ctl.ClassHot}
	return ctl.ConfigChange{Op: op(a["spend"], b["spend"]), Where: "config.json: agents." + name + ".spend", Class: ctl.ClassHot, Use: r.use()}, true
}
