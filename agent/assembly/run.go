package assembly

import (
	"choir/agent/skill"
	"choir/agent/tool"
	"choir/internal/rpc"
)

// runTools is the registry a session offers and runs: all of tools, or,
// in a headless run session (choird's run brief), only the tools the
// brief names. A tool outside the list is neither offered to the model
// nor callable (the arbiter runs only what the registry has). The answer
// goes back through choir.dm.send, the reply path, which is no model tool
// and stays open. Names the image has not are ignored (logged).
//
// choir.net.fetch is offered in an interactive session only when choird
// says the agent is in network policy mode (its allowlist is then the
// agent's only way out); a run offers it when its brief names it.
func (rt *Runtime) runTools(tools *tool.Registry) *tool.Registry {
	brief := rt.sess.RunBrief
	if brief == nil {
		return keepNetFetch(tools, rt.sess.NetFetch)
	}
	return keepRunTools(tools, brief, func(missing []string) {
		rt.log.Warn("the run brief names tools this image has not", "run_id", brief.ID, "tools", missing)
	})
}

// keepRunTools keeps the tools brief names; missing is told the names
// tools has not.
func keepRunTools(tools *tool.Registry, brief *rpc.RunBrief, missing func([]string)) *tool.Registry {
	var absent []string
	for _, n := range brief.Tools {
		if !tools.Has(n) {
			absent = append(absent, n)
		}
	}
	if len(absent) > 0 && missing != nil {
		missing(absent)
	}
	return tools.Keep(tool.Among(brief.Tools))
}

// keepNetFetch drops choir.net.fetch unless the session has a policy.
func keepNetFetch(tools *tool.Registry, policy bool) *tool.Registry {
	if policy || !tools.Has(rpc.HostToolNetFetch) {
		return tools
	}
	return tools.Keep(func(t tool.Tool) bool { return t.Name() != rpc.HostToolNetFetch })
}

// runSkills is the skill registry a session's lanes may start skills
// from: none in a headless run session, whose tools are its mood's
// profile alone (choird's run brief), so neither choir.skill.start nor
// the other choir.skill.* control tools are offered there, and a call of
// one is refused like any tool the session has not.
func (rt *Runtime) runSkills(skills *skill.Registry) *skill.Registry {
	return keepRunSkills(skills, rt.sess.RunBrief)
}

func keepRunSkills(skills *skill.Registry, brief *rpc.RunBrief) *skill.Registry {
	if brief != nil {
		return nil
	}
	return skills
}
