// Package browsertest finds what choird's browser worker needs in tests:
// the Playwright driver (playwright-core 1.52.0, which package.json pins and
// testkit/ci.sh installs with `npm ci --prefix testkit/browsertest`) laid out
// as playwright-go expects it (package/ and node in one directory), and
// Debian's Chromium. It never downloads a browser.
//
// A test that cannot have them skips with the reason under go test and
// fails under CHOIR_TEST_STRICT=1 (make test), as testkit.Unavailable says.
//
// It also serves the pages the browser tests read, on loopback: see Site.
package browsertest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"choir/testkit"
)

// Version is the driver version playwright-go v0.5200.1 speaks.
const Version = "1.52.0"

// Env names the overrides: a ready driver directory and a Chromium binary.
const (
	EnvDriver   = "CHOIR_BROWSER_DRIVER"
	EnvChromium = "CHOIR_CHROMIUM"
)

// Install is where a test finds the browser: DriverDir holds package/ and
// node, Executable is Chromium.
type Install struct {
	DriverDir  string
	Executable string
}

var (
	once   sync.Once
	found  Install
	reason error
)

// Find returns the driver and Chromium, or stops the test (skip, or fail
// under CHOIR_TEST_STRICT=1) with what is missing and how to install it.
func Find(t testing.TB) Install {
	t.Helper()
	once.Do(func() { found, reason = find() })
	if reason != nil {
		testkit.Unavailable(t, "%v", reason)
	}
	return found
}

// Locate is Find for programs (make demo): the driver and Chromium, or
// what is missing and how to install it.
func Locate() (Install, error) { return find() }

func find() (Install, error) {
	in := Install{Executable: "/usr/bin/chromium"}
	if testkit.NoBackends() {
		return in, testkit.ErrNoBackends
	}
	if v := os.Getenv(EnvChromium); v != "" {
		in.Executable = v
	}
	if fi, err := os.Stat(in.Executable); err != nil || fi.IsDir() {
		return in, fmt.Errorf("no Chromium at %s: apt-get install -y --no-install-recommends chromium (or set %s)", in.Executable, EnvChromium)
	}
	if v := os.Getenv(EnvDriver); v != "" {
		if _, err := os.Stat(filepath.Join(v, "package", "cli.js")); err != nil {
			return in, fmt.Errorf("%s=%s holds no package/cli.js", EnvDriver, v)
		}
		in.DriverDir = v
		return in, nil
	}
	node, err := exec.LookPath("node")
	if err != nil {
		return in, errors.New("node is not on PATH: install Node.js 18+ (apt-get install nodejs npm)")
	}
	dir, err := packageDir()
	if err != nil {
		return in, err
	}
	core := filepath.Join(dir, "node_modules", "playwright-core")
	b, err := os.ReadFile(filepath.Join(core, "package.json"))
	if err != nil {
		return in, errors.New("the Playwright driver is not installed: run `npm ci --prefix testkit/browsertest` (make test does)")
	}
	if !strings.Contains(string(b), `"version": "`+Version+`"`) {
		return in, fmt.Errorf("%s is not playwright-core %s: run `npm ci --prefix testkit/browsertest` again", core, Version)
	}
	// playwright-go wants <dir>/package/cli.js and <dir>/node: links to
	// the npm package and the node on PATH, in a directory of this user's.
	drv := filepath.Join(os.TempDir(), fmt.Sprintf("choir-browsertest-driver-%d", os.Getuid()))
	if err := os.MkdirAll(drv, 0o700); err != nil {
		return in, fmt.Errorf("make the driver directory: %w", err)
	}
	for name, target := range map[string]string{"package": core, "node": node} {
		link := filepath.Join(drv, name)
		if cur, err := os.Readlink(link); err == nil && cur == target {
			continue
		}
		os.Remove(link)
		tmp := fmt.Sprintf("%s.%d", link, os.Getpid())
		os.Remove(tmp)
		if err := os.Symlink(target, tmp); err != nil {
			return in, fmt.Errorf("link the driver's %s: %w", name, err)
		}
		if err := os.Rename(tmp, link); err != nil {
			return in, fmt.Errorf("link the driver's %s: %w", name, err)
		}
	}
	in.DriverDir = drv
	return in, nil
}

// packageDir is this package's source directory, where npm installs.
func packageDir() (string, error) {
	if dir, err := os.Getwd(); err == nil {
		for d := dir; ; d = filepath.Dir(d) {
			if b, err := os.ReadFile(filepath.Join(d, "go.mod")); err == nil && strings.HasPrefix(string(b), "module choir\n") {
				return filepath.Join(d, "testkit", "browsertest"), nil
			}
			if filepath.Dir(d) == d {
				break
			}
		}
	}
	if _, file, _, ok := runtime.Caller(0); ok {
		return filepath.Dir(file), nil
	}
	return "", errors.New("cannot find the choir module's testkit/browsertest directory")
}
