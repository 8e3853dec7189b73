// Package testkit holds what every harness under testkit/ shares: the rule for
// a test whose real backend (Docker engine, Postgres, Chromium, Dovecot) cannot
// be had.
//
// Under plain `go test ./...` such a test skips and says why. Under `make test`,
// which sets CHOIR_TEST_STRICT=1 after installing and starting every backend,
// the same call fails the test instead: a missing backend there is a broken
// harness, not a reason to pass.
package testkit

import (
	"errors"
	"os"
	"testing"
)

// StrictEnv is the environment variable that turns an unavailable backend
// from a skip into a failure.
const StrictEnv = "CHOIR_TEST_STRICT"

// Strict reports whether missing backends must fail tests (make test).
func Strict() bool { return os.Getenv(StrictEnv) == "1" }

// NoBackendsEnv set to 1 makes every backend unavailable (Docker, Postgres,
// the browser, the mail servers), even where one could be found or
// started: `make audit` runs only the tests that need none.
const NoBackendsEnv = "CHOIR_TEST_NO_BACKENDS"

// NoBackends reports whether NoBackendsEnv is set.
func NoBackends() bool { return os.Getenv(NoBackendsEnv) == "1" }

// ErrNoBackends is why a backend is unavailable under NoBackendsEnv.
var ErrNoBackends = errors.New(NoBackendsEnv + "=1: this run uses no backend")

// Unavailable stops the test because a backend it needs is missing: a skip
// with the reason under go test, a failure under make test.
func Unavailable(t testing.TB, format string, args ...any) {
	t.Helper()
	if Strict() {
		t.Fatalf("backend unavailable under %s=1: "+format, append([]any{StrictEnv}, args...)...)
	}
	t.Skipf("skipping: "+format, args...)
}
