// Package metricstest checks an exposition with Prometheus's own parser
// and linter, `promtool check metrics` (Debian's prometheus package). It
// is imported only by tests.
package metricstest

import (
	"bytes"
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"choir/testkit"
)

// Promtool returns promtool's path, or stops the test as testkit does for
// a missing backend: a skip saying how to install it under go test, a
// failure under make test.
func Promtool(t testing.TB) string {
	t.Helper()
	if testkit.NoBackends() {
		testkit.Unavailable(t, "promtool: %v", testkit.ErrNoBackends)
	}
	p, err := exec.LookPath("promtool")
	if err != nil {
		testkit.Unavailable(t, "promtool not found (apt-get install -y --no-install-recommends prometheus): %v", err)
	}
	return p
}

// Check runs `promtool check metrics` on text and fails the test with
// what promtool said when it finds a parse error or a lint problem.
func Check(t testing.TB, text []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, Promtool(t), "check", "metrics")
	cmd.Stdin = bytes.NewReader(text)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil || strings.TrimSpace(out.String()) != "" {
		t.Errorf("promtool check metrics: %v\n%s\non this exposition:\n%s", err, out.String(), text)
	}
}
