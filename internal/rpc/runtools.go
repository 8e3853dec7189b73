package rpc

// The host tools a headless run session's agent has beside its mood's
// tools (seed 002 §6, §9): choird runs them for the run its session
// performs, found from the session, never from the input.
const (
	// HostToolRunNote appends a typed note (OBSERVATION, HYPOTHESIS,
	// HYPERTHESIS, CONJECTURE, REQUEST_HELP, REQUEST_VERIFY, DRIVE,
	// BELIEVE) to the run's receipts.
	HostToolRunNote = "choir.run.note"
	// HostToolRunSplit files a SPLIT_REQUEST: the run ends without a
	// commit and the director splits its work item.
	HostToolRunSplit = "choir.run.split"
	// HostToolRunSpecChange files a SPEC_CHANGE_REQUEST with evidence,
	// which lets the run's commit change those SPECS files.
	HostToolRunSpecChange = "choir.run.spec_change"
	// HostToolKBSearch searches the local knowledge base of the agent's
	// runs: pointers (object, kind, snippet, score) to cite as
	// sha256:<object>, never the objects' content.
	HostToolKBSearch = "choir.kb.search"
)

// RunHostTools are the run sessions' own host tools, offered in every
// mood (they are events, not side effects outside the run).
var RunHostTools = []string{HostToolRunNote, HostToolRunSplit, HostToolRunSpecChange, HostToolKBSearch}
