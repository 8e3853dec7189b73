package rpc

import (
	"encoding/json"
	"strconv"
	"sync"
)

// Push event types (choird → agent).
const (
	EventCancel         = "cancel"          // cancel a core job: {"job_name"}
	EventInject         = "inject"          // /inject into edge: {"id","text"}
	EventUserMessage    = "user_message"    // a user message for edge's queue
	EventConfigChanged  = "config_changed"  // {"config_version"}
	EventSecretsChanged = "secrets_changed" // re-run GET_SECRETS
	EventShutdown       = "shutdown"        // graceful stop: {"reason"}
	EventApproval       = "approval"        // a decision: {"approval_id","status"}
	EventCompact        = "compact"         // compact working memory now: {}
	EventGap            = "gap"             // events were missed; resynchronise
)

// PushEvent is one server-sent event.
type PushEvent struct {
	ID   string          `json:"id"`
	Type string          `json:"type"`
	Data json.RawMessage `json:"data"`
}

// eventLog keeps a session's recent events and wakes its subscribers.
type eventLog struct {
	mu     sync.Mutex
	next   uint64 // id of the next event
	recent []PushEvent
	max    int
	wake   chan struct{} // closed and replaced on every publish
	closed bool
}

func newEventLog(max int) *eventLog {
	return &eventLog{next: 1, max: max, wake: make(chan struct{})}
}

func (l *eventLog) publish(typ string, data json.RawMessage) (string, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return "", false
	}
	ev := PushEvent{ID: strconv.FormatUint(l.next, 10), Type: typ, Data: data}
	l.next++
	l.recent = append(l.recent, ev)
	if len(l.recent) > l.max {
		l.recent = append(l.recent[:0], l.recent[len(l.recent)-l.max:]...)
	}
	close(l.wake)
	l.wake = make(chan struct{})
	return ev.ID, true
}

// head is the id of the newest event published (0 before the first).
func (l *eventLog) head() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.next - 1
}

func (l *eventLog) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.closed {
		l.closed = true
		close(l.wake)
	}
}

// since returns the events after id, whether some were lost (id is older
// than what is kept), a channel closed at the next publish, and whether the
// log is closed.
func (l *eventLog) since(after uint64) (evs []PushEvent, gap bool, wake <-chan struct{}, closed bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.recent) > 0 {
		first, _ := strconv.ParseUint(l.recent[0].ID, 10, 64)
		if after+1 < first {
			gap = true
		}
		for _, ev := range l.recent {
			if id, _ := strconv.ParseUint(ev.ID, 10, 64); id > after {
				evs = append(evs, ev)
			}
		}
	} else if after+1 < l.next {
		gap = true
	}
	return evs, gap, l.wake, l.closed
}
