package rpc

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"testing/iotest"
	"unicode/utf8"

	"choir/internal/jsonlimit"
	"choir/testkit"
)

// maxFuzzBody caps one fuzz input; the cap keeps every execution fast.
const maxFuzzBody = 64 << 10

// requestTypes returns a fresh request value for each verb, in Verbs order.
func requestTypes() []any {
	return []any{
		new(InitHelloReq), new(SecretReq), new(HeartbeatReq), new(ApprovalReq),
		new(StatusReq), new(TerminateReq), new(ConfigReq), new(HostToolReq),
	}
}

// FuzzDecodeStrict feeds arbitrary bodies to DecodeStrict, the request
// decoder of every verb, for each verb's request type. A refusal says what
// is wrong in the words the server answers with; anything that is not one
// JSON value of valid UTF-8 nested at most 2*jsonlimit.DefaultMaxDepth
// levels is refused; an accepted request re-encodes (as the agent's client
// sends it) to a body DecodeStrict accepts again, and encoding is a fixed
// point after one pass.
func FuzzDecodeStrict(f *testing.F) {
	f.Fuzz(func(t *testing.T, verb uint8, body []byte) {
		if len(body) > maxFuzzBody {
			return
		}
		types := requestTypes()
		req := types[int(verb)%len(types)]
		err := DecodeStrict(body, req)
		if err != nil {
			msg := err.Error()
			if !strings.HasPrefix(msg, "malformed JSON payload: ") && !strings.HasPrefix(msg, "refused JSON payload: ") &&
				!strings.HasPrefix(msg, "empty body") {
				t.Fatalf("DecodeStrict(%q) = %q; want a malformed-payload, refused-payload or empty-body error", body, msg)
			}
			return
		}
		if !json.Valid(body) {
			t.Fatalf("DecodeStrict accepted %q, which is not one JSON value", body)
		}
		if !utf8.Valid(body) || testkit.JSONNesting(body) > 2*jsonlimit.DefaultMaxDepth {
			t.Fatalf("DecodeStrict accepted %q: invalid UTF-8 or nested %d deep", body, testkit.JSONNesting(body))
		}
		out, err := json.Marshal(req)
		if err != nil {
			t.Fatalf("Marshal(%T decoded from %q) = %v", req, body, err)
		}
		again := requestTypes()[int(verb)%len(types)]
		if err := DecodeStrict(out, again); err != nil {
			t.Fatalf("DecodeStrict refuses the client's own encoding %s: %v", out, err)
		}
		if out2, _ := json.Marshal(again); !bytes.Equal(out, out2) {
			t.Fatalf("round trip changed the %T:\n%s\n%s", req, out, out2)
		}
	})
}

// readAll reads every event of an SSE stream until its first error.
func readAll(r io.Reader) ([]PushEvent, error) {
	s := &EventStream{body: io.NopCloser(r), r: bufio.NewReader(r)}
	var evs []PushEvent
	for {
		ev, err := s.Next()
		if err != nil {
			return evs, err
		}
		evs = append(evs, ev)
	}
}

// FuzzEventStream feeds arbitrary bytes to EventStream.Next, the client's
// reader of the id:/event:/data: lines of GET /events, and checks:
//
//   - every stream ends (io.EOF or an error) with at most one event per
//     blank line, none empty, no field spanning lines, and no more data than
//     was sent;
//   - the events do not depend on how the bytes arrive (all at once or one
//     byte per read);
//   - what the server writes (writeSSE) reads back as written: the id and
//     type trimmed, the data compacted, two events in a row kept apart.
func FuzzEventStream(f *testing.F) {
	f.Fuzz(func(t *testing.T, raw []byte, id, typ string, data []byte) {
		if len(raw) > maxFuzzBody || len(data) > maxFuzzBody {
			return
		}
		evs, err := readAll(bytes.NewReader(raw))
		if err == nil {
			t.Fatal("Next ended without an error")
		}
		if n := bytes.Count(raw, []byte("\n")); len(evs) > n {
			t.Fatalf("%d events from a stream of %d lines", len(evs), n)
		}
		total := 0
		for _, ev := range evs {
			if ev.Type == "" && len(ev.Data) == 0 {
				t.Fatalf("empty event %+v", ev)
			}
			if strings.ContainsAny(ev.ID+ev.Type, "\n") {
				t.Fatalf("event %+v spans lines", ev)
			}
			total += len(ev.Data)
		}
		if total > len(raw) {
			t.Fatalf("%d bytes of data from a %d-byte stream", total, len(raw))
		}
		slow, slowErr := readAll(iotest.OneByteReader(bytes.NewReader(raw)))
		if len(slow) != len(evs) || (slowErr == io.EOF) != (err == io.EOF) {
			t.Fatalf("one byte per read gives %d events (%v); all at once %d (%v)", len(slow), slowErr, len(evs), err)
		}
		for i := range evs {
			if slow[i].ID != evs[i].ID || slow[i].Type != evs[i].Type || !bytes.Equal(slow[i].Data, evs[i].Data) {
				t.Fatalf("event %d differs by read size: %+v / %+v", i, slow[i], evs[i])
			}
		}

		// The server's side: ids are numbers and types are names, never
		// more than one line.
		if strings.ContainsAny(id+typ, "\r\n") {
			return
		}
		var w bytes.Buffer
		sent := PushEvent{ID: id, Type: typ, Data: data}
		writeSSE(&w, sent)
		writeSSE(&w, PushEvent{ID: "2", Type: "next", Data: json.RawMessage(`{}`)})
		got, err := readAll(&w)
		if err != io.EOF || len(got) != 2 {
			t.Fatalf("reading back %+v: %d events, %v; want 2 and io.EOF", sent, len(got), err)
		}
		want := PushEvent{ID: strings.TrimSpace(id), Type: strings.TrimSpace(typ), Data: compact(data)}
		if got[0].ID != want.ID || got[0].Type != want.Type || !bytes.Equal(got[0].Data, want.Data) {
			t.Fatalf("wrote %+v; read %+v, want %+v", sent, got[0], want)
		}
		if got[1].ID != "2" || got[1].Type != "next" || string(got[1].Data) != "{}" {
			t.Fatalf("the second event read as %+v", got[1])
		}
	})
}
