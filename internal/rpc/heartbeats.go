package rpc

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// Heartbeat streams (issue 19; the wire: doc.go). An idle agent's
// heartbeat is all the work choird does for it, and as a POST most of its
// cost was net/http's exchange (the headers read and written, a goroutine
// started to watch the connection, the timers set and reset, the wake-ups
// between them), not the heartbeat. On the stream a heartbeat costs a read
// and a write of one frame each; what is checked of it is what POST
// /rpc/HEARTBEAT checks (beat, then the verb's decoder and handler).

// HeartbeatsPath is the heartbeat stream's endpoint.
const HeartbeatsPath = "/heartbeats"

// HeaderFrameMax is the stream answer's header naming its frame cap.
const HeaderFrameMax = "X-Choir-Frame-Max"

// MaxHeartbeatFrame caps a heartbeat frame's body: an idle heartbeat is
// about 200 bytes, one with a few events a few KiB; a larger one (a
// backlog, a snapshot) is sent as POST /rpc/HEARTBEAT.
const MaxHeartbeatFrame = 64 << 10

// frameMax is the stream's frame cap.
func (s *Server) frameMax() int {
	return int(min(s.limits.MaxPayload, MaxHeartbeatFrame))
}

// serveHeartbeats serves a heartbeat stream of an authenticated session.
func (s *Server) serveHeartbeats(w http.ResponseWriter, r *http.Request, sess *session, sessionID string) {
	if r.Method != http.MethodPost {
		writeError(w, Errorf(http.StatusMethodNotAllowed, CodeMethod, "use POST %s", HeartbeatsPath))
		return
	}
	reqID, ok := requestID(w, r)
	if !ok {
		return
	}
	rc := http.NewResponseController(w)
	if err := rc.EnableFullDuplex(); err != nil { // ServeHTTP did
		writeError(w, Errorf(http.StatusInternalServerError, CodeInternal, "this connection cannot carry a heartbeat stream (%v): use POST /rpc/%s", err, VerbHeartbeat))
		return
	}
	if !s.openStream(w, &sess.beats, fmt.Sprintf("heartbeat streams, the limit: end one (its request body) before opening another, or send POST /rpc/%s", VerbHeartbeat)) {
		return
	}
	defer s.closeStream(&sess.beats)
	w.Header().Set("Content-Type", "application/x-choir-heartbeats")
	w.Header().Set(HeaderFrameMax, strconv.Itoa(s.frameMax()))
	w.WriteHeader(http.StatusOK)
	if rc.Flush() != nil {
		return
	}

	// The session's end, the listener's and choird's interrupt the read
	// the stream waits in; once the handler returns they must not touch
	// the connection. (The request's context ends with any read error,
	// a body's timeout too.)
	var mu sync.Mutex
	over, aborted := false, false
	abort := func() {
		mu.Lock()
		if !over {
			aborted = true
			rc.SetReadDeadline(time.Unix(1, 0))
		}
		mu.Unlock()
	}
	served := s.base // the listener's context: its end or choird's
	if ep, _ := r.Context().Value(endpointKey{}).(*endpoint); ep != nil {
		served = ep.ctx
	}
	stopServed := context.AfterFunc(served, abort)
	stopSess := context.AfterFunc(sess.ended, abort)
	defer func() {
		stopServed()
		stopSess()
		mu.Lock()
		over = true
		mu.Unlock()
		rc.SetWriteDeadline(time.Time{})
	}()

	bs := beatStream{s: s, w: w, rc: rc, sess: sess, sessionID: sessionID, call: s.verbs[VerbHeartbeat]}
	br := bufio.NewReader(r.Body)
	for n := 1; ; n++ {
		if s.limits.IdleTimeout > 0 {
			rc.SetReadDeadline(time.Now().Add(s.limits.IdleTimeout))
		}
		if served.Err() != nil || sess.ended.Err() != nil {
			return
		}
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			bs.answer(nil, Errorf(http.StatusBadRequest, CodeBadRequest, "heartbeat frame header longer than %d bytes: want \"HEARTBEAT <length>\\n\"", br.Size()))
			return
		}
		if err != nil {
			return // ended, idle, interrupted or broken
		}
		size, ferr := bs.header(line)
		if ferr != nil {
			bs.answer(nil, ferr)
			return
		}
		if br.Buffered() < size && s.limits.BodyTimeout > 0 {
			rc.SetReadDeadline(time.Now().Add(s.limits.BodyTimeout))
		}
		body := make([]byte, size)
		if _, err := io.ReadFull(br, body); err != nil {
			var nerr net.Error
			mu.Lock()
			slow := !aborted && errors.As(err, &nerr) && nerr.Timeout()
			mu.Unlock()
			if slow {
				bs.answer(nil, Errorf(http.StatusRequestTimeout, CodeBadRequest, "heartbeat body not received within %s", s.limits.BodyTimeout))
			}
			return
		}
		resp, rerr := bs.beat(r.Context(), reqID+"."+strconv.Itoa(n), body)
		if !bs.answer(resp, rerr) || rerr != nil && rerr.Status == http.StatusUnauthorized {
			return
		}
	}
}

// beatStream is one heartbeat stream being served.
type beatStream struct {
	s         *Server
	w         http.ResponseWriter
	rc        *http.ResponseController
	sess      *session
	sessionID string
	call      func(context.Context, []byte) (any, error)
	out       []byte // the answer frame being written
	start     time.Time
}

// header reads a frame's header line: the body's length, or the error
// that ends the stream.
func (bs *beatStream) header(line []byte) (int, *Error) {
	bs.start = time.Now()
	verb, length, ok := bytes.Cut(bytes.TrimSuffix(line, []byte("\n")), []byte(" "))
	size, digits := frameLength(length)
	switch {
	case !ok || !digits:
		return 0, Errorf(http.StatusBadRequest, CodeBadRequest, "heartbeat frame header %q is not \"HEARTBEAT <length>\\n\"", clip(string(line)))
	case string(verb) != string(VerbHeartbeat):
		return 0, Errorf(http.StatusNotFound, CodeUnknownVerb, "%q on a heartbeat stream: only HEARTBEAT travels on it; use POST /rpc/<VERB>", clip(string(verb)))
	case size > bs.s.frameMax():
		return 0, Errorf(http.StatusRequestEntityTooLarge, CodeTooLarge, "heartbeat of %d bytes is larger than %d bytes, the stream's frame cap: send it as POST /rpc/%s", size, bs.s.frameMax(), VerbHeartbeat)
	}
	return size, nil
}

// frameLength reads a frame's length: decimal digits, no sign, no
// leading zero, at most 9 of them.
func frameLength(b []byte) (int, bool) {
	if len(b) == 0 || len(b) > 9 || len(b) > 1 && b[0] == '0' {
		return 0, false
	}
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}

// beat answers one heartbeat as POST /rpc/HEARTBEAT would.
func (bs *beatStream) beat(ctx context.Context, reqID string, body []byte) (any, *Error) {
	if bs.sess.ended.Err() != nil {
		return nil, &Error{Status: http.StatusUnauthorized, Code: CodeUnauthorized}
	}
	if err := bs.s.take(bs.sess); err != nil {
		return nil, err
	}
	return bs.s.invoke(ctx, VerbHeartbeat, bs.call, body, bs.sessionID, reqID)
}

// answer writes a heartbeat's answer (resp, or rerr when it is not nil)
// within StreamWriteTimeout and tells Server.Observe; false when it could
// not be written.
func (bs *beatStream) answer(resp any, rerr *Error) bool {
	status, retry, v := http.StatusOK, 0, resp
	if rerr != nil {
		if rerr.Status == 0 {
			rerr.Status = http.StatusInternalServerError
		}
		status, retry, v = rerr.Status, int(rerr.RetryAfter/time.Second), errorBody{Error: rerr}
	}
	data, err := json.Marshal(v)
	if err != nil {
		status, data = http.StatusInternalServerError, []byte(`{"error":{"code":"internal","message":"the answer could not be encoded"}}`)
	}
	if obs := bs.s.Observe; obs != nil {
		code := "ok"
		if rerr != nil {
			code = rerr.Code
		}
		if bs.start.IsZero() {
			bs.start = time.Now()
		}
		obs(VerbHeartbeat, code, time.Since(bs.start))
	}
	out := strconv.AppendInt(bs.out[:0], int64(status), 10)
	out = append(out, ' ')
	out = strconv.AppendInt(out, int64(len(data)), 10)
	out = append(out, ' ')
	out = strconv.AppendInt(out, int64(retry), 10)
	out = append(out, '\n')
	out = append(out, data...)
	bs.out = out
	if t := bs.s.limits.StreamWriteTimeout; t > 0 {
		bs.rc.SetWriteDeadline(time.Now().Add(t))
	}
	if _, err := bs.w.Write(out); err != nil {
		return false
	}
	return bs.rc.Flush() == nil
}
