package mcptest

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"choir/testkit"
)

// EverythingVersion is the pinned @modelcontextprotocol/server-everything.
const EverythingVersion = "2026.8.31"

// Everything is the installed reference server: `Node Script` serves MCP
// over stdio (`Node Script streamableHttp` over HTTP, on $PORT and every
// interface, so tests on the host use stdio).
type Everything struct {
	Node   string
	Script string
}

var (
	everyOnce   sync.Once
	every       Everything
	everyReason error
)

// FindEverything returns the reference server installed by testkit/ci.sh
// (`npm ci --prefix testkit/mcptest`), or stops the test: a skip with the
// reason under go test, a failure under CHOIR_TEST_STRICT=1.
func FindEverything(t testing.TB) Everything {
	t.Helper()
	everyOnce.Do(func() {
		var s Suite
		s, everyReason = findSuite()
		if everyReason != nil {
			return
		}
		every = Everything{Node: s.Node, Script: filepath.Join(filepath.Dir(s.Entry), "..", "..", "server-everything", "dist", "index.js")}
		every.Script = filepath.Clean(every.Script)
		if _, err := os.Stat(every.Script); err != nil {
			everyReason = fmt.Errorf("the MCP reference server is not installed (%s missing): run `npm ci --prefix testkit/mcptest` (testkit/ci.sh does)", every.Script)
		}
	})
	if everyReason != nil {
		testkit.Unavailable(t, "%v", everyReason)
	}
	return every
}
