package docker

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"time"
)

// LogsOptions are the parameters of GET /containers/{id}/logs.
type LogsOptions struct {
	Stdout     bool // include stdout; with Stderr also false, both are included
	Stderr     bool
	Follow     bool      // keep the stream open and send new output until the container stops or ctx ends
	Timestamps bool      // prefix every line with an RFC 3339 timestamp
	Tail       string    // "" or "all": everything; "10": the last 10 lines
	Since      time.Time // only output after this time, when not zero
	Until      time.Time // only output before this time, when not zero
}

// LogStream is an open log stream. The caller must Close it.
type LogStream struct {
	// TTY tells how the stream is framed: a container with a TTY has one
	// raw stream; without one, stdout and stderr are multiplexed.
	TTY  bool
	body io.ReadCloser
}

// ContainerLogs opens the container's log stream. It inspects the container
// first, because under API 1.41 the response does not say whether it is
// multiplexed. Read it with Copy; close it when done.
func (c *Client) ContainerLogs(ctx context.Context, id string, opts LogsOptions) (*LogStream, error) {
	p, err := containerPath(id, "/logs")
	if err != nil {
		return nil, err
	}
	ctr, err := c.ContainerInspect(ctx, id)
	if err != nil {
		return nil, err
	}
	tty := ctr.Config != nil && ctr.Config.Tty
	q := logsQuery(opts)
	if !opts.Until.IsZero() {
		q.Set("until", unixString(opts.Until))
	}
	return c.logStream(ctx, p, q, tty)
}

// logsQuery is the query of a logs request for opts (both streams when
// neither is asked), shared by containers and services; until is the
// caller's.
func logsQuery(opts LogsOptions) url.Values {
	q := url.Values{}
	if !opts.Stdout && !opts.Stderr {
		opts.Stdout, opts.Stderr = true, true
	}
	q.Set("stdout", boolString(opts.Stdout))
	q.Set("stderr", boolString(opts.Stderr))
	if opts.Follow {
		q.Set("follow", "1")
	}
	if opts.Timestamps {
		q.Set("timestamps", "1")
	}
	if opts.Tail != "" {
		q.Set("tail", opts.Tail)
	}
	if !opts.Since.IsZero() {
		q.Set("since", unixString(opts.Since))
	}
	return q
}

// logStream sends a logs request and wraps its body; tty is what the
// inspected object says, which the answer's Content-Type (API 1.42+)
// overrides.
func (c *Client) logStream(ctx context.Context, p string, q url.Values, tty bool) (*LogStream, error) {
	resp, err := c.send(ctx, request{method: "GET", path: p, query: q})
	if err != nil {
		return nil, err
	}
	switch resp.Header.Get("Content-Type") {
	case "application/vnd.docker.multiplexed-stream":
		tty = false
	case "application/vnd.docker.raw-stream":
		tty = true
	}
	return &LogStream{TTY: tty, body: resp.Body}, nil
}

// Copy writes the stream's stdout to stdout and its stderr to stderr (a nil
// writer discards) until the stream ends. With a TTY everything is stdout.
func (s *LogStream) Copy(stdout, stderr io.Writer) error {
	if stdout == nil {
		stdout = io.Discard
	}
	if stderr == nil {
		stderr = io.Discard
	}
	if s.TTY {
		if _, err := io.Copy(stdout, s.body); err != nil {
			return fmt.Errorf("read container log: %w", err)
		}
		return nil
	}
	return Demux(s.body, stdout, stderr)
}

// NewLogStream wraps a log stream read elsewhere (an engine fake in a
// test): multiplexed unless tty.
func NewLogStream(body io.ReadCloser, tty bool) *LogStream {
	return &LogStream{TTY: tty, body: body}
}

// Close ends the stream and releases its connection.
func (s *LogStream) Close() error { return s.body.Close() }

func unixString(t time.Time) string {
	return fmt.Sprintf("%d.%09d", t.Unix(), t.Nanosecond())
}
