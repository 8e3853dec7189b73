// Package apitest holds what the pretend REST APIs of testkit
// (bravetest, notiontest, elevenlabstest) share: a listener that is never
// every interface, and the two faults no real server sends on purpose but
// every client must survive: a body that never ends and an answer that
// stops midway and hangs.
package apitest

import (
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
)

// Start serves h on addr ("127.0.0.1:0", or the Docker bridge gateway so
// that containers reach it) until the test ends. It refuses an unspecified
// host: a test server is never exposed on every interface. done is closed
// at cleanup, before the server closes, to release hanging handlers.
func Start(t testing.TB, addr string, h http.Handler) (srv *httptest.Server, done chan struct{}) {
	t.Helper()
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatalf("apitest: listen address %q: %v", addr, err)
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		t.Fatalf("apitest: refusing to listen on %q, every interface; name one address, e.g. 127.0.0.1:0 or the bridge gateway", addr)
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("apitest: listen on %s: %v", addr, err)
	}
	done = make(chan struct{})
	srv = &httptest.Server{Listener: l, Config: &http.Server{Handler: h}}
	srv.Start()
	t.Cleanup(func() {
		close(done)
		srv.CloseClientConnections()
		srv.Close()
	})
	return srv, done
}

// Endless answers status with contentType, writes head, then repeats chunk
// until the client goes away or done closes: a body that never ends.
func Endless(w http.ResponseWriter, r *http.Request, done <-chan struct{}, status int, contentType, head, chunk string) {
	w.Header().Set("Content-Type", contentType)
	w.WriteHeader(status)
	w.Write([]byte(head))
	f, _ := w.(http.Flusher)
	for {
		select {
		case <-r.Context().Done():
			return
		case <-done:
			return
		default:
		}
		if _, err := w.Write([]byte(chunk)); err != nil {
			return
		}
		if f != nil {
			f.Flush()
		}
	}
}

// Stall answers status with contentType, writes head, flushes, and then
// sends nothing more until the client goes away or done closes: a slow
// server the client's timeout must end.
func Stall(w http.ResponseWriter, r *http.Request, done <-chan struct{}, status int, contentType, head string) {
	w.Header().Set("Content-Type", contentType)
	w.WriteHeader(status)
	w.Write([]byte(head))
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
	select {
	case <-r.Context().Done():
	case <-done:
	}
}
