package browsertest

import (
	"fmt"
	"html"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// Site serves the pages the browser tests read:
//
//	/hello              a short page whose text is HelloText
//	/links              LinkCount links (/page/0 ... /page/N-1)
//	/form               an input and a button; clicking copies the input into #out
//	/cookie/set?v=X     sets the cookie choir=X
//	/cookie/show        shows the request's cookies (or "no cookies")
//	/storage/set?v=X    stores X in localStorage under "choir"
//	/storage/show       shows localStorage's "choir" (or "no storage")
//	/slow               answers in SlowParts parts, SlowGap apart
//	/huge               HugeBytes of text
//	/never              sends the start of a page, then nothing until the test ends
type Site struct {
	URL     string // http://host:port, no trailing slash
	srv     *http.Server
	stopped chan struct{}
}

// Page contents the tests look for.
const (
	HelloText = "Choir reads this sentence from a loopback page."
	LinkCount = 300
	SlowParts = 3
	SlowGap   = 300 * time.Millisecond
	HugeBytes = 8 << 20
)

// Serve starts a Site on host (127.0.0.1 for tests in this process; the
// bridge gateway for a container's browser calls, which run on the host
// anyway) and stops it when the test ends.
func Serve(t testing.TB, host string) *Site {
	t.Helper()
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		t.Fatalf("listen on %s: %v", host, err)
	}
	s := &Site{URL: "http://" + l.Addr().String(), stopped: make(chan struct{})}
	s.srv = &http.Server{Handler: s.mux(), ReadHeaderTimeout: 10 * time.Second}
	go s.srv.Serve(l)
	t.Cleanup(func() {
		close(s.stopped)
		s.srv.Close()
	})
	return s
}

func page(w http.ResponseWriter, title, body string) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	fmt.Fprintf(w, "<!doctype html><html><head><title>%s</title></head><body>%s</body></html>", html.EscapeString(title), body)
}

func (s *Site) mux() http.Handler {
	m := http.NewServeMux()
	m.HandleFunc("/hello", func(w http.ResponseWriter, r *http.Request) {
		page(w, "Hello", "<h1>Greeting</h1><p>"+HelloText+"</p><script>document.title='Hello page'</script>")
	})
	m.HandleFunc("/links", func(w http.ResponseWriter, r *http.Request) {
		var b strings.Builder
		for i := range LinkCount {
			fmt.Fprintf(&b, "<a href=\"/page/%d\">Page number %d</a><br>", i, i)
		}
		page(w, "Links", b.String())
	})
	m.HandleFunc("/page/", func(w http.ResponseWriter, r *http.Request) {
		page(w, "Page", "<p>This is "+html.EscapeString(r.URL.Path)+"</p>")
	})
	m.HandleFunc("/form", func(w http.ResponseWriter, r *http.Request) {
		page(w, "Form", `<input id="name"><button id="go" onclick="setTimeout(()=>{const d=document.createElement('div');d.id='out';d.textContent='Hello, '+document.getElementById('name').value+'!';document.body.appendChild(d)},50)">Go</button>`)
	})
	m.HandleFunc("/cookie/set", func(w http.ResponseWriter, r *http.Request) {
		http.SetCookie(w, &http.Cookie{Name: "choir", Value: r.URL.Query().Get("v"), Path: "/"})
		page(w, "Cookie set", "<p>cookie set</p>")
	})
	m.HandleFunc("/cookie/show", func(w http.ResponseWriter, r *http.Request) {
		var parts []string
		for _, c := range r.Cookies() {
			parts = append(parts, c.Name+"="+c.Value)
		}
		if len(parts) == 0 {
			parts = []string{"no cookies"}
		}
		page(w, "Cookies", "<p>"+html.EscapeString(strings.Join(parts, "; "))+"</p>")
	})
	m.HandleFunc("/storage/set", func(w http.ResponseWriter, r *http.Request) {
		v := strings.NewReplacer(`\`, `\\`, `'`, `\'`, "<", "").Replace(r.URL.Query().Get("v"))
		page(w, "Storage set", "<p id='p'>storing</p><script>localStorage.setItem('choir','"+v+"');document.getElementById('p').textContent='stored'</script>")
	})
	m.HandleFunc("/storage/show", func(w http.ResponseWriter, r *http.Request) {
		page(w, "Storage", "<p id='p'></p><script>document.getElementById('p').textContent=localStorage.getItem('choir')||'no storage'</script>")
	})
	m.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, "<!doctype html><html><head><title>Slow</title></head><body>")
		for i := range SlowParts {
			w.(http.Flusher).Flush()
			select {
			case <-time.After(SlowGap): // the page's own slowness, not a test's wait
			case <-r.Context().Done():
				return
			}
			fmt.Fprintf(w, "<p>slow part %d</p>", i+1)
		}
		fmt.Fprint(w, "</body></html>")
	})
	m.HandleFunc("/huge", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, "<!doctype html><html><head><title>Huge</title></head><body><p>")
		line := strings.Repeat("huge page text ", 64) + "\n"
		for n := 0; n < HugeBytes; n += len(line) {
			if _, err := fmt.Fprint(w, line); err != nil {
				return
			}
		}
		fmt.Fprint(w, "</p></body></html>")
	})
	m.HandleFunc("/never", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, "<!doctype html><html><head><title>Never")
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
		case <-s.stopped:
		}
	})
	return m
}
