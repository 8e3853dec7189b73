package staging

import (
	"encoding/json"

	"choir/internal/ctl"
)

// schedulesAtStart is why a change choird reads only at its start waits.
const schedulesAtStart = "choird reads the agents' schedules at its start: restart choird to apply it"

// headlessChanges classifies the changes of headless runs' settings that
// apply otherwise than their section (issue 16): headless.verifiers and
// headless.moods are hot (the director reads them from the running config
// for every run); headless.max_runs and the rest of headless need a
// restart (its section's rule); an agent's schedules need a restart too
// (the scheduler is built at choird's start), whatever the rest of the
// agent's change. ok is false for a change this does not concern.
func headlessChanges(key, name string, from, to json.RawMessage, holders []Holder) (out []ctl.ConfigChange, ok bool) {
	switch key {
	case "headless":
		if name != "verifiers" && name != "moods" {
			return nil, false
		}
		r := rule{class: ctl.ClassHot}
		return []ctl.ConfigChange{{Op: op(from, to), Where: "config.json: headless." + name, Class: r.class, Use: r.use()}}, true
	case "agents":
		a, b := members(from), members(to)
		if a == nil || b == nil || sameJSON(a["schedules"], b["schedules"]) {
			return nil, false
		}
		out = append(out, ctl.ConfigChange{Op: op(a["schedules"], b["schedules"]), Where: "config.json: agents." + name + ".schedules",
			Class: ctl.ClassRestart, Use: schedulesAtStart, Blocks: schedulesAtStart})
		// The rest of the agent's change, without its schedules.
		delete(a, "schedules")
		delete(b, "schedules")
		ra, _ := json.Marshal(a)
		rb, _ := json.Marshal(b)
		if sameJSON(ra, rb) {
			return out, true
		}
		if c, ok := agentSpendOnly(key, name, ra, rb); ok {
			return append(out, c), true
		}
		return append(out, change(ruleFor(key), key, name, ra, rb, holders)), true
	}
	return nil, false
}
