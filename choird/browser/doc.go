// Package browser is choird's browser worker (design §18.2): the host side
// of choir.web.browse, and the only package that imports playwright-go.
//
// One Chromium (Debian's /usr/bin/chromium, headless) serves every agent,
// driven through the Playwright driver 1.52.0 that playwright-go v0.5200.1
// speaks; nothing is ever downloaded (Install is never called; a missing
// driver or executable is reported by path). Each running agent gets its own
// BrowserContext — cookies, local storage, cache and pages of its own — when
// its session starts (Open) and loses it when the session ends (Close); a
// call finds the context by the calling agent, which choird's RPC server
// authenticates, so no input can name another agent's context.
//
// Inside its context an agent has named tabs (a page each, at most
// Options.MaxTabs). A call navigates a tab (http and https only), runs a few
// simple actions (click, fill, wait for a selector), then reads the page in
// one mode: its readable text, its links, or a PNG screenshot written into
// the agent's .choirtmp/send/ (the result names the path). Every call has a
// deadline, and what comes back is capped (text, links, screenshot bytes);
// a capped answer says so.
//
// When Chromium dies (crash, OOM kill), the next call launches it again and
// the agents' contexts are recreated empty; the result says so. When the
// driver dies, it is started again the same way.
package browser
