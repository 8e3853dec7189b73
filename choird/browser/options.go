package browser

import (
	"log/slog"
	"os"
	"path/filepath"
	"time"
)

// The browser worker's defaults, in one place. §18.2 keeps browser contexts
// out of config.json: they are ephemeral, agent-scoped resources, so these
// are constants (and two environment variables for where the driver and
// Chromium are installed), not config knobs.
const (
	// DefaultDriverDir holds the Playwright driver: package/ (the
	// playwright-core 1.52.0 npm package unpacked) and node (a link to a
	// Node.js binary). CHOIR_BROWSER_DRIVER or PLAYWRIGHT_DRIVER_PATH
	// override it.
	DefaultDriverDir = "/usr/local/lib/choir/playwright-driver"
	// DefaultExecutable is Debian's chromium; CHOIR_CHROMIUM overrides it.
	DefaultExecutable = "/usr/bin/chromium"

	// DefaultTimeout is a call's deadline when the input names none;
	// MinTimeout and MaxTimeout bound the input's timeout_ms.
	DefaultTimeout = 30 * time.Second
	MinTimeout     = time.Second
	MaxTimeout     = 2 * time.Minute

	// DefaultMaxText and MaxMaxText bound the text a call returns
	// (max_chars); beyond, it is cut and the result says truncated.
	DefaultMaxText = 32 << 10
	MaxMaxText     = 256 << 10
	// MaxLinks bounds the links a call returns; MaxLinkText the text of one.
	MaxLinks    = 200
	MaxLinkText = 200
	// MaxScreenshot bounds a screenshot's PNG: a larger one is refused, not
	// written.
	MaxScreenshot = 8 << 20
	// MaxTabs bounds an agent's open tabs; MaxActions a call's actions.
	MaxTabs    = 8
	MaxActions = 10
	// MaxInput bounds a call's input, as JSON.
	MaxInput = 16 << 10

	// launchTimeout bounds starting Chromium; contextTimeout bounds
	// creating or closing an agent's context.
	launchTimeout  = 30 * time.Second
	contextTimeout = 15 * time.Second
)

// Viewport is the size of every page (and of a screenshot that is not
// full_page).
var Viewport = struct{ Width, Height int }{1280, 800}

// Options configure a Worker. The zero value of each field means its
// default (see DefaultOptions).
type Options struct {
	// DriverDir is the Playwright driver directory (package/cli.js and
	// node).
	DriverDir string
	// Executable is the Chromium binary.
	Executable string
	// StateDir keeps Chromium's home, cache and config (its XDG
	// directories); empty means a directory under os.TempDir() made at
	// the first launch and removed by Stop.
	StateDir string
	// Workspace is the host directory of a running agent's workspace,
	// where screenshots go (.choirtmp/send/); nil refuses screenshots.
	Workspace func(agentID string) (string, error)
	// Log receives the worker's own events (launches, crashes).
	Log *slog.Logger
	// Now is the clock (screenshot names); nil means time.Now.
	Now func() time.Time
}

// DefaultOptions returns the options choird runs with: the driver and
// Chromium where README's install steps put them, or where the environment
// says.
func DefaultOptions() Options {
	o := Options{DriverDir: DefaultDriverDir, Executable: DefaultExecutable}
	for _, env := range []string{"CHOIR_BROWSER_DRIVER", "PLAYWRIGHT_DRIVER_PATH"} {
		if v := os.Getenv(env); v != "" {
			o.DriverDir = v
			break
		}
	}
	if v := os.Getenv("CHOIR_CHROMIUM"); v != "" {
		o.Executable = v
	}
	return o
}

func (o Options) withDefaults() Options {
	d := DefaultOptions()
	if o.DriverDir == "" {
		o.DriverDir = d.DriverDir
	}
	if o.Executable == "" {
		o.Executable = d.Executable
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}

// Check reports what is missing to run the browser: the driver's files
// and the Chromium executable, by path, with what to do.
func (o Options) Check() error {
	o = o.withDefaults()
	cli := filepath.Join(o.DriverDir, "package", "cli.js")
	if _, err := os.Stat(cli); err != nil {
		return errorf(CodeUnavailable, "the Playwright driver is not installed: %s is missing (unpack `npm pack playwright-core@1.52.0` as %s/package and link node as %s/node, or set CHOIR_BROWSER_DRIVER)",
			cli, o.DriverDir, o.DriverDir)
	}
	node := filepath.Join(o.DriverDir, "node")
	if fi, err := os.Stat(node); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
		return errorf(CodeUnavailable, "the Playwright driver has no Node.js: %s is missing or not executable (ln -s \"$(command -v node)\" %s)", node, node)
	}
	if fi, err := os.Stat(o.Executable); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
		return errorf(CodeUnavailable, "Chromium is not installed: %s is missing or not executable (apt-get install chromium, or set CHOIR_CHROMIUM)", o.Executable)
	}
	return nil
}
