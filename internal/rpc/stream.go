package rpc

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"time"
)

// EventStream reads server-sent events from GET /events.
type EventStream struct {
	body io.ReadCloser
	r    *bufio.Reader
}

// Events opens the push stream, resuming after lastEventID when it is set.
func (c *Client) Events(ctx context.Context, lastEventID string) (*EventStream, error) {
	hdr := http.Header{"Accept": {"text/event-stream"}}
	if lastEventID != "" {
		hdr.Set("Last-Event-ID", lastEventID)
	}
	resp, err := c.do(ctx, http.MethodGet, "/events", nil, hdr)
	if err != nil {
		return nil, err
	}
	return &EventStream{body: resp.Body, r: bufio.NewReader(resp.Body)}, nil
}

// Next returns the next event; io.EOF when the server ended the stream.
func (s *EventStream) Next() (PushEvent, error) {
	var ev PushEvent
	var data strings.Builder
	for {
		line, err := s.r.ReadString('\n')
		if err != nil {
			if err == io.EOF && line == "" {
				return ev, io.EOF
			}
			return ev, err
		}
		line = strings.TrimRight(line, "\r\n")
		switch {
		case line == "":
			if ev.Type == "" && data.Len() == 0 {
				continue // a comment-only block
			}
			ev.Data = json.RawMessage(data.String())
			return ev, nil
		case strings.HasPrefix(line, ":"):
			// comment (keepalive)
		case strings.HasPrefix(line, "id:"):
			ev.ID = strings.TrimSpace(line[3:])
		case strings.HasPrefix(line, "event:"):
			ev.Type = strings.TrimSpace(line[6:])
		case strings.HasPrefix(line, "data:"):
			if data.Len() > 0 {
				data.WriteByte('\n')
			}
			data.WriteString(strings.TrimPrefix(line[5:], " "))
		}
	}
}

// Close ends the stream.
func (s *EventStream) Close() error { return s.body.Close() }

// Follow delivers push events to handle until ctx ends or the session is
// closed (401), reconnecting with Last-Event-ID after transient failures so
// that no kept event is lost. When the server refuses the Last-Event-ID (400:
// beyond its newest event, as after its event log restarted), Follow
// delivers a gap event and starts over without it. Events are delivered in
// order, each once per connection; a handler that must be idempotent across
// choird restarts deduplicates by the event's payload id.
func Follow(ctx context.Context, c ControlPlane, handle func(PushEvent)) error {
	last := ""
	backoff := 100 * time.Millisecond
	for {
		s, err := c.Events(ctx, last)
		if err == nil {
			backoff = 100 * time.Millisecond
			for {
				ev, err := s.Next()
				if err != nil {
					break
				}
				if ev.ID != "" {
					last = ev.ID
				}
				handle(ev)
			}
			s.Close()
		} else {
			var rerr *Error
			if errors.As(err, &rerr) && rerr.Status == http.StatusUnauthorized {
				return err
			}
			if errors.As(err, &rerr) && rerr.Status == http.StatusBadRequest && last != "" {
				// The server no longer knows our last event (its log
				// restarted): start over, and resynchronise like a gap.
				last = ""
				handle(PushEvent{Type: EventGap, Data: json.RawMessage(`{}`)})
			}
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		jitter := time.Duration(rand.Int64N(int64(backoff) / 2))
		t := time.NewTimer(backoff + jitter)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		backoff = min(backoff*2, 5*time.Second)
	}
}
