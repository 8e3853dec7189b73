package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"

	"choir/testkit/browsertest"
	"choir/testkit/dockertest"
)

// demoPage is the page the demo serves for the agent's browser to read.
const demoPage = `<!doctype html>
<html><head><title>choir demo page</title></head>
<body><h1>Hello from the demo page</h1>
<p>choird's browser worker read this page on your machine: a headless Chromium in a context of this agent's own, which no other agent can reach.</p>
<p>Nothing here came from the internet.</p>
</body></html>
`

// browser finds Chromium and the Playwright driver (installing the
// driver's npm package the first time, like PGlite's), serves the demo
// page on the Docker bridge, and has choird use them; or says why the demo
// goes without a browser.
func (d *demo) browser(ctx context.Context) error {
	in, err := browsertest.Locate()
	if err != nil && d.repoRoot != "" {
		if _, npmErr := exec.LookPath("npm"); npmErr == nil {
			d.say("installing the Playwright driver (npm ci --prefix testkit/browsertest; the first time only)")
			cmd := exec.CommandContext(ctx, "npm", "ci", "--prefix", filepath.Join(d.repoRoot, "testkit/browsertest"), "--no-audit", "--no-fund")
			if out, cerr := cmd.CombinedOutput(); cerr != nil {
				d.say("browser: skipped, npm ci failed: %v\n%s", cerr, out)
				return nil
			}
			in, err = browsertest.Locate()
		}
	}
	if err != nil {
		d.say("browser: skipped, %v", err)
		return nil
	}
	ip, err := dockertest.BridgeAddr()
	if err != nil {
		return err
	}
	// The page is served where choird's browser reaches it: the host
	// itself, on the bridge address (the browser runs on the host).
	l, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		return fmt.Errorf("listen on the Docker bridge %s: %w", ip, err)
	}
	d.page = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, demoPage)
	})}
	go d.page.Serve(l)
	d.pageURL = "http://" + l.Addr().String() + "/"
	if d.demoModel != nil {
		d.demoModel.DemoPage = d.pageURL
	}
	d.browserEnv = []string{browsertest.EnvDriver + "=" + in.DriverDir, browsertest.EnvChromium + "=" + in.Executable}
	d.say("browser: Chromium %s with the Playwright driver; a demo page at %s", in.Executable, d.pageURL)
	return nil
}

// stopPage stops the demo page (choird stops its browser itself).
func (d *demo) stopPage() {
	if d.page != nil {
		d.page.Close()
	}
}
