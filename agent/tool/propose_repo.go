package tool

import (
	"encoding/json"
	"strings"
)

// ProposeRepoChangeName asks a human to merge a branch the agent pushed to
// its own repo (§20, user-initiated self-evolution).
const ProposeRepoChangeName = "choir.propose.repo_change"

// ProposeRepoChange is the meta tool of §20's first flow: the agent has
// cloned its own repo into the workspace, committed a change with its git
// identity on proposal/<session-id>/<name> and pushed it; this asks a human
// to merge it. On approval choird merges the branch into the repo's
// configured branch (a conflict merges nothing) and rebuilds and restarts
// the agent with it; a rejected branch is left for inspection. sessionID
// is the session's id, the only prefix choird accepts.
func ProposeRepoChange(submit ProposeFunc, sessionID string) Tool {
	prefix := "proposal/" + sessionID + "/"
	shown := prefix
	if sessionID == "" {
		shown = "proposal/<session-id>/"
	}
	return &ProposeTool{
		llm: LLMTool{Name: ProposeRepoChangeName,
			Description: "Ask a human to merge a change to your own repo (your tools, skills or identity files). First clone your repo into the workspace, " +
				"commit the change with your git identity on a branch named " + shown + "<short-name>, and push that branch. " +
				"On approval choird merges it and rebuilds and restarts you with it; nothing changes before.",
			Parameters: json.RawMessage(`{"type":"object","properties":{` +
				`"branch":{"type":"string","minLength":1,"description":"the branch you pushed: ` + shown + `<short-name>"},` +
				`"description":{"type":"string","minLength":1,"description":"what the change does and why, for the human who decides"}},` +
				`"required":["branch","description"],"additionalProperties":false}`)},
		requestType: "repo_change",
		check: func(in json.RawMessage) error {
			var p struct{ Branch string }
			json.Unmarshal(in, &p)
			name, ok := strings.CutPrefix(p.Branch, prefix)
			if sessionID == "" || !ok || name == "" || strings.ContainsAny(name, " \t~^:?*[\\") || strings.Contains(name, "..") {
				return PathErrorf(CodeInvalidInput, "/branch", "%q is not a branch this session may propose: name it %s<short-name> (letters, digits, -, _, /, .), push it, then call this again", p.Branch, shown)
			}
			return nil
		},
		submit: submit,
	}
}
