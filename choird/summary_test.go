package main

import (
	"encoding/json"
	"testing"
	"time"

	"choir/choird/lifecycle"
	"choir/choird/store"
	"choir/internal/chain"
	"choir/internal/rpc"
)

// The summary a final heartbeat brings goes through the lifecycle's Store
// into Postgres with the batch, and the control plane's session log reads
// it back with why the session ended (what `choirctl session show`
// prints); an unknown session is none.
func TestSessionSummaryThroughTheStore(t *testing.T) {
	st, ctx := alphaStore(t)
	if _, err := st.CreateSession(ctx, store.NewSession{SessionID: "s1", AgentID: "alpha", LeaseID: "l", StartedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	e := rpc.Event{Rev: 1, Type: "UserMsg", Lane: "edge", Time: time.Now().UTC().Truncate(time.Microsecond), Payload: json.RawMessage(`{"text":"hi"}`)}
	e.Hash, _ = chain.Hash("", chain.Event(e))
	doc := json.RawMessage(`{"title":"Greeting","summary":"The user said hi.","decisions":[],"open_items":[],"facts":[]}`)
	if _, err := (sessionStore{st}).Replicate(ctx, "s1", lifecycle.Replication{Events: []rpc.Event{e}, Summary: doc}); err != nil {
		t.Fatal(err)
	}
	if err := (sessionStore{st}).EndSession(ctx, "s1", "stopped", "shutdown requested: agent stop"); err != nil {
		t.Fatal(err)
	}
	d, err := sessionLog{st}.Session(ctx, "s1")
	if err != nil || d == nil {
		t.Fatalf("Session(s1) = %+v, %v", d, err)
	}
	var got, want any
	json.Unmarshal(d.Summary, &got)
	json.Unmarshal(doc, &want)
	gb, _ := json.Marshal(got)
	wb, _ := json.Marshal(want)
	if string(gb) != string(wb) || d.EndReason != "shutdown requested: agent stop" || d.Status != "stopped" || d.AgentID != "alpha" {
		t.Errorf("Session(s1) = %+v (summary %s); want the stopped session with its summary %s", d, d.Summary, doc)
	}
	if d, err := (sessionLog{st}).Session(ctx, "nope"); d != nil || err != nil {
		t.Errorf("Session(nope) = %+v, %v; want none", d, err)
	}
}
