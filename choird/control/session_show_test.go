package control

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"choir/internal/ctl"
)

// oneSession is a session log that holds one stopped session with a
// summary.
type oneSession struct{ recLog }

func (oneSession) Session(_ context.Context, id string) (*ctl.SessionDetail, error) {
	if id != "s-1" {
		return nil, nil
	}
	return &ctl.SessionDetail{SessionInfo: ctl.SessionInfo{SessionID: "s-1", AgentID: "agent-1", Status: "stopped"},
		EndReason: "shutdown requested: agent stop", Summary: json.RawMessage(`{"title":"Notes"}`)}, nil
}

// GET /v1/sessions/<id> answers the session with why it ended and its
// summary; an unknown id is a 404 that says where to find the ids.
func TestSessionShowRoute(t *testing.T) {
	p, _, rec, srv := hostileHome(t)
	p.SetSessions(oneSession{}, recSessions{rec})
	get := func(path string) (int, string) {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	code, body := get("/v1/sessions/s-1")
	var d ctl.SessionDetail
	if err := json.Unmarshal([]byte(body), &d); code != http.StatusOK || err != nil || string(d.Summary) != `{"title":"Notes"}` || d.EndReason == "" {
		t.Errorf("GET /v1/sessions/s-1 = %d %s; want the session with its summary", code, body)
	}
	if code, body := get("/v1/sessions/s-9"); code != http.StatusNotFound || !strings.Contains(body, `no session \"s-9\" (see choirctl session list)`) {
		t.Errorf("GET /v1/sessions/s-9 = %d %s; want 404 naming the session", code, body)
	}
}
