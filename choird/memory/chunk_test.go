package memory

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"choir/internal/rpc"
)

func ev(rev int64, typ, lane, payload string) rpc.Event {
	return rpc.Event{Rev: rev, Type: typ, Lane: lane, Payload: json.RawMessage(payload)}
}

// A session becomes chunks by turn, each citing the revisions it covers
// and the hash of its text; noise stays out; nothing passes the size.
func TestEventsChunkByTurn(t *testing.T) {
	long := strings.Repeat("tea ", 1200) // 4800 bytes
	evs := []rpc.Event{
		ev(1, "UserMsg", "edge", `{"id":"m1","text":"My cat is called Ada."}`),
		ev(2, "ModelOutput", "edge", `{"text":"","tool_calls":[{"id":"c1","name":"choir_fs_write","arguments":"{\"path\":\"pets.txt\"}"}]}`),
		ev(3, "ToolCallRequested", "edge", `{"id":"edge/2/0","tool":"choir.fs.write","input":{"path":"pets.txt"}}`),
		ev(4, "ToolCallCommitted", "edge", `{"id":"edge/2/0","tool":"choir.fs.write","locks":[]}`),
		ev(5, "ToolResultCommitted", "edge", `{"id":"edge/2/0","tool":"choir.fs.write","status":"success","output":{"status":"success","summary":"wrote pets.txt"}}`),
		ev(6, "ModelOutput", "edge", `{"text":"Noted: Ada."}`),
		ev(7, "ModelOutput", "edge", `{"text":"the model failed","error":"timeout"}`),
		ev(8, "UserMsg", "edge", `{"id":"m2","text":"`+long+`"}`),
		ev(9, "CoreStarted", "core", `{"job":"brew","job_id":"j1","start":{"job_name":"brew","task_spec":"make tea"}}`),
		ev(10, "ModelOutput", "core", `{"job":"brew","text":"Boiling water."}`),
		ev(11, "CoreStopped", "core", `{"job":"brew","job_id":"j1","state":"CORE_COMPLETED","final_result":{"summary":"tea made"}}`),
	}
	chunks := Events("s1", evs, 3)
	if len(chunks) < 4 {
		t.Fatalf("%d chunks: %+v", len(chunks), chunks)
	}
	first := chunks[0]
	if first.Index != 3 || first.Meta.FromRev != 1 || first.Meta.ToRev != 6 || first.Meta.SessionID != "s1" || first.Meta.Kind != KindEvents {
		t.Errorf("first chunk = %+v; want index 3, revisions 1-6", first)
	}
	for _, want := range []string{"User: My cat is called Ada.", "choir_fs_write", "Result of choir.fs.write (success)", "Assistant (edge): Noted: Ada."} {
		if !strings.Contains(first.Text, want) {
			t.Errorf("first chunk lacks %q:\n%s", want, first.Text)
		}
	}
	for _, c := range chunks {
		if len(c.Text) > MaxChunkBytes {
			t.Errorf("chunk %d is %d bytes; the limit is %d", c.Index, len(c.Text), MaxChunkBytes)
		}
		if c.Meta.Hash != Hash(c.Text) {
			t.Errorf("chunk %d's hash does not match its text", c.Index)
		}
		if strings.Contains(c.Text, "the model failed") || strings.Contains(c.Text, "ToolCallCommitted") {
			t.Errorf("chunk %d holds noise: %s", c.Index, c.Text)
		}
	}
	last := chunks[len(chunks)-1]
	if !strings.Contains(last.Text, "Core job brew started: make tea") || !strings.Contains(last.Text, "Core job brew completed: tea made") ||
		fmt.Sprint(last.Meta.Lanes) != "[core:brew]" || last.Meta.FromRev != 9 || last.Meta.ToRev != 11 {
		t.Errorf("the core job's chunk = %+v", last)
	}
	var teaBytes int
	for _, c := range chunks {
		teaBytes += strings.Count(c.Text, "tea ")
	}
	if teaBytes < 1199 {
		t.Errorf("the long message lost words when split: %d of 1200 'tea' left", teaBytes)
	}
}

func TestSummaryChunk(t *testing.T) {
	c, ok := Summary("s1", json.RawMessage(`{"title":"Pets","summary":"Talked about the cat.","decisions":[],"open_items":["Buy food"],"facts":["The cat is Ada"]}`), 7, 40)
	if !ok || c.Meta.Kind != KindSummary || c.Index != 7 || c.Meta.ToRev != 40 ||
		c.Text != "Session: Pets\nTalked about the cat.\nOpen items:\n- Buy food\nFacts:\n- The cat is Ada" {
		t.Errorf("Summary = %+v, %v", c, ok)
	}
	for _, bad := range []string{`{}`, `null`, `[1]`, `{"title":""}`} {
		if _, ok := Summary("s1", json.RawMessage(bad), 0, 0); ok {
			t.Errorf("Summary(%s) made a chunk", bad)
		}
	}
}
