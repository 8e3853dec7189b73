package browser

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"choir/testkit/browsertest"
)

// newWorker returns a worker on the test's driver and Chromium whose
// agents' workspaces are directories of the test's, made on demand.
func newWorker(t testing.TB) (*Worker, string) {
	t.Helper()
	in := browsertest.Find(t)
	root := t.TempDir()
	w := New(Options{
		DriverDir: in.DriverDir, Executable: in.Executable, StateDir: t.TempDir(),
		Workspace: func(agentID string) (string, error) {
			ws := filepath.Join(root, agentID)
			return ws, os.MkdirAll(filepath.Join(ws, SendDir), 0o755)
		},
	})
	t.Cleanup(w.Stop)
	return w, root
}

// browse runs one call and decodes its result.
func browse(t testing.TB, w *Worker, agent string, input string) (map[string]any, error) {
	t.Helper()
	out, err := w.Browse(context.Background(), agent, "s-"+agent, json.RawMessage(input))
	if err != nil {
		return nil, err
	}
	var res map[string]any
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("Browse answered %s: %v", out, err)
	}
	return res, nil
}

func mustBrowse(t testing.TB, w *Worker, agent, input string) map[string]any {
	t.Helper()
	res, err := browse(t, w, agent, input)
	if err != nil {
		t.Fatalf("Browse(%s, %s) = %v", agent, input, err)
	}
	return res
}

func code(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return "not a *browser.Error: " + err.Error()
}

func TestBrowseReadsALoopbackPage(t *testing.T) {
	w, _ := newWorker(t)
	site := browsertest.Serve(t, "127.0.0.1")

	t.Run("text", func(t *testing.T) {
		res := mustBrowse(t, w, "alpha", `{"url":"`+site.URL+`/hello"}`)
		if text, _ := res["text"].(string); !strings.Contains(text, browsertest.HelloText) {
			t.Errorf("text = %q; want it to hold %q", text, browsertest.HelloText)
		}
		if res["title"] != "Hello page" || res["http_status"] != 200.0 || res["truncated"] != false || res["url"] != site.URL+"/hello" {
			t.Errorf("result = %v; want title Hello page, http_status 200, truncated false, url %s/hello", res, site.URL)
		}
	})
	t.Run("the tab keeps its page", func(t *testing.T) {
		res := mustBrowse(t, w, "alpha", `{"mode":"text"}`)
		if text, _ := res["text"].(string); !strings.Contains(text, browsertest.HelloText) {
			t.Errorf("reading the open tab without a url: text = %q", text)
		}
	})
	t.Run("links", func(t *testing.T) {
		res := mustBrowse(t, w, "alpha", `{"url":"`+site.URL+`/links","mode":"links","tab":"second"}`)
		links, _ := res["links"].([]any)
		if len(links) != MaxLinks || res["truncated"] != true || res["links_total"] != float64(browsertest.LinkCount) {
			t.Fatalf("links: %d links, truncated %v, total %v; want %d, true, %d", len(links), res["truncated"], res["links_total"], MaxLinks, browsertest.LinkCount)
		}
		first := links[0].(map[string]any)
		if first["text"] != "Page number 0" || first["href"] != site.URL+"/page/0" {
			t.Errorf("first link = %v; want Page number 0 → %s/page/0 (absolute)", first, site.URL)
		}
		if !strings.Contains(res["summary"].(string), "of 300 links") {
			t.Errorf("summary = %q; want it to say the links were cut", res["summary"])
		}
	})
	t.Run("actions", func(t *testing.T) {
		res := mustBrowse(t, w, "alpha", `{"url":"`+site.URL+`/form","actions":[`+
			`{"type":"fill","selector":"#name","value":"Ada"},{"type":"click","selector":"#go"},{"type":"wait","selector":"#out"}]}`)
		if text, _ := res["text"].(string); !strings.Contains(text, "Hello, Ada!") {
			t.Errorf("after fill, click and wait, text = %q; want Hello, Ada!", text)
		}
	})
	t.Run("an action that cannot happen", func(t *testing.T) {
		_, err := browse(t, w, "alpha", `{"url":"`+site.URL+`/form","timeout_ms":1500,"actions":[{"type":"click","selector":"#missing"}]}`)
		if err == nil || (code(err) != CodeTimeout && code(err) != CodeAction) || !strings.Contains(err.Error(), `action 0 (click "#missing")`) {
			t.Errorf("click on a missing element = %v; want a timeout naming action 0", err)
		}
	})
	t.Run("close", func(t *testing.T) {
		mustBrowse(t, w, "alpha", `{"mode":"close","tab":"second"}`)
		_, err := browse(t, w, "alpha", `{"tab":"second"}`)
		if code(err) != CodeNotFound || !strings.Contains(err.Error(), "open tabs: main") {
			t.Errorf("reading a closed tab = %v; want not_found naming the open tabs", err)
		}
	})
}

func TestScreenshotLandsInTheAgentsSendDir(t *testing.T) {
	w, root := newWorker(t)
	site := browsertest.Serve(t, "127.0.0.1")
	res := mustBrowse(t, w, "alpha", `{"url":"`+site.URL+`/hello","mode":"screenshot"}`)
	rel, _ := res["screenshot"].(string)
	if !strings.HasPrefix(rel, SendDir+"/browse-main-") || !strings.HasSuffix(rel, ".png") {
		t.Fatalf("screenshot = %q; want %s/browse-main-….png", rel, SendDir)
	}
	b, err := os.ReadFile(filepath.Join(root, "alpha", rel))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")) || float64(len(b)) != res["bytes"] {
		t.Errorf("the file is %d bytes starting %q; want a PNG of %v bytes", len(b), b[:min(8, len(b))], res["bytes"])
	}
	if !strings.Contains(res["summary"].(string), rel) {
		t.Errorf("summary = %q; want it to name %s", res["summary"], rel)
	}
	ents, _ := os.ReadDir(filepath.Join(root, "alpha", SendDir))
	if len(ents) != 1 {
		t.Errorf("send/ holds %d files; want only the screenshot (no temporary file left)", len(ents))
	}

	t.Run("a send dir that is a symlink out of the workspace", func(t *testing.T) {
		ws := filepath.Join(root, "mallory")
		outside := t.TempDir()
		os.MkdirAll(filepath.Join(ws, ".choirtmp"), 0o755)
		if err := os.Symlink(outside, filepath.Join(ws, SendDir)); err != nil {
			t.Fatal(err)
		}
		w2 := New(Options{DriverDir: w.opts.DriverDir, Executable: w.opts.Executable, StateDir: t.TempDir(),
			Workspace: func(string) (string, error) { return ws, nil }})
		defer w2.Stop()
		_, err := w2.Browse(context.Background(), "mallory", "s", json.RawMessage(`{"url":"`+site.URL+`/hello","mode":"screenshot"}`))
		if err == nil {
			t.Fatal("screenshot through a symlinked send/ succeeded; want it refused")
		}
		if ents, _ := os.ReadDir(outside); len(ents) != 0 {
			t.Errorf("the screenshot escaped the workspace: %v", ents)
		}
	})
}

func TestSlowHugeAndNeverEndingPages(t *testing.T) {
	w, _ := newWorker(t)
	site := browsertest.Serve(t, "127.0.0.1")
	t.Run("slow", func(t *testing.T) {
		res := mustBrowse(t, w, "alpha", `{"url":"`+site.URL+`/slow"}`)
		if text, _ := res["text"].(string); !strings.Contains(text, "slow part 3") {
			t.Errorf("slow page text = %q; want all its parts", text)
		}
	})
	t.Run("huge", func(t *testing.T) {
		res := mustBrowse(t, w, "alpha", `{"url":"`+site.URL+`/huge","max_chars":5000,"timeout_ms":60000}`)
		text, _ := res["text"].(string)
		if len([]rune(text)) != 5000 || res["truncated"] != true || !strings.Contains(res["summary"].(string), "cut at max_chars=5000") {
			t.Errorf("huge page: %d characters, truncated %v, summary %q; want 5000, true and a summary saying so", len([]rune(text)), res["truncated"], res["summary"])
		}
	})
	t.Run("never finishes loading", func(t *testing.T) {
		_, err := browse(t, w, "alpha", `{"url":"`+site.URL+`/never","timeout_ms":2000,"tab":"stuck"}`)
		if code(err) != CodeTimeout || !strings.Contains(err.Error(), "did not finish loading within 2s") {
			t.Errorf("a page that never loads = %v; want a timeout saying it did not finish loading within 2s", err)
		}
		// The browser is still there for the next call, in that tab too.
		res := mustBrowse(t, w, "alpha", `{"url":"`+site.URL+`/hello","tab":"stuck"}`)
		if text, _ := res["text"].(string); !strings.Contains(text, browsertest.HelloText) {
			t.Errorf("after the timeout, text = %q", text)
		}
	})
}

func TestAgentsCannotReachEachOther(t *testing.T) {
	w, _ := newWorker(t)
	site := browsertest.Serve(t, "127.0.0.1")
	w.Open("alpha", "s-alpha")
	w.Open("beta", "s-beta")
	mustBrowse(t, w, "alpha", `{"url":"`+site.URL+`/cookie/set?v=alpha-secret"}`)
	mustBrowse(t, w, "alpha", `{"url":"`+site.URL+`/storage/set?v=alpha-store","actions":[{"type":"wait","selector":"text=stored"}]}`)
	mustBrowse(t, w, "alpha", `{"url":"`+site.URL+`/hello","tab":"private"}`)

	for _, c := range []struct{ input, want string }{
		{`{"url":"` + site.URL + `/cookie/show"}`, "no cookies"},
		{`{"url":"` + site.URL + `/storage/show","actions":[{"type":"wait","selector":"text=/storage/"}]}`, "no storage"},
	} {
		res := mustBrowse(t, w, "beta", c.input)
		if text := res["text"].(string); !strings.Contains(text, c.want) || strings.Contains(text, "alpha") {
			t.Errorf("beta reads %q; want %q (alpha's cookie and storage are alpha's)", text, c.want)
		}
	}
	if _, err := browse(t, w, "beta", `{"tab":"private"}`); code(err) != CodeNotFound {
		t.Errorf("beta reading alpha's tab = %v; want not_found (beta has its own tabs)", err)
	}
	res := mustBrowse(t, w, "alpha", `{"url":"`+site.URL+`/cookie/show"}`)
	if text := res["text"].(string); !strings.Contains(text, "choir=alpha-secret") {
		t.Errorf("alpha's own cookie: %q", text)
	}

	// A new session of alpha starts with an empty context.
	w.Close("alpha", "s-alpha")
	if got := strings.Join(w.Agents(), ","); got != "beta" {
		t.Errorf("after alpha's session ends, contexts = %q; want beta only", got)
	}
	out, err := w.Browse(context.Background(), "alpha", "s-alpha-2", json.RawMessage(`{"url":"`+site.URL+`/cookie/show"}`))
	if err != nil || !strings.Contains(string(out), "no cookies") {
		t.Errorf("alpha's next session sees %s, %v; want no cookies", out, err)
	}
	// A late Close of the old session leaves the new one alone.
	w.Close("alpha", "s-alpha")
	if got := strings.Join(w.Agents(), ","); got != "alpha,beta" {
		t.Errorf("after a stale Close, contexts = %q; want alpha,beta", got)
	}
}

func TestOpenMakesTheContextCloseDestroysIt(t *testing.T) {
	w, _ := newWorker(t)
	w.Open("gamma", "s1")
	waitFor(t, "gamma's context", func() bool { return strings.Join(w.Agents(), ",") == "gamma" })
	w.Close("gamma", "s1")
	if got := w.Agents(); len(got) != 0 {
		t.Errorf("after Close, contexts = %v; want none", got)
	}
}

func TestBrowserRestartsAfterItCrashes(t *testing.T) {
	w, _ := newWorker(t)
	site := browsertest.Serve(t, "127.0.0.1")
	mustBrowse(t, w, "alpha", `{"url":"`+site.URL+`/cookie/set?v=before"}`)
	main, all := w.chromiumPIDs()
	if main == 0 {
		t.Fatalf("no Chromium process found for the worker (saw %v)", all)
	}
	if err := syscall.Kill(main, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the worker to see the browser gone", func() bool { return !w.connected() })

	res := mustBrowse(t, w, "alpha", `{"url":"`+site.URL+`/cookie/show"}`)
	if text := res["text"].(string); !strings.Contains(text, "no cookies") {
		t.Errorf("after the restart, text = %q; want a fresh context", text)
	}
	if note, _ := res["note"].(string); !strings.Contains(note, "browser restarted") {
		t.Errorf("note = %q; want it to say the browser restarted", note)
	}
	if again := mustBrowse(t, w, "alpha", `{"mode":"text"}`); again["note"] != nil {
		t.Errorf("the restart is told once; the next call says %v", again["note"])
	}
}

func TestDriverRestartsAfterItDies(t *testing.T) {
	w, _ := newWorker(t)
	site := browsertest.Serve(t, "127.0.0.1")
	mustBrowse(t, w, "alpha", `{"url":"`+site.URL+`/hello"}`)
	main, _ := w.chromiumPIDs()
	driver := parentPID(main)
	if main == 0 || driver <= 1 || driver == os.Getpid() {
		t.Fatalf("cannot find the driver: chromium %d, its parent %d", main, driver)
	}
	if cmd, _ := os.ReadFile(filepath.Join("/proc", fmt.Sprint(driver), "cmdline")); !strings.Contains(string(cmd), "cli.js") {
		t.Fatalf("chromium's parent %d is not the driver: %q", driver, cmd)
	}
	if err := syscall.Kill(driver, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// playwright-go does not notice a dead driver until a call fails: the
	// first call may fail (saying so), the one after it works.
	res, err := browse(t, w, "alpha", `{"url":"`+site.URL+`/hello"}`)
	if err != nil {
		if code(err) != CodeCrashed || !strings.Contains(err.Error(), "the next call starts it again") {
			t.Fatalf("the first call after the driver died = %v; want browser_crashed saying the next call starts it again", err)
		}
		res = mustBrowse(t, w, "alpha", `{"url":"`+site.URL+`/hello"}`)
	}
	if text := res["text"].(string); !strings.Contains(text, browsertest.HelloText) {
		t.Errorf("after the driver died, text = %q", text)
	}
	if note, _ := res["note"].(string); !strings.Contains(note, "browser restarted") {
		t.Errorf("note = %q; want it to say the browser restarted", note)
	}
}

func TestHostileInputs(t *testing.T) {
	// Checked before any browser is asked: these run without one.
	w := New(Options{DriverDir: t.TempDir(), Executable: "/nonexistent"})
	defer w.Stop()
	long := strings.Repeat("a", MaxInput)
	cases := []struct {
		name, agent, input, code, text string
	}{
		{"no caller", "", `{"url":"http://x"}`, CodeForbidden, "no calling agent"},
		{"caller with a slash", "../beta", `{"url":"http://x"}`, CodeForbidden, "no calling agent"},
		{"not JSON", "a", `{"url":`, CodeInvalidInput, ""},
		{"two objects", "a", `{}{}`, CodeInvalidInput, ""},
		{"unknown member", "a", `{"url":"http://x","agent":"beta"}`, CodeInvalidInput, "agent"},
		{"file URL", "a", `{"url":"file:///etc/passwd"}`, CodeForbidden, "only http and https"},
		{"javascript URL", "a", `{"url":"javascript:alert(1)"}`, CodeForbidden, "only http and https"},
		{"data URL", "a", `{"url":"data:text/html,hi"}`, CodeForbidden, "only http and https"},
		{"chrome URL", "a", `{"url":"chrome://settings"}`, CodeForbidden, "only http and https"},
		{"view-source URL", "a", `{"url":"view-source:http://x"}`, CodeForbidden, "only http and https"},
		{"relative URL", "a", `{"url":"/etc/passwd"}`, CodeForbidden, "only http and https"},
		{"URL without host", "a", `{"url":"http:///x"}`, CodeInvalidInput, "no host"},
		{"URL too long", "a", `{"url":"http://x/` + strings.Repeat("a", 5000) + `"}`, CodeInvalidInput, "at most 4096"},
		{"unknown mode", "a", `{"mode":"pdf"}`, CodeInvalidInput, "/mode"},
		{"tab with a slash", "a", `{"tab":"../x"}`, CodeInvalidInput, "/tab"},
		{"tab too long", "a", `{"tab":"` + strings.Repeat("t", 33) + `"}`, CodeInvalidInput, "/tab"},
		{"too many actions", "a", `{"actions":[` + strings.TrimSuffix(strings.Repeat(`{"type":"wait","selector":"p"},`, 11), ",") + `]}`, CodeInvalidInput, "at most 10"},
		{"unknown action", "a", `{"actions":[{"type":"eval","selector":"p"}]}`, CodeInvalidInput, "/actions/0/type"},
		{"empty selector", "a", `{"actions":[{"type":"click","selector":""}]}`, CodeInvalidInput, "/actions/0/selector"},
		{"click with a value", "a", `{"actions":[{"type":"click","selector":"p","value":"x"}]}`, CodeInvalidInput, "takes no value"},
		{"timeout too short", "a", `{"timeout_ms":10}`, CodeInvalidInput, "/timeout_ms"},
		{"timeout too long", "a", `{"timeout_ms":99999999}`, CodeInvalidInput, "/timeout_ms"},
		{"negative max_chars", "a", `{"max_chars":-1}`, CodeInvalidInput, "/max_chars"},
		{"huge max_chars", "a", `{"max_chars":999999999}`, CodeInvalidInput, "/max_chars"},
		{"close with a url", "a", `{"mode":"close","url":"http://x"}`, CodeInvalidInput, "close"},
		{"input too big", "a", `{"url":"http://x/` + long + `"}`, CodeInvalidInput, "bytes; at most"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := w.Browse(context.Background(), c.agent, "s", json.RawMessage(c.input))
			if err == nil || code(err) != c.code || !strings.Contains(err.Error(), c.text) {
				t.Errorf("Browse(%.60s) = %v; want %s saying %q", c.input, err, c.code, c.text)
			}
		})
	}
}

func TestMissingDriverOrChromiumIsSaid(t *testing.T) {
	dir := t.TempDir()
	w := New(Options{DriverDir: dir, Executable: "/nonexistent/chromium"})
	defer w.Stop()
	_, err := w.Browse(context.Background(), "alpha", "s", json.RawMessage(`{"url":"http://127.0.0.1:1/"}`))
	if code(err) != CodeUnavailable || !strings.Contains(err.Error(), filepath.Join(dir, "package", "cli.js")) || !strings.Contains(err.Error(), "npm pack playwright-core@1.52.0") {
		t.Errorf("no driver: %v; want unavailable naming the missing cli.js and how to install it", err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("the worker wrote into the driver directory: %v (it must never download)", ents)
	}
	os.MkdirAll(filepath.Join(dir, "package"), 0o755)
	os.WriteFile(filepath.Join(dir, "package", "cli.js"), nil, 0o644)
	os.Symlink("/bin/true", filepath.Join(dir, "node"))
	_, err = w.Browse(context.Background(), "alpha", "s", json.RawMessage(`{"url":"http://127.0.0.1:1/"}`))
	if code(err) != CodeUnavailable || !strings.Contains(err.Error(), "/nonexistent/chromium") {
		t.Errorf("no Chromium: %v; want unavailable naming /nonexistent/chromium", err)
	}
}

func TestOneCallAtATimePerAgent(t *testing.T) {
	w, _ := newWorker(t)
	site := browsertest.Serve(t, "127.0.0.1")
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tab := []string{"a", "b", "a", "b"}[i]
			_, err := w.Browse(context.Background(), "alpha", "s-alpha", json.RawMessage(`{"url":"`+site.URL+`/hello","tab":"`+tab+`"}`))
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("concurrent calls of one agent: %v", err)
		}
	}
}

func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
