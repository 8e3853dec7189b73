package lane

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
)

// CoreEvent types (design §12.7): what a core job tells the edge. Raw
// chain of thought never leaves a core: its own model text is not an event.
const (
	EventProgress       = "progress"
	EventPlan           = "plan"
	EventThoughtSummary = "thought_summary"
	EventToolProposal   = "tool_proposal"
	EventNeedInfo       = "need_info"
	EventPartialResult  = "partial_result"
	EventFinalResult    = "final_result"
	EventError          = "error"
)

// CoreEvent is one event of a core job's stream to the edge.
type CoreEvent struct {
	Job   string `json:"job_name"`
	JobID string `json:"job_id"`
	Type  string `json:"type"`
	// Text is the event's human-readable part: a progress note, a
	// question, the final summary, the error message.
	Text string `json:"text,omitempty"`
	// Data is the structured part: the plan's steps, a tool proposal
	// {tool, args}, the final result {summary, result}, an error {code,
	// message}.
	Data json.RawMessage `json:"data,omitempty"`
}

// Report kinds passed to Config.Report besides the intermediate event types
// (need_info; and progress, plan, thought_summary and partial_result for a
// verbose job).
const (
	ReportCompleted  = "completed"
	ReportTerminated = "terminated"
)

// FinalResult is what choir.core.finish delivers.
type FinalResult struct {
	Summary string          `json:"summary"`
	Result  json.RawMessage `json:"result,omitempty"`
}

// JobError is why a job terminated, as its error event carries it.
type JobError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// maxReportResult bounds the result JSON a report shows.
const maxReportResult = 3000

// reportText renders a final or intermediate event for the user. The
// rendering is deterministic, not a model call: a report is mandatory, so
// it must not depend on the edge model answering, on the token budget, or
// on the session still running.
func reportText(ev CoreEvent) (kind, text string) {
	switch ev.Type {
	case EventFinalResult:
		var fr FinalResult
		json.Unmarshal(ev.Data, &fr)
		text = fmt.Sprintf("Core job %s finished: %s", ev.Job, strings.TrimSpace(fr.Summary))
		if r := bytes.TrimSpace(fr.Result); len(r) > 0 && string(r) != "null" {
			var pretty bytes.Buffer
			if json.Indent(&pretty, r, "", "  ") == nil {
				r = pretty.Bytes()
			}
			text += "\n\nResult:\n" + cutText(string(r), maxReportResult)
		}
		return ReportCompleted, text
	case EventError:
		var je JobError
		json.Unmarshal(ev.Data, &je)
		return ReportTerminated, fmt.Sprintf("Core job %s stopped without finishing (%s): %s", ev.Job, je.Code, je.Message)
	case EventNeedInfo:
		return ev.Type, fmt.Sprintf("Core job %s needs information: %s", ev.Job, ev.Text)
	case EventPlan:
		return ev.Type, fmt.Sprintf("Core job %s plans: %s", ev.Job, ev.Text)
	case EventPartialResult:
		return ev.Type, fmt.Sprintf("Core job %s has a partial result: %s", ev.Job, ev.Text)
	}
	return ev.Type, fmt.Sprintf("Core job %s: %s", ev.Job, ev.Text)
}

// relayed reports whether an event of type typ is reported to the user at
// a job's verbosity. The final events always are.
func relayed(typ, verbosity string) bool {
	switch typ {
	case EventFinalResult, EventError:
		return true
	case EventNeedInfo:
		return verbosity != VerbosityQuiet
	case EventProgress, EventPlan, EventPartialResult, EventThoughtSummary:
		return verbosity == VerbosityVerbose
	}
	return false
}

func cutText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := n
	for i > 0 && s[i]&0xC0 == 0x80 {
		i--
	}
	return s[:i] + "…"
}

// stream is the core → edge event channel: unbounded, so a core never
// waits on the edge, and delivered in order by one goroutine.
type stream struct {
	mu     sync.Mutex
	queue  []streamed
	wake   chan struct{}
	closed bool
}

type streamed struct {
	ev        CoreEvent
	verbosity string
}

func newStream() *stream { return &stream{wake: make(chan struct{}, 1)} }

func (s *stream) send(ev CoreEvent, verbosity string) {
	s.mu.Lock()
	s.queue = append(s.queue, streamed{ev, verbosity})
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

func (s *stream) close() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// serve delivers every event to deliver until the stream is closed and
// drained.
func (s *stream) serve(deliver func(CoreEvent, string)) {
	for {
		s.mu.Lock()
		q, closed := s.queue, s.closed
		s.queue = nil
		s.mu.Unlock()
		for _, e := range q {
			deliver(e.ev, e.verbosity)
		}
		if closed && len(q) == 0 {
			return
		}
		if len(q) == 0 {
			<-s.wake
		}
	}
}
