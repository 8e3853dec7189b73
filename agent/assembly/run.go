package assembly

import (
	"choir/agent/tool"
	"choir/internal/rpc"
)

// runTools is the registry a session offers and runs: all of tools, or,
// in a headless run session (choird's run brief), only the tools the
// brief names. A tool outside the list is neither offered to the model
// nor callable (the arbiter runs only what the registry has). The answer
// goes back through choir.dm.send, the reply path, which is no model tool
// and stays open. Names the image has not are ignored (logged).
func (rt *Runtime) runTools(tools *tool.Registry) *tool.Registry {
	brief := rt.sess.RunBrief
	if brief == nil {
		return tools
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
