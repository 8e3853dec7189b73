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
	"os"
	"testing"
)

// StrictEnv is the environment variable that turns an unavailable backend
// from a skip into a failure.
const StrictEnv = "CHOIR_TEST_STRICT"

// Strict reports whether missing backends must fail tests (make test).
func Strict() bool { return os.Getenv(StrictEnv) == "1" }

// Unavailable stops the test because a backend it needs is missing: a skip
// with the reason under go test, a failure under make test.
func Unavailable(t testing.TB, format string, args ...any) {
	t.Helper()
	if Strict() {
		t.Fatalf("backend unavailable under %s=1: "+format, append([]any{StrictEnv}, args...)...)
	}
	t.Skipf("skipping: "+format, args...)
}
