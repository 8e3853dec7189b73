package rpc

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// summaryOfSize is a session summary object of exactly n bytes.
func summaryOfSize(n int) json.RawMessage {
	return json.RawMessage(`{"summary":"` + strings.Repeat("s", n-len(`{"summary":""}`)) + `"}`)
}

// TestHeartbeatSummaryBounds: a final heartbeat's session summary (§11.8)
// is served up to MaxSummaryBytes when it is a JSON object; one over the
// bound, one that is not an object, or one on a heartbeat that is not final
// is a 400 naming the field, and never reaches the handler.
func TestHeartbeatSummaryBounds(t *testing.T) {
	h := &fakeHandler{}
	limits := DefaultLimits()
	limits.Rate, limits.Burst = 1e9, 1e9
	srv := NewServer(h, limits, quietLogger())
	srv.Open("s1", "a1", "t1")
	for _, ok := range []HeartbeatReq{
		{Final: true, Summary: summaryOfSize(MaxSummaryBytes)},
		{Final: true, Summary: json.RawMessage(`{"title":"t","summary":"s","decisions":[],"open_items":[],"facts":[]}`)},
		{Final: true}, // a final heartbeat without a summary (it timed out)
	} {
		if st, body := callVerb(t, srv, VerbHeartbeat, mustJSON(ok)); st != http.StatusOK {
			t.Errorf("heartbeat with a %d-byte summary: %d %s; want 200", len(ok.Summary), st, body)
		}
	}
	h.mu.Lock()
	served := len(h.calls)
	h.mu.Unlock()

	for _, tc := range []struct {
		name string
		req  HeartbeatReq
		want string
	}{
		{"one byte over", HeartbeatReq{Final: true, Summary: summaryOfSize(MaxSummaryBytes + 1)}, "summary is 65537 bytes; the limit is 65536 bytes"},
		{"far over", HeartbeatReq{Final: true, Summary: summaryOfSize(2 * MaxSummaryBytes)}, "summary is 131072 bytes"},
		{"not final", HeartbeatReq{Summary: json.RawMessage(`{"title":"t"}`)}, "summary: only the final heartbeat"},
		{"an array", HeartbeatReq{Final: true, Summary: json.RawMessage(`["a","b"]`)}, "summary is not a JSON object"},
		{"a string", HeartbeatReq{Final: true, Summary: json.RawMessage(`"text"`)}, "summary is not a JSON object"},
		{"null", HeartbeatReq{Final: true, Summary: json.RawMessage(`null`)}, ""}, // omitted: no summary
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, body := callVerb(t, srv, VerbHeartbeat, mustJSON(tc.req))
			if tc.want == "" {
				if st != http.StatusOK {
					t.Errorf("%s: %d %s; want 200 (no summary)", tc.name, st, body)
				}
				served++
				return
			}
			if st != http.StatusBadRequest || !strings.Contains(body, tc.want) {
				t.Errorf("%s: %d %s; want 400 containing %q", tc.name, st, body, tc.want)
			}
		})
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.calls) != served {
		t.Errorf("the handler served %d heartbeats; want %d (refused ones never reach it)", len(h.calls), served)
	}
}
