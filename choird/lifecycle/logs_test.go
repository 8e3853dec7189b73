package lifecycle

import (
	"context"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"choir/internal/docker"
	"choir/testkit"
)

// logEngine answers ContainerLogs from a script: a stream's text (the
// engine's stamped lines, then the end), or an error; past the script the
// container is gone.
type logEngine struct {
	*flakyEngine
	mu     sync.Mutex
	script []any // string or error
	since  []time.Time
}

func (d *logEngine) ContainerLogs(_ context.Context, id string, o docker.LogsOptions) (*docker.LogStream, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.since = append(d.since, o.Since)
	if !o.Timestamps {
		return nil, &docker.APIError{Status: 400, Message: "want timestamps"}
	}
	if len(d.script) == 0 {
		return nil, &docker.APIError{Status: 404, Message: "No such container: " + id}
	}
	next := d.script[0]
	d.script = d.script[1:]
	if err, ok := next.(error); ok {
		return nil, err
	}
	return docker.NewLogStream(io.NopCloser(strings.NewReader(next.(string))), true), nil
}

type bufferLogs struct {
	stubLogs
	buf *testkit.Buffer
}

func (l bufferLogs) AgentWriter(string) (io.Writer, error) { return l.buf, nil }

// The agent's log stream, cut when the engine stops answering, is opened
// again from the newest line's stamp once it answers: every line reaches
// the agent's log once, none is lost or doubled.
func TestAgentLogResumesAfterAnEngineOutage(t *testing.T) {
	t1, t2 := "2026-11-25T07:00:01.000000001Z", "2026-11-25T07:00:02.000000002Z"
	d := &logEngine{flakyEngine: newFlakyEngine(), script: []any{
		t1 + " line one\n" + t2 + " line two\n", // then the engine goes away
		errDead,
		t2 + " line two\n2026-11-25T07:00:03Z line three\n",
	}}
	m, _, r := faultManager(t, d, nil)
	buf := &testkit.Buffer{}
	m.Logs = bufferLogs{buf: buf}
	m.pumpLogs(r)
	got := buf.String()
	for _, line := range []string{"line one", "line two", "line three"} {
		if n := strings.Count(got, line); n != 1 {
			t.Errorf("%q is in the agent's log %d times; want once:\n%s", line, n, got)
		}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.since) < 3 || !d.since[0].IsZero() || d.since[2].Format(time.RFC3339Nano) != t2 {
		t.Errorf("the stream was opened since %v; want from the start, then from the newest line's stamp %s", d.since, t2)
	}
}
