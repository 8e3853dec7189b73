package rpc

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// beats is a Client's heartbeat stream (heartbeats.go): opened at the
// first heartbeat and kept, each heartbeat a frame on it. A heartbeat goes
// as POST /rpc/HEARTBEAT instead when its body is over the stream's frame
// cap, while another heartbeat holds the stream, when the server serves
// no streams (404), for Retry-After when it refuses one more (429), and
// after Close.
type beats struct {
	turn   sync.Mutex // held by the heartbeat on the stream (TryLock)
	mu     sync.Mutex // guards the fields below
	line   *beatLine
	off    bool      // the server has no heartbeat streams
	later  time.Time // it refused one more (429): not before then
	closed bool
}

// beatLine is one open heartbeat stream.
type beatLine struct {
	pw     *io.PipeWriter // the request's body
	body   io.ReadCloser  // the answer's
	br     *bufio.Reader
	max    int // the frame cap the server announced
	cancel context.CancelFunc
	frame  []byte
	once   sync.Once
}

// maxAnswerFrame bounds an answer frame the client reads (an answer is a
// HeartbeatResp or an error, well under it).
const maxAnswerFrame = 1 << 20

// Heartbeat sends a heartbeat on the client's heartbeat stream, or as a
// POST (see beats).
func (c *Client) Heartbeat(ctx context.Context, req HeartbeatReq) (HeartbeatResp, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return HeartbeatResp{}, fmt.Errorf("rpc %s: encode: %w", VerbHeartbeat, err)
	}
	if resp, err, sent := c.beatOnStream(ctx, body); sent {
		return resp, err
	}
	return post[HeartbeatResp](ctx, c, VerbHeartbeat, body)
}

// beatOnStream sends a heartbeat on the stream, opening it if need be;
// sent is false when the heartbeat must go as a POST. A heartbeat that
// fails on a stream used before (which the server may have ended) is sent
// once more on a new one: a heartbeat sent twice is harmless (choird skips
// the events it holds).
func (c *Client) beatOnStream(ctx context.Context, body []byte) (HeartbeatResp, error, bool) {
	if !c.beats.turn.TryLock() {
		return HeartbeatResp{}, nil, false
	}
	defer c.beats.turn.Unlock()
	for retry := false; ; retry = true {
		l, fresh, err := c.beatLine(ctx)
		if err != nil {
			return HeartbeatResp{}, fmt.Errorf("rpc %s: %w", VerbHeartbeat, err), true
		}
		if l == nil || len(body) > l.max {
			return HeartbeatResp{}, nil, false
		}
		resp, err := l.beat(ctx, body)
		if err == nil {
			return resp, nil, true
		}
		var rerr *Error
		if errors.As(err, &rerr) {
			if rerr.Status == http.StatusUnauthorized {
				c.dropBeatLine(l) // the server ended the stream
			}
			return resp, fmt.Errorf("rpc %s: %w", VerbHeartbeat, err), true
		}
		c.dropBeatLine(l)
		if fresh || retry || ctx.Err() != nil {
			return resp, fmt.Errorf("rpc %s: %w", VerbHeartbeat, err), true
		}
	}
}

// beatLine returns the open stream, or opens one (fresh); nil without an
// error when heartbeats must go as POSTs.
func (c *Client) beatLine(ctx context.Context) (l *beatLine, fresh bool, err error) {
	c.beats.mu.Lock()
	l, off := c.beats.line, c.beats.off || c.beats.closed || time.Now().Before(c.beats.later)
	c.beats.mu.Unlock()
	if l != nil || off {
		return l, false, nil // off: l is nil
	}
	l, err = c.openBeatLine(ctx)
	var rerr *Error
	switch {
	case errors.As(err, &rerr) && (rerr.Status == http.StatusNotFound || rerr.Status == http.StatusMethodNotAllowed):
		c.beats.mu.Lock()
		c.beats.off = true
		c.beats.mu.Unlock()
		return nil, false, nil
	case errors.As(err, &rerr) && rerr.Status == http.StatusTooManyRequests:
		c.beats.mu.Lock()
		c.beats.later = time.Now().Add(max(rerr.RetryAfter, time.Second))
		c.beats.mu.Unlock()
		return nil, false, nil
	case err != nil:
		return nil, false, err
	}
	c.beats.mu.Lock()
	defer c.beats.mu.Unlock()
	if c.beats.closed {
		l.close()
		return nil, false, nil
	}
	c.beats.line = l
	return l, true, nil
}

// openBeatLine opens a heartbeat stream: POST /heartbeats, whose body is
// a pipe the heartbeats are written to, answered within ctx.
func (c *Client) openBeatLine(ctx context.Context) (*beatLine, error) {
	lctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	req, err := http.NewRequestWithContext(lctx, http.MethodPost, c.base+HeartbeatsPath, pr)
	if err != nil {
		cancel()
		return nil, err
	}
	c.envelope(req.Header)
	// The stream's connection ends with it; and a server that refuses
	// the stream without reading its body (as one that has no streams
	// does) answers at once rather than wait for the body to end first.
	req.Close = true
	// An open that fails after its connection is made leaves net/http's
	// write loop reading the body, the pipe, which nothing writes yet, and
	// Do waiting for that loop: only closing the pipe ends the wait. So a
	// cancelled heartbeat, or an open with no answer within
	// beatOpenTimeout, closes it.
	abort := func(why error) { cancel(); pr.CloseWithError(why) }
	stop := context.AfterFunc(ctx, func() { abort(ctx.Err()) })
	late := errors.New("no answer to " + HeartbeatsPath + " within " + beatOpenTimeout.String())
	timer := time.AfterFunc(beatOpenTimeout, func() { abort(late) })
	resp, err := c.beatHC.Do(req)
	inTime := timer.Stop()
	if notCancelled := stop(); (!notCancelled || !inTime) && err == nil {
		resp.Body.Close()
		err = ctx.Err()
		if !inTime && err == nil {
			err = late
		}
	}
	if err != nil {
		cancel()
		pw.Close()
		return nil, err
	}
	l := &beatLine{pw: pw, body: resp.Body, br: bufio.NewReader(resp.Body), cancel: cancel}
	if resp.StatusCode != http.StatusOK {
		rerr := decodeError(resp)
		l.close()
		return nil, rerr
	}
	l.max, err = strconv.Atoi(resp.Header.Get(HeaderFrameMax))
	if err != nil || l.max <= 0 {
		l.close()
		return nil, &Error{Status: http.StatusNotFound, Code: CodeNotFound, Message: "the answer to POST " + HeartbeatsPath + " is no heartbeat stream"}
	}
	return l, nil
}

// beatOpenTimeout bounds opening the heartbeat stream: choird answers its
// headers at once.
const beatOpenTimeout = 10 * time.Second

// dropBeatLine closes l and forgets it, if it is still the stream.
func (c *Client) dropBeatLine(l *beatLine) {
	c.beats.mu.Lock()
	if c.beats.line == l {
		c.beats.line = nil
	}
	c.beats.mu.Unlock()
	l.close()
}

// closeBeats ends the stream; later heartbeats go as POSTs.
func (c *Client) closeBeats() {
	c.beats.mu.Lock()
	l := c.beats.line
	c.beats.line, c.beats.closed = nil, true
	c.beats.mu.Unlock()
	if l != nil {
		l.close()
	}
}

func (l *beatLine) close() {
	l.once.Do(func() {
		l.cancel()
		l.pw.CloseWithError(errors.New("heartbeat stream closed"))
		l.body.Close()
	})
}

// beat writes one heartbeat frame and reads its answer, within ctx (whose
// end closes the stream).
func (l *beatLine) beat(ctx context.Context, body []byte) (HeartbeatResp, error) {
	var resp HeartbeatResp
	stop := context.AfterFunc(ctx, l.close)
	defer stop()
	l.frame = append(l.frame[:0], VerbHeartbeat...)
	l.frame = append(l.frame, ' ')
	l.frame = strconv.AppendInt(l.frame, int64(len(body)), 10)
	l.frame = append(l.frame, '\n')
	l.frame = append(l.frame, body...)
	status, data, retry, err := l.exchange()
	if err != nil {
		if ctx.Err() != nil {
			return resp, ctx.Err()
		}
		return resp, err
	}
	if status != http.StatusOK {
		e := errorFrom(status, data)
		e.RetryAfter = retry
		return resp, e
	}
	if err := json.Unmarshal(data, &resp); err != nil {
		return resp, fmt.Errorf("decode answer: %w", err)
	}
	return resp, nil
}

// exchange writes the frame and reads the answer frame.
func (l *beatLine) exchange() (status int, data []byte, retry time.Duration, err error) {
	if _, err := l.pw.Write(l.frame); err != nil {
		return 0, nil, 0, err
	}
	line, err := l.br.ReadSlice('\n')
	if err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return 0, nil, 0, fmt.Errorf("read the answer: %w", err)
	}
	f := strings.Fields(string(line))
	var n, secs int
	if len(f) == 3 {
		status, _ = strconv.Atoi(f[0])
		n, _ = strconv.Atoi(f[1])
		secs, _ = strconv.Atoi(f[2])
	}
	if status < 100 || status > 599 || n <= 0 || n > maxAnswerFrame || secs < 0 {
		return 0, nil, 0, fmt.Errorf("the answer's header %q is not \"<status> <length> <retry-after>\"", clip(string(line)))
	}
	data = make([]byte, n)
	if _, err := io.ReadFull(l.br, data); err != nil {
		return 0, nil, 0, fmt.Errorf("read the answer: %w", err)
	}
	return status, data, time.Duration(secs) * time.Second, nil
}
