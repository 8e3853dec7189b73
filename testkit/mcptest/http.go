package mcptest

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
)

// ServeHTTP serves the Streamable HTTP transport on any path: POST for the
// client's messages (JSON or, with SSE, an event stream per request), GET
// for the server's own stream (with GetStream, else 405), DELETE to end the
// session. With Sessions, initialize hands out "sess-N" and other requests
// must carry it: a missing id is 400, an unknown one 404.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.init()
	s.mu.Unlock()
	hdr := map[string]string{}
	for _, k := range []string{"Mcp-Session-Id", "Mcp-Protocol-Version", "Last-Event-Id", "Accept", "Authorization", "Content-Type"} {
		if v := r.Header.Get(k); v != "" {
			hdr[k] = v
		}
	}
	switch r.Method {
	case http.MethodGet:
		s.record(Message{HTTPMethod: "GET", Header: hdr})
		if !s.GetStream {
			http.Error(w, "no GET stream", http.StatusMethodNotAllowed)
			return
		}
		if !s.sessionOK(w, r) {
			return
		}
		s.serveGet(w, r)
	case http.MethodDelete:
		s.record(Message{HTTPMethod: "DELETE", Header: hdr})
		if !s.sessionOK(w, r) {
			return
		}
		s.mu.Lock()
		s.session = ""
		s.mu.Unlock()
		w.WriteHeader(http.StatusOK)
	case http.MethodPost:
		body, err := io.ReadAll(io.LimitReader(r.Body, 64<<20))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		m, err := parse(body)
		if err != nil {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			w.Write(errorResponse(nil, -32700, err.Error()))
			return
		}
		m.HTTPMethod, m.Header = "POST", hdr
		s.record(m)
		if m.Method == "initialize" && s.Sessions {
			s.mu.Lock()
			s.sessions++
			s.session = "sess-" + strconv.Itoa(s.sessions)
			w.Header().Set("Mcp-Session-Id", s.session)
			s.mu.Unlock()
		} else if !s.sessionOK(w, r) {
			return
		}
		if m.Method == "" || m.ID == nil {
			s.incoming(m)
			w.WriteHeader(http.StatusAccepted)
			return
		}
		if s.SSE {
			s.servePostStream(w, r, m)
			return
		}
		out := func(msg []byte) error {
			select {
			case s.getOut <- msg:
			default:
			}
			return nil
		}
		resp := s.handle(r.Context(), m, out)
		if resp == nil {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(resp)
	default:
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	}
}

// ExpireSession ends the current session: the next request carrying its
// id is answered 404.
func (s *Server) ExpireSession() {
	s.mu.Lock()
	s.session = ""
	s.mu.Unlock()
}

// Push queues a message for the GET stream.
func (s *Server) Push(method string, params any) {
	s.mu.Lock()
	s.init()
	s.mu.Unlock()
	s.getOut <- notification(method, params)
}

func (s *Server) sessionOK(w http.ResponseWriter, r *http.Request) bool {
	if !s.Sessions {
		return true
	}
	got := r.Header.Get("Mcp-Session-Id")
	s.mu.Lock()
	cur := s.session
	s.mu.Unlock()
	switch {
	case got == "":
		http.Error(w, "missing Mcp-Session-Id", http.StatusBadRequest)
		return false
	case got != cur:
		http.Error(w, "unknown session", http.StatusNotFound)
		return false
	}
	return true
}

// sseWriter writes numbered events on one response.
type sseWriter struct {
	mu     sync.Mutex
	w      http.ResponseWriter
	prefix string
	n      int
}

func (e *sseWriter) event(data []byte) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.n++
	_, err := fmt.Fprintf(e.w, "id: %s-%d\ndata: %s\n\n", e.prefix, e.n, data)
	if f, ok := e.w.(http.Flusher); ok {
		f.Flush()
	}
	return err
}

func (s *Server) servePostStream(w http.ResponseWriter, r *http.Request, m Message) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	e := &sseWriter{w: w, prefix: "post" + string(m.ID)}
	resp := s.handle(r.Context(), m, e.event)
	if resp != nil {
		e.event(resp)
	}
}

func (s *Server) serveGet(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	e := &sseWriter{w: w, prefix: "get"}
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	for {
		select {
		case msg := <-s.getOut:
			if e.event(msg) != nil {
				return
			}
		case <-ctx.Done():
			return
		}
	}
}
