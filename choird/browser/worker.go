package browser

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/playwright-community/playwright-go"
)

// Worker owns choird's one browser and the agents' contexts in it.
type Worker struct {
	opts Options

	// launchMu serialises launches and guards pw, ownState and writes of
	// stateDir; it is taken before mu, never while mu is held.
	launchMu sync.Mutex
	pw       *playwright.Playwright
	ownState bool // stateDir was made by the worker

	mu       sync.Mutex // guards everything below, briefly
	browser  playwright.Browser
	gen      int    // counts launches: contexts of an older launch are gone
	stateDir string // written under both locks
	agents   map[string]*agentContext
	stopped  bool
	// restartDriver says the driver, not only Chromium, must start again.
	restartDriver bool
}

// agentContext is one agent's BrowserContext and its named tabs.
type agentContext struct {
	mu      sync.Mutex // serialises the agent's calls
	session string
	gen     int
	ctx     playwright.BrowserContext // nil until made
	tabs    map[string]playwright.Page
	// reset says the context was made again after a crash, for the next
	// call's result.
	reset bool
	// made mirrors ctx != nil for Agents, which does not take mu.
	made atomic.Bool
}

// New returns a worker; the browser starts at the first Open or call.
func New(o Options) *Worker {
	return &Worker{opts: o.withDefaults(), agents: map[string]*agentContext{}}
}

// Open gives agentID's new session its context: called when the session
// starts. It does not wait for the browser: the context is made on a
// goroutine of its own (a failure is logged; the first call tries again).
func (w *Worker) Open(agentID, sessionID string) {
	w.mu.Lock()
	if w.stopped {
		w.mu.Unlock()
		return
	}
	if old := w.agents[agentID]; old != nil && old.session != sessionID {
		delete(w.agents, agentID)
		go w.closeContext(agentID, old)
	}
	a := w.agents[agentID]
	if a == nil {
		a = &agentContext{session: sessionID, tabs: map[string]playwright.Page{}}
		w.agents[agentID] = a
	}
	w.mu.Unlock()
	go func() {
		a.mu.Lock()
		defer a.mu.Unlock()
		if _, err := w.ensureContext(agentID, a); err != nil {
			w.opts.Log.Warn("browser context not made at session start; the first browse tries again", "agent_id", agentID, "error", err.Error())
		}
	}()
}

// Close destroys agentID's context (its pages, cookies and storage) when
// the session ends. A session that is not the agent's current one is
// ignored: its successor keeps its context.
func (w *Worker) Close(agentID, sessionID string) {
	w.mu.Lock()
	a := w.agents[agentID]
	if a == nil || (sessionID != "" && a.session != sessionID) {
		w.mu.Unlock()
		return
	}
	delete(w.agents, agentID)
	w.mu.Unlock()
	w.closeContext(agentID, a)
}

func (w *Worker) closeContext(agentID string, a *agentContext) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.ctx == nil {
		return
	}
	if err := a.ctx.Close(); err != nil && !w.crashed(a.gen) {
		w.opts.Log.Warn("close browser context", "agent_id", agentID, "error", err.Error())
	}
	a.ctx, a.tabs = nil, map[string]playwright.Page{}
	a.made.Store(false)
}

// Agents lists the agents that have a context now, sorted.
func (w *Worker) Agents() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for id, a := range w.agents {
		if a.made.Load() {
			out = append(out, id)
		}
	}
	sort.Strings(out)
	return out
}

// Stop closes every context, the browser and the driver. Calls after Stop
// are refused.
func (w *Worker) Stop() {
	w.mu.Lock()
	w.stopped = true
	agents := w.agents
	w.agents = map[string]*agentContext{}
	w.mu.Unlock()
	for id, a := range agents {
		w.closeContext(id, a)
	}
	w.launchMu.Lock() // after a launch under way, which sees stopped
	defer w.launchMu.Unlock()
	w.mu.Lock()
	b := w.browser
	w.browser = nil
	w.mu.Unlock()
	if b != nil {
		b.Close()
	}
	w.stopDriverLocked()
	if w.ownState && w.stateDir != "" {
		os.RemoveAll(w.stateDir)
		w.ownState = false
	}
}

// stopDriverLocked ends the driver (and the browsers it launched);
// launchMu is held.
func (w *Worker) stopDriverLocked() {
	if w.pw != nil {
		if err := w.pw.Stop(); err != nil {
			w.opts.Log.Warn("stop the Playwright driver", "error", err.Error())
		}
		w.pw = nil
	}
}

// crashed reports whether the browser of launch gen is gone.
func (w *Worker) crashed(gen int) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.browser == nil || w.gen != gen || !w.browser.IsConnected()
}

// running returns the browser and its launch number when it is up.
func (w *Worker) running() (playwright.Browser, int, bool, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopped {
		return nil, 0, false, errorf(CodeUnavailable, "the browser worker is stopped (choird is shutting down)")
	}
	if w.browser != nil && w.browser.IsConnected() {
		return w.browser, w.gen, true, nil
	}
	return nil, 0, false, nil
}

// ensureBrowser returns the running browser and its launch number,
// starting the driver and Chromium when they are not running (first use,
// or after a crash). Launches are serialised by launchMu; w.mu is never
// held while one runs, so Open, Close and other agents' calls go on.
func (w *Worker) ensureBrowser() (playwright.Browser, int, error) {
	if b, gen, ok, err := w.running(); ok || err != nil {
		return b, gen, err
	}
	w.launchMu.Lock()
	defer w.launchMu.Unlock()
	if b, gen, ok, err := w.running(); ok || err != nil {
		return b, gen, err // another call launched it meanwhile
	}
	w.mu.Lock()
	if w.browser != nil {
		w.opts.Log.Warn("browser gone; launching it again", "launch", w.gen)
		w.browser = nil
	}
	restart := w.restartDriver
	w.restartDriver = false
	w.mu.Unlock()
	if restart {
		w.stopDriverLocked()
	}
	if err := w.opts.Check(); err != nil {
		return nil, 0, err
	}
	if w.stateDir == "" {
		dir := w.opts.StateDir
		if dir == "" {
			d, err := os.MkdirTemp("", "choir-browser-")
			if err != nil {
				return nil, 0, errorf(CodeUnavailable, "make the browser's state directory: %v", err)
			}
			dir, w.ownState = d, true
		}
		w.mu.Lock()
		w.stateDir = dir
		w.mu.Unlock()
	}
	b, err := w.launchLocked()
	if err != nil && w.pw != nil {
		// The driver itself may be what died: start it again once.
		w.stopDriverLocked()
		b, err = w.launchLocked()
	}
	if err != nil {
		return nil, 0, err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopped {
		b.Close()
		return nil, 0, errorf(CodeUnavailable, "the browser worker is stopped (choird is shutting down)")
	}
	w.browser = b
	w.gen++
	w.opts.Log.Info("browser launched", "executable", w.opts.Executable, "launch", w.gen)
	return b, w.gen, nil
}

// launchLocked starts the driver when it is not running and launches
// Chromium; launchMu is held.
func (w *Worker) launchLocked() (playwright.Browser, error) {
	if w.pw == nil {
		pw, err := playwright.Run(&playwright.RunOptions{
			DriverDirectory: w.opts.DriverDir, SkipInstallBrowsers: true, Verbose: false,
			Stdout: io.Discard, Stderr: io.Discard, Logger: w.opts.Log,
		})
		if err != nil {
			return nil, errorf(CodeUnavailable, "start the Playwright driver in %s: %v", w.opts.DriverDir, err)
		}
		w.pw = pw
	}
	home := filepath.Join(w.stateDir, "home")
	for _, d := range []string{home, filepath.Join(home, ".config"), filepath.Join(home, ".cache")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, errorf(CodeUnavailable, "make the browser's state directory: %v", err)
		}
	}
	env := map[string]string{
		"HOME": home, "TMPDIR": w.stateDir,
		"XDG_CONFIG_HOME": filepath.Join(home, ".config"), "XDG_CACHE_HOME": filepath.Join(home, ".cache"),
		"PATH": os.Getenv("PATH"),
	}
	b, err := w.pw.Chromium.Launch(playwright.BrowserTypeLaunchOptions{
		ExecutablePath: playwright.String(w.opts.Executable),
		Headless:       playwright.Bool(true),
		Env:            env,
		Timeout:        playwright.Float(float64(launchTimeout.Milliseconds())),
		// choird handles its own signals; Chromium ends with the driver.
		HandleSIGINT: playwright.Bool(false), HandleSIGTERM: playwright.Bool(false), HandleSIGHUP: playwright.Bool(false),
		Args: []string{"--disable-dev-shm-usage", "--no-first-run", "--disable-background-networking", "--disable-sync", "--metrics-recording-only", "--no-default-browser-check"},
	})
	if err != nil {
		return nil, errorf(CodeUnavailable, "launch %s: %v", w.opts.Executable, err)
	}
	return b, nil
}

// ensureContext returns agentID's context, made (again) when it has none
// or its browser was relaunched since. a.mu is held.
func (w *Worker) ensureContext(agentID string, a *agentContext) (playwright.BrowserContext, error) {
	b, gen, err := w.ensureBrowser()
	if err != nil {
		return nil, err
	}
	if a.ctx != nil && a.gen == gen {
		return a.ctx, nil
	}
	if a.ctx != nil {
		a.reset = true // made in a browser that is gone
	}
	a.ctx, a.tabs = nil, map[string]playwright.Page{}
	a.made.Store(false)
	c, err := b.NewContext(playwright.BrowserNewContextOptions{
		AcceptDownloads: playwright.Bool(false),
		Viewport:        &playwright.Size{Width: Viewport.Width, Height: Viewport.Height},
		ServiceWorkers:  playwright.ServiceWorkerPolicyBlock,
	})
	if err != nil {
		// A browser that cannot make a context is of no use: start it
		// (and its driver) again at the next call.
		w.markDead(gen)
		return nil, errorf(CodeCrashed, "the browser could not make %s's context (%v); the next call starts it again", agentID, err)
	}
	c.SetDefaultTimeout(float64(contextTimeout.Milliseconds()))
	a.ctx, a.gen = c, gen
	a.made.Store(true)
	return c, nil
}

// agent returns agentID's context record for sessionID, making one when the
// agent has none (its session started before the worker, or its context
// was closed).
func (w *Worker) agent(agentID, sessionID string) (*agentContext, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopped {
		return nil, errorf(CodeUnavailable, "the browser worker is stopped (choird is shutting down)")
	}
	a := w.agents[agentID]
	if a != nil && sessionID != "" && a.session != sessionID {
		// A context left from an earlier session: never hand it over.
		delete(w.agents, agentID)
		go w.closeContext(agentID, a)
		a = nil
	}
	if a == nil {
		a = &agentContext{session: sessionID, tabs: map[string]playwright.Page{}}
		w.agents[agentID] = a
	}
	return a, nil
}

// tabNames lists the open tabs, sorted.
func (a *agentContext) tabNames() string {
	var names []string
	for n := range a.tabs {
		names = append(names, n)
	}
	sort.Strings(names)
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// pageError turns a Playwright error into the tool's: a timeout, a crash,
// or what Playwright said, prefixed with what was being done. a.mu is held.
//
// A dead driver leaves the browser "connected" as playwright-go sees it:
// every call just fails ("Connection closed", "target closed"). So on an
// error other than a timeout the agent's context is asked for its cookies
// (a round trip through the driver); when that fails too, the browser (and
// driver) are marked dead and the next call starts them again.
func (w *Worker) pageError(a *agentContext, code, doing string, err error) *Error {
	if !errors.Is(err, playwright.ErrTimeout) && !w.crashed(a.gen) && a.ctx != nil {
		if _, perr := a.ctx.Cookies(); perr != nil {
			w.markDead(a.gen)
		}
	}
	if w.crashed(a.gen) {
		return errorf(CodeCrashed, "the browser died while %s; the next call starts it again (open tabs, cookies and storage are lost)", doing)
	}
	if errors.Is(err, playwright.ErrTimeout) {
		return errorf(CodeTimeout, "%s: no answer before the call's deadline", doing)
	}
	msg := err.Error()
	if i := strings.Index(msg, "\nCall log:"); i > 0 {
		msg = msg[:i]
	}
	return errorf(code, "%s: %s", doing, strings.TrimSpace(msg))
}

// markDead forgets the browser of launch gen, which no longer answers; the
// next ensureBrowser starts the driver and Chromium again.
func (w *Worker) markDead(gen int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.gen == gen && w.browser != nil {
		w.opts.Log.Warn("the browser's driver no longer answers; it starts again at the next call", "launch", gen)
		w.browser, w.restartDriver = nil, true
	}
}
