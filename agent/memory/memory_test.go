package memory

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"choir/internal/openai"
	"choir/internal/rpc"
)

func entry(rev int64, text string) Entry {
	return Entry{Rev: rev, Hash: fmt.Sprintf("%02x%062x", rev, rev), Type: "UserMsg", Msg: openai.UserMessage(text)}
}

func revs(es []Entry) []int64 {
	var out []int64
	for _, e := range es {
		out = append(out, e.Rev)
	}
	return out
}

func TestViewWithPin(t *testing.T) {
	m := New(Config{Window: 2})
	for r := int64(1); r <= 4; r++ {
		m.Add(entry(r, "x"), false)
	}
	m.Add(entry(5, "current"), true)
	m.Add(entry(6, "turn"), false)
	m.Add(entry(7, "turn"), false)
	_, win := m.View()
	if got, want := revs(win), []int64{3, 4, 5, 6, 7}; !slices.Equal(got, want) {
		t.Errorf("View = %v; want %v (two before the pin, the pin, all after)", got, want)
	}
	if u := m.Measure(0); u.RolledOff != 2 || u.Entries != 7 {
		t.Errorf("Measure = %+v; want 2 rolled off of 7", u)
	}
	m.Add(entry(6, "again"), false) // out of order: ignored
	if _, win := m.View(); len(win) != 5 {
		t.Errorf("a repeated revision was added: %v", revs(win))
	}
}

// scripted is a compaction model answering with the given arguments, or
// an error, and recording its requests.
type scripted struct {
	mu    sync.Mutex
	reqs  []openai.ChatRequest
	reply []any // string arguments or error
}

func (s *scripted) chat(_ context.Context, req openai.ChatRequest) (*openai.ChatResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reqs = append(s.reqs, req)
	r := s.reply[0]
	s.reply = s.reply[1:]
	if err, ok := r.(error); ok {
		return nil, err
	}
	return &openai.ChatResponse{ToolCalls: []openai.ToolCall{{ID: "c", Name: DeltaTool, Arguments: r.(string)}}}, nil
}

func newMem(t *testing.T, s *scripted, window, ctxWindow int) (*Memory, *[]Write, chan string) {
	t.Helper()
	var writes []Write
	notes := make(chan string, 4)
	m := New(Config{
		Lane: "edge", Window: window, ContextWindow: func() int { return ctxWindow },
		Chat: s.chat,
		Resolve: func(ref string) (string, bool) {
			if len(ref) >= 8 && strings.Trim(ref, "0") == "" {
				return strings.Repeat("0", 64), true
			}
			return "", false
		},
		Commit: func(_ context.Context, w Write) error { writes = append(writes, w); return nil },
		Notify: func(msg string) { notes <- msg },
	})
	return m, &writes, notes
}

func wait(t *testing.T, ch <-chan error) error {
	t.Helper()
	select {
	case err := <-ch:
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("compaction did not finish")
		return nil
	}
}

// Entries rolling out of the window start an automatic compaction that
// folds down to half the window; the summary swaps in and the user is told.
func TestAutomaticCompactionByCount(t *testing.T) {
	s := &scripted{reply: []any{`{"memory_delta":{"mode":"append","summary_update":"Ada said hello four times."}}`}}
	m, writes, notes := newMem(t, s, 4, 100000)
	for r := int64(1); r <= 6; r++ {
		m.Add(entry(r, "hello"), r == 6)
	}
	if !m.Maybe(context.Background(), 0) {
		t.Fatal("Maybe = false with an entry rolled off")
	}
	if m.Maybe(context.Background(), 0) {
		t.Error("a second compaction started while one was in flight")
	}
	<-notes
	sum, win := m.View()
	if sum.Summary != "Ada said hello four times." {
		t.Errorf("summary = %q", sum.Summary)
	}
	if got, want := revs(win), []int64{4, 5, 6}; !slices.Equal(got, want) {
		t.Errorf("window after folding = %v; want %v", got, want)
	}
	if len(*writes) != 1 || !slices.Equal((*writes)[0].Folded, []int64{1, 2, 3}) || (*writes)[0].Trigger != "automatic" {
		t.Errorf("commits = %+v", *writes)
	}
	req := s.reqs[0]
	if req.ToolChoice == nil || req.ToolChoice.Function != DeltaTool || len(req.Tools) != 1 {
		t.Errorf("compaction request does not require %s: %+v", DeltaTool, req)
	}
	if !strings.Contains(req.Messages[1].Content, "[ev 010000000000] user: hello") {
		t.Errorf("compaction prompt = %q", req.Messages[1].Content)
	}
}

// Compactable content over the threshold triggers; the pinned message is
// never folded, even when the turn after it is.
func TestAutomaticCompactionByTokens(t *testing.T) {
	s := &scripted{reply: []any{`{"mode":"overwrite","summary_update":"Big outputs were read."}`}}
	m, _, notes := newMem(t, s, 50, 4000) // threshold 3200 tokens
	m.Add(entry(1, "question"), true)
	big := strings.Repeat("y", 8000) // ~2000 tokens each
	m.Add(Entry{Rev: 2, Hash: fmt.Sprintf("%064x", 2), Msg: openai.ToolMessage("c1", big)}, false)
	if m.Maybe(context.Background(), 0) {
		t.Fatal("compaction under the threshold")
	}
	m.Add(Entry{Rev: 3, Hash: fmt.Sprintf("%064x", 3), Msg: openai.ToolMessage("c2", big)}, false)
	if !m.Maybe(context.Background(), 0) {
		t.Fatalf("no compaction over the threshold: %+v", m.Measure(0))
	}
	if msg := <-notes; !strings.Contains(msg, "compacted") {
		t.Errorf("notice = %q", msg)
	}
	if _, win := m.View(); !slices.Equal(revs(win), []int64{1}) {
		t.Errorf("window = %v; want only the pinned message", revs(win))
	}
}

// A failed call or a refused delta keeps the window and the summary; the
// next trigger retries.
func TestCompactionFailureKeepsWindow(t *testing.T) {
	s := &scripted{reply: []any{
		errors.New("model down"),
		`{"memory_delta":{"mode":"append","add_references":["ffffffff"]}}`, // unknown event
		`{"memory_delta":{"mode":"append","summary_update":"ok","add_references":["00000000"]}}`,
	}}
	m, writes, _ := newMem(t, s, 50, 100000)
	for r := int64(1); r <= 6; r++ {
		m.Add(entry(r, "e"), false)
	}
	for i, want := range []string{"model down", "names no event"} {
		err := wait(t, m.Compact(context.Background()))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("compaction %d = %v; want %q", i, err, want)
		}
		if sum, win := m.View(); !sum.Empty() || len(win) != 6 {
			t.Fatalf("after failure %d: summary %+v, window %v", i, sum, revs(win))
		}
	}
	if err := wait(t, m.Compact(context.Background())); err != nil {
		t.Fatal(err)
	}
	if sum, win := m.View(); sum.Summary != "ok" || len(sum.ReferencedEvents) != 1 || !slices.Equal(revs(win), []int64{3, 4, 5, 6}) {
		t.Errorf("after success: summary %+v, window %v", sum, revs(win))
	}
	if len(*writes) != 1 || (*writes)[0].Trigger != "manual" {
		t.Errorf("commits = %+v", *writes)
	}
	if err := wait(t, New(Config{}).Compact(context.Background())); !errors.Is(err, ErrNoModel) {
		t.Errorf("Compact without a model = %v", err)
	}
	m2, _, _ := newMem(t, s, 50, 100000)
	if err := wait(t, m2.Compact(context.Background())); !errors.Is(err, ErrNothingToCompact) {
		t.Errorf("Compact of an empty window = %v", err)
	}
}

// A manual compaction asked for while one is in flight joins it.
func TestCompactJoinsInFlight(t *testing.T) {
	hold := make(chan struct{})
	s := &scripted{reply: []any{`{"mode":"append","summary_update":"x"}`}}
	chat := func(ctx context.Context, req openai.ChatRequest) (*openai.ChatResponse, error) {
		<-hold
		return s.chat(ctx, req)
	}
	m := New(Config{Window: 2, Chat: chat})
	for r := int64(1); r <= 5; r++ {
		m.Add(entry(r, "e"), false)
	}
	if !m.Maybe(context.Background(), 0) {
		t.Fatal("Maybe = false")
	}
	if !m.Compacting() {
		t.Error("Compacting = false while the call is held")
	}
	done := m.Compact(context.Background())
	close(hold)
	if err := wait(t, done); err != nil {
		t.Fatal(err)
	}
	if len(s.reqs) != 1 {
		t.Errorf("%d compaction calls; want 1", len(s.reqs))
	}
}

func TestStateRoundTrip(t *testing.T) {
	s := &scripted{reply: []any{`{"mode":"append","summary_update":"folded"}`}}
	m, _, _ := newMem(t, s, 2, 100000)
	m.Add(entry(1, "a"), false)
	m.Add(entry(2, "pinned"), true)
	for r := int64(3); r <= 8; r++ {
		m.Add(entry(r, "b"), false)
	}
	if err := wait(t, m.Compact(context.Background())); err != nil {
		t.Fatal(err)
	}
	st := m.State()
	raw, _ := json.Marshal(st)
	var back State
	json.Unmarshal(raw, &back)
	if back.FoldedThrough != 4 || !slices.Equal(back.Kept, []int64{2}) || back.Boundary != 2 || back.Summary.Summary != "folded" {
		t.Fatalf("State = %s", raw)
	}
	r := New(Config{Window: 50})
	r.Restore(back)
	for rev := int64(1); rev <= 8; rev++ {
		r.Add(entry(rev, "x"), false)
	}
	if sum, win := r.View(); sum.Summary != "folded" || !slices.Equal(revs(win), []int64{2, 5, 6, 7, 8}) {
		t.Errorf("restored: %q %v", sum.Summary, revs(win))
	}
}

func TestSearch(t *testing.T) {
	ev := func(rev int64, typ, lane, payload string) rpc.Event {
		return rpc.Event{Rev: rev, Type: typ, Lane: lane, Payload: json.RawMessage(payload), Hash: fmt.Sprintf("%02x%062x", rev, rev)}
	}
	log := []rpc.Event{
		ev(1, "UserMsg", "edge", `{"text":"Please refactor the Auth module"}`),
		ev(2, "ToolResultCommitted", "core", `{"job":"r","output":{"content":"package auth // login flow","status":"success"}}`),
		ev(3, "ModelOutput", "edge", `{"text":"done","tool_calls":[{"arguments":"{\"path\":\"auth/login.go\"}","id":"c","name":"choir_fs_read"}]}`),
	}
	tests := []struct {
		q       Query
		visible func(rpc.Event) bool
		want    []int64
		err     bool
	}{
		{Query{Text: "auth"}, nil, []int64{3, 2, 1}, false},
		{Query{Text: "AUTH login"}, nil, []int64{3, 2}, false},
		{Query{Text: "auth", Limit: 1}, nil, []int64{3}, false},
		{Query{Text: "auth"}, func(e rpc.Event) bool { return e.Type != "UserMsg" }, []int64{3, 2}, false},
		{Query{Text: "nothing"}, nil, nil, false},
		{Query{Mode: QueryHash, Text: ev(2, "", "", "").Hash[:10]}, nil, []int64{2}, false},
		{Query{Mode: QueryHash, Text: "xyz"}, nil, nil, true},
		{Query{Mode: "semantic", Text: "x"}, nil, nil, true},
		{Query{Text: " "}, nil, nil, true},
	}
	for _, tt := range tests {
		hits, err := Search(log, tt.q, tt.visible)
		var got []int64
		for _, h := range hits {
			got = append(got, h.Rev)
		}
		if (err != nil) != tt.err || !slices.Equal(got, tt.want) {
			t.Errorf("Search(%+v) = %v, %v; want %v (error %v)", tt.q, got, err, tt.want, tt.err)
		}
	}
	hits, _ := Search(log, Query{Text: "login"}, nil)
	if !strings.Contains(hits[0].Excerpt, "auth/login.go") {
		t.Errorf("excerpt = %q", hits[0].Excerpt)
	}
	hits, _ = Search(log, Query{Mode: QueryHash, Text: log[0].Hash}, nil)
	if len(hits) != 1 || string(hits[0].Payload) != string(log[0].Payload) {
		t.Errorf("hash hit = %+v", hits)
	}
}
