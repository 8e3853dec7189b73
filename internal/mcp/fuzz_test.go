package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"testing/iotest"

	"choir/internal/jsonlimit"
)

// maxFuzzInput caps one fuzz input so every execution is fast.
const maxFuzzInput = 64 << 10

func readEvents(r io.Reader, max int) ([]sseEvent, error) {
	sr := newSSEReader(r, max)
	var out []sseEvent
	for {
		ev, err := sr.next()
		if err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				err = nil
			}
			return out, err
		}
		out = append(out, ev)
	}
}

func encodeEvents(evs []sseEvent) []byte {
	var b bytes.Buffer
	for _, ev := range evs {
		if ev.hasID {
			fmt.Fprintf(&b, "id: %s\n", ev.id)
		}
		if ev.event != "" {
			fmt.Fprintf(&b, "event: %s\n", ev.event)
		}
		if ev.retry > 0 {
			fmt.Fprintf(&b, "retry: %d\n", ev.retry.Milliseconds())
		}
		if len(ev.data) > 0 {
			for _, line := range strings.Split(string(ev.data), "\n") {
				fmt.Fprintf(&b, "data: %s\n", line)
			}
		}
		b.WriteString("\n")
	}
	return b.Bytes()
}

// FuzzSSE reads arbitrary bytes as an SSE stream. No event is larger than
// the limit; the events read are the same whether the stream arrives whole
// or a byte at a time; written out again (id, event, retry, data lines)
// they read back the same.
func FuzzSSE(f *testing.F) {
	for _, s := range []string{
		"id: 1\nretry: 500\ndata: \n\n",
		"event: message\nid: e-2\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n",
		": comment\r\ndata: a\r\ndata: b\r\n\r\n",
		"data:no space\n\nid\n\nretry: x\n\n",
		"data: unterminated",
	} {
		f.Add([]byte(s), uint16(64))
	}
	f.Fuzz(func(t *testing.T, stream []byte, max uint16) {
		if len(stream) > maxFuzzInput {
			return
		}
		limit := int(max)%4096 + 1
		whole, errWhole := readEvents(bytes.NewReader(stream), limit)
		bytewise, errByte := readEvents(iotest.OneByteReader(bytes.NewReader(stream)), limit)
		if (errWhole == nil) != (errByte == nil) || len(whole) != len(bytewise) {
			t.Fatalf("whole read %d events (%v), bytewise %d (%v)", len(whole), errWhole, len(bytewise), errByte)
		}
		for i := range whole {
			if !sameEvent(whole[i], bytewise[i]) {
				t.Fatalf("event %d: whole %+v, bytewise %+v", i, whole[i], bytewise[i])
			}
		}
		for _, ev := range whole {
			if len(ev.data) > limit+64 {
				t.Fatalf("event data of %d bytes passed the limit of %d", len(ev.data), limit)
			}
		}
		if errWhole != nil {
			return
		}
		again, err := readEvents(bytes.NewReader(encodeEvents(whole)), 1<<20)
		if err != nil {
			t.Fatalf("re-encoded events do not read back: %v", err)
		}
		if len(again) != len(whole) {
			t.Fatalf("re-encoded %d events read back as %d", len(whole), len(again))
		}
		for i := range whole {
			if !sameEvent(whole[i], again[i]) {
				t.Fatalf("event %d: %+v read back as %+v", i, whole[i], again[i])
			}
		}
	})
}

func sameEvent(a, b sseEvent) bool {
	return a.id == b.id && a.hasID == b.hasID && a.event == b.event && a.retry == b.retry && bytes.Equal(a.data, b.data)
}

// nullTransport is a transport that sends nowhere, for feeding receive.
type nullTransport struct{}

func (nullTransport) String() string                            { return "null" }
func (nullTransport) start(context.Context, sink, limits) error { return nil }
func (nullTransport) send(context.Context, outgoing) error      { return nil }
func (nullTransport) negotiated(string)                         {}
func (nullTransport) opened(context.Context)                    {}
func (nullTransport) abandon(string)                            {}
func (nullTransport) close() error                              { return nil }

var _ Transport = nullTransport{}

// FuzzReceive hands arbitrary server output to the client's dispatcher
// while request 1 waits: it never panics, and an answer it takes is read
// from valid JSON. Then a well-formed response to request 1 carrying res
// as its result (when res is one JSON value within jsonlimit's rules) is
// taken as exactly that result.
func FuzzReceive(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}`,
		`{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"no"}}`,
		`[{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":1}},{"jsonrpc":"2.0","id":1,"result":{}}]`,
		`{"jsonrpc":"2.0","id":"srv-1","method":"ping"}`,
		`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":0.5}}`,
		`not json at all`,
	} {
		f.Add([]byte(s), []byte(`{"content":[{"type":"text","text":"x"}]}`))
	}
	f.Fuzz(func(t *testing.T, data, res []byte) {
		if len(data) > maxFuzzInput || len(res) > maxFuzzInput {
			return
		}
		c := newFuzzClient()
		defer c.stop()
		ch := c.wait("1")
		c.receive(data)
		select {
		case r := <-ch:
			if !json.Valid(bytes.TrimSpace(data)) {
				t.Fatalf("receive(%q) answered request 1 from input that is not JSON", data)
			}
			if r.err == nil && !json.Valid(r.raw) {
				t.Fatalf("receive(%q) answered with %q, not JSON", data, r.raw)
			}
		default:
		}

		res = bytes.TrimSpace(res)
		if !json.Valid(res) || string(res) == "null" || jsonlimit.Check(res, jsonlimit.Limits{MaxDepth: jsonlimit.DefaultMaxDepth - 1}) != nil {
			return
		}
		c2 := newFuzzClient()
		defer c2.stop()
		ch2 := c2.wait("1")
		c2.receive([]byte(`{"jsonrpc":"2.0","id":1,"result":` + string(res) + `}`))
		select {
		case r := <-ch2:
			if r.err != nil || !bytes.Equal(r.raw, res) {
				t.Fatalf("response with result %q answered %q, %v", res, r.raw, r.err)
			}
		default:
			t.Fatalf("response with result %q left request 1 waiting", res)
		}
	})
}

func newFuzzClient() *Client {
	c := &Client{
		t: nullTransport{}, log: slog.New(slog.DiscardHandler), pending: map[string]chan result{},
		progress: map[string]func(Progress){}, serverReqs: map[string]context.CancelFunc{}, done: make(chan struct{}),
		opts: Options{OnLog: func(LogMessage) {}, OnNotification: func(string, json.RawMessage) {}},
	}
	c.baseCtx, c.stop = context.WithCancel(context.Background())
	return c
}

func (c *Client) wait(id string) chan result {
	ch := make(chan result, 1)
	c.pending[id] = ch
	c.progress[id] = func(Progress) {}
	return ch
}
