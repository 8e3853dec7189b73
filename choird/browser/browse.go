package browser

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/playwright-community/playwright-go"

	"choir/internal/rpc"
)

// Input is choir.web.browse's input (agent/tool/web publishes its schema).
type Input struct {
	URL       string   `json:"url,omitempty"`  // http or https; empty reads the tab as it is
	Mode      string   `json:"mode,omitempty"` // text (the default), links, screenshot or close
	Tab       string   `json:"tab,omitempty"`  // the tab's name; "main" when empty
	Actions   []Action `json:"actions,omitempty"`
	TimeoutMS int      `json:"timeout_ms,omitempty"`
	MaxChars  int      `json:"max_chars,omitempty"`
	FullPage  bool     `json:"full_page,omitempty"` // screenshot: the whole page, not the viewport
}

// Action is one step run on the page before it is read.
type Action struct {
	Type     string `json:"type"` // click, fill or wait
	Selector string `json:"selector"`
	Value    string `json:"value,omitempty"` // fill only
}

// Link is one link of the links mode.
type Link struct {
	Text string `json:"text"`
	Href string `json:"href"`
}

// Modes of a call.
const (
	ModeText       = "text"
	ModeLinks      = "links"
	ModeScreenshot = "screenshot"
	ModeClose      = "close"
	DefaultTab     = "main"
)

var (
	tabRE     = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,31}$`)
	agentIDRE = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,62}$`)
)

const maxSelector = 1024

// HostTools returns the EXECUTE_HOST_TOOL handler of choir.web.browse.
func (w *Worker) HostTools() map[string]func(ctx context.Context, agentID, sessionID string, input json.RawMessage) (json.RawMessage, error) {
	return map[string]func(ctx context.Context, agentID, sessionID string, input json.RawMessage) (json.RawMessage, error){
		rpc.HostToolWebBrowse: w.Browse,
	}
}

// parse reads and checks an input; the error says which member is wrong.
func parse(raw json.RawMessage) (Input, time.Duration, error) {
	var in Input
	if len(raw) > MaxInput {
		return in, 0, errorf(CodeInvalidInput, "input of %d bytes; at most %d", len(raw), MaxInput)
	}
	if err := rpc.DecodeStrict(raw, &in); err != nil {
		return in, 0, errorf(CodeInvalidInput, "%v (the tool's schema lists its members)", err)
	}
	if in.Mode == "" {
		in.Mode = ModeText
	}
	switch in.Mode {
	case ModeText, ModeLinks, ModeScreenshot, ModeClose:
	default:
		return in, 0, errorf(CodeInvalidInput, "/mode is %q; want text, links, screenshot or close", in.Mode)
	}
	if in.Tab == "" {
		in.Tab = DefaultTab
	}
	if !tabRE.MatchString(in.Tab) {
		return in, 0, errorf(CodeInvalidInput, "/tab is %q; want 1 to 32 lowercase letters, digits, '-' or '_'", in.Tab)
	}
	if in.URL != "" {
		if err := checkURL(in.URL); err != nil {
			return in, 0, err
		}
	}
	if len(in.Actions) > MaxActions {
		return in, 0, errorf(CodeInvalidInput, "/actions has %d steps; at most %d", len(in.Actions), MaxActions)
	}
	for i, a := range in.Actions {
		switch a.Type {
		case "click", "wait":
			if a.Value != "" {
				return in, 0, errorf(CodeInvalidInput, "/actions/%d: %s takes no value", i, a.Type)
			}
		case "fill":
		default:
			return in, 0, errorf(CodeInvalidInput, "/actions/%d/type is %q; want click, fill or wait", i, a.Type)
		}
		if a.Selector == "" || len(a.Selector) > maxSelector || !utf8.ValidString(a.Selector) {
			return in, 0, errorf(CodeInvalidInput, "/actions/%d/selector: want a CSS or Playwright selector of 1 to %d bytes", i, maxSelector)
		}
		if len(a.Value) > 4096 {
			return in, 0, errorf(CodeInvalidInput, "/actions/%d/value is %d bytes; at most 4096", i, len(a.Value))
		}
	}
	if in.Mode == ModeClose && (in.URL != "" || len(in.Actions) > 0) {
		return in, 0, errorf(CodeInvalidInput, "/mode close takes only a tab, no url or actions")
	}
	timeout := DefaultTimeout
	if in.TimeoutMS != 0 {
		timeout = time.Duration(in.TimeoutMS) * time.Millisecond
		if timeout < MinTimeout || timeout > MaxTimeout {
			return in, 0, errorf(CodeInvalidInput, "/timeout_ms is %d; want %d to %d", in.TimeoutMS, MinTimeout.Milliseconds(), MaxTimeout.Milliseconds())
		}
	}
	if in.MaxChars == 0 {
		in.MaxChars = DefaultMaxText
	}
	if in.MaxChars < 1 || in.MaxChars > MaxMaxText {
		return in, 0, errorf(CodeInvalidInput, "/max_chars is %d; want 1 to %d", in.MaxChars, MaxMaxText)
	}
	return in, timeout, nil
}

// checkURL accepts absolute http and https URLs only: file:, data:,
// javascript:, chrome: and the like would reach the host's files or the
// browser itself.
func checkURL(s string) error {
	if len(s) > 4096 {
		return errorf(CodeInvalidInput, "/url is %d bytes; at most 4096", len(s))
	}
	u, err := url.Parse(s)
	if err != nil {
		return errorf(CodeInvalidInput, "/url %q is not a URL: %v", s, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return errorf(CodeForbidden, "/url %q: only http and https pages can be browsed", s)
	}
	if u.Host == "" {
		return errorf(CodeInvalidInput, "/url %q has no host", s)
	}
	return nil
}

// Browse runs one choir.web.browse call for agentID (the authenticated
// caller) in its session's context.
func (w *Worker) Browse(ctx context.Context, agentID, sessionID string, raw json.RawMessage) (json.RawMessage, error) {
	if !agentIDRE.MatchString(agentID) {
		return nil, errorf(CodeForbidden, "choir.web.browse: no calling agent")
	}
	in, timeout, err := parse(raw)
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(timeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	a, err := w.agent(agentID, sessionID)
	if err != nil {
		return nil, err
	}
	// One call at a time per agent (the agent's browser_tab lock says the
	// same); a call that waits here past its deadline gives up.
	locked := make(chan struct{})
	go func() { a.mu.Lock(); close(locked) }()
	select {
	case <-locked:
	case <-ctx.Done():
		go func() { <-locked; a.mu.Unlock() }()
		return nil, errorf(CodeTimeout, "choir.web.browse: another call of this agent still holds the browser")
	}
	defer a.mu.Unlock()
	if in.Mode == ModeClose {
		return w.closeTab(a, in.Tab)
	}
	bctx, err := w.ensureContext(agentID, a)
	if err != nil {
		return nil, err
	}
	res := map[string]any{"status": "success", "tab": in.Tab, "mode": in.Mode}
	if a.reset {
		res["note"] = "the browser restarted since your last call: earlier tabs, cookies and storage are gone"
		a.reset = false
	}
	page := a.tabs[in.Tab]
	if page != nil && page.IsClosed() {
		delete(a.tabs, in.Tab)
		page = nil
	}
	if page == nil {
		if in.URL == "" {
			return nil, errorf(CodeNotFound, "tab %q is not open (open tabs: %s); give a url to open it", in.Tab, a.tabNames())
		}
		if len(a.tabs) >= MaxTabs {
			return nil, errorf(CodeInvalidInput, "%d tabs are open (%s); close one with mode close first", len(a.tabs), a.tabNames())
		}
		p, err := bctx.NewPage()
		if err != nil {
			return nil, w.pageError(a, CodeFailed, "open tab "+in.Tab, err)
		}
		a.tabs[in.Tab], page = p, p
	}
	remaining := func() *float64 {
		ms := time.Until(deadline).Milliseconds()
		if ms < 1 {
			ms = 1
		}
		return playwright.Float(float64(ms))
	}
	if in.URL != "" {
		resp, err := page.Goto(in.URL, playwright.PageGotoOptions{Timeout: remaining(), WaitUntil: playwright.WaitUntilStateDomcontentloaded})
		if err != nil {
			e := w.pageError(a, CodeNavigation, "load "+in.URL, err)
			if e.Code == CodeTimeout {
				e.Message = fmt.Sprintf("load %s: the page did not finish loading within %s; try a larger timeout_ms, or another page", in.URL, timeout.Round(time.Millisecond))
			}
			return nil, e
		}
		if resp != nil {
			res["http_status"] = resp.Status()
		}
	}
	for i, act := range in.Actions {
		doing := fmt.Sprintf("action %d (%s %q)", i, act.Type, act.Selector)
		var err error
		switch act.Type {
		case "click":
			err = page.Locator(act.Selector).First().Click(playwright.LocatorClickOptions{Timeout: remaining()})
		case "fill":
			err = page.Locator(act.Selector).First().Fill(act.Value, playwright.LocatorFillOptions{Timeout: remaining()})
		case "wait":
			_, err = page.WaitForSelector(act.Selector, playwright.PageWaitForSelectorOptions{Timeout: remaining()})
		}
		if err != nil {
			return nil, w.pageError(a, CodeAction, doing, err)
		}
	}
	res["url"] = page.URL()
	title, err := page.Title()
	if err != nil {
		return nil, w.pageError(a, CodeFailed, "read the title", err)
	}
	res["title"] = truncate(title, 500)
	var summary string
	switch in.Mode {
	case ModeText:
		text, truncated, err := w.readText(a, page, in.MaxChars, remaining)
		if err != nil {
			return nil, err
		}
		res["text"], res["truncated"] = text, truncated
		summary = fmt.Sprintf("read %d characters of %s", utf8.RuneCountInString(text), page.URL())
		if truncated {
			summary += fmt.Sprintf(" (cut at max_chars=%d)", in.MaxChars)
		}
	case ModeLinks:
		links, total, err := w.readLinks(a, page, remaining)
		if err != nil {
			return nil, err
		}
		res["links"], res["truncated"], res["links_total"] = links, total > len(links), total
		summary = fmt.Sprintf("%d links on %s", len(links), page.URL())
		if total > len(links) {
			summary = fmt.Sprintf("the first %d of %d links on %s", len(links), total, page.URL())
		}
	case ModeScreenshot:
		path, n, err := w.screenshot(agentID, a, page, in, remaining)
		if err != nil {
			return nil, err
		}
		res["screenshot"], res["bytes"] = path, n
		summary = fmt.Sprintf("screenshot of %s saved as %s; it goes to the user with your next reply", page.URL(), path)
	}
	res["summary"] = summary
	return json.Marshal(res)
}

func (w *Worker) closeTab(a *agentContext, tab string) (json.RawMessage, error) {
	p := a.tabs[tab]
	if p == nil {
		return nil, errorf(CodeNotFound, "tab %q is not open (open tabs: %s)", tab, a.tabNames())
	}
	delete(a.tabs, tab)
	if !p.IsClosed() {
		p.Close()
	}
	return json.Marshal(map[string]any{"status": "success", "summary": "closed tab " + tab, "tab": tab, "mode": ModeClose})
}

// readTextJS returns the page's readable text (what a reader sees, as
// innerText lays it out), cut in the page to max+1 characters so a huge
// page never crosses the driver whole.
const readTextJS = `(max) => {
  const root = document.body || document.documentElement;
  if (!root) return "";
  let t = root.innerText || "";
  t = t.replace(/[ \t\u00a0]+\n/g, "\n").replace(/\n{3,}/g, "\n\n").trim();
  return t.length > max ? t.slice(0, max + 1) : t;
}`

func (w *Worker) readText(a *agentContext, page playwright.Page, max int, remaining func() *float64) (string, bool, error) {
	v, err := evaluate(page, readTextJS, max, remaining)
	if err != nil {
		return "", false, w.pageError(a, CodeFailed, "read the page's text", err)
	}
	s, _ := v.(string)
	if utf8.RuneCountInString(s) > max {
		return truncate(s, max), true, nil
	}
	return s, false, nil
}

const readLinksJS = `([max, maxText]) => {
  const out = [];
  const all = document.querySelectorAll("a[href]");
  for (const a of all) {
    if (out.length >= max) break;
    const text = (a.innerText || a.getAttribute("aria-label") || a.title || "").replace(/\s+/g, " ").trim().slice(0, maxText);
    out.push({text, href: a.href});
  }
  return {links: out, total: all.length};
}`

func (w *Worker) readLinks(a *agentContext, page playwright.Page, remaining func() *float64) ([]Link, int, error) {
	v, err := evaluate(page, readLinksJS, []int{MaxLinks, MaxLinkText}, remaining)
	if err != nil {
		return nil, 0, w.pageError(a, CodeFailed, "read the page's links", err)
	}
	raw, _ := json.Marshal(v)
	var got struct {
		Links []Link `json:"links"`
		Total int    `json:"total"`
	}
	if err := json.Unmarshal(raw, &got); err != nil {
		return nil, 0, errorf(CodeFailed, "read the page's links: %v", err)
	}
	if got.Links == nil {
		got.Links = []Link{}
	}
	for i := range got.Links {
		got.Links[i].Href = truncate(got.Links[i].Href, 2048)
	}
	return got.Links, got.Total, nil
}

// evaluate runs js in the page, bounded by the call's deadline: Playwright's
// Evaluate takes no timeout, so a page whose script never yields is left
// behind, not waited on.
func evaluate(page playwright.Page, js string, arg any, remaining func() *float64) (any, error) {
	type answer struct {
		v   any
		err error
	}
	done := make(chan answer, 1)
	go func() {
		v, err := page.Evaluate(js, arg)
		done <- answer{v, err}
	}()
	t := time.NewTimer(time.Duration(*remaining()) * time.Millisecond)
	defer t.Stop()
	select {
	case a := <-done:
		return a.v, a.err
	case <-t.C:
		return nil, fmt.Errorf("%w: the page did not answer", playwright.ErrTimeout)
	}
}

// truncate cuts s to at most max characters.
func truncate(s string, max int) string {
	if utf8.RuneCountInString(s) <= max {
		return s
	}
	n := 0
	for i := range s {
		if n == max {
			return s[:i]
		}
		n++
	}
	return s
}

// String renders an input for logs (no fill values: they may be secrets
// the agent types into a form).
func (in Input) String() string {
	var acts []string
	for _, a := range in.Actions {
		acts = append(acts, a.Type+" "+a.Selector)
	}
	return fmt.Sprintf("%s %s tab=%s actions=[%s]", in.Mode, in.URL, in.Tab, strings.Join(acts, "; "))
}
