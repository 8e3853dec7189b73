package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"choir/internal/docker"
	"choir/testkit"
	"choir/testkit/dockertest"
)

func TestMain(m *testing.M) {
	defer testkit.CleanupBuilds()
	dockertest.Main(m)
}

// TestDemoScriptedConversation runs make demo's program without a terminal:
// a chat turn, a file listing, a note written to the workspace, a core job
// and its report, checking, reading and sending email on the bridge,
// reading the demo page with the host's browser; then
// checks that everything it started is gone.
func TestDemoScriptedConversation(t *testing.T) {
	dc := dockertest.Engine(t) // the demo uses the same engine (DOCKER_HOST)
	if os.Getenv(docker.HostEnv) == "" {
		t.Setenv(docker.HostEnv, dc.Host())
	}
	bin := filepath.Dir(testkit.Build(t, "choir/choird"))
	testkit.Build(t, "choir/choirctl")
	testkit.Build(t, "choir/agent")
	t.Setenv("CHOIR_DATABASE_URL", "") // its own PGlite, as on a fresh machine
	t.Setenv("CHOIR_LLM_ENDPOINT", "")
	t.Setenv("CHOIR_DEMO_HOME", "")
	files := t.TempDir()
	t.Setenv("CHOIR_DEMO_FILES", files)
	script := "hello there\nplease list the files\nnote: buy milk\nread notes.md\nfile: greeting\ncore: look around the workspace\n" +
		"check mail\nread mail\nmail bob@example.com: lunch at noon?\nbrowse the demo page\n"
	var out, errb bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	err := run(ctx, []string{"--bin", bin, "--script", "--repo", "../.."}, strings.NewReader(script), &out, &errb)
	if err != nil {
		t.Fatalf("demo = %v\nstdout:\n%s\nstderr:\n%s", err, out.String(), errb.String())
	}
	got := out.String()
	for _, want := range []string{
		"OFFLINE DEMO MODEL",
		`demo> [demo model] you said "hello there"`,
		"README.txt",
		"created notes.md",
		"buy milk",
		"[file] " + filepath.Join(files, "greeting.txt"),
		"core job demo-job started",
		"[core demo-job] Core job demo-job finished",
		"demo stopped; everything it started is gone",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("demo output lacks %q:\n%s", want, got)
		}
	}
	// The browser, when Chromium and the driver are there (make test
	// installs them; without them the demo says it goes without).
	if strings.Contains(got, "browser: skipped") {
		if testkit.Strict() {
			t.Errorf("the demo went without a browser under %s=1:\n%s", testkit.StrictEnv, got)
		}
	} else if !strings.Contains(got, "Hello from the demo page") || !strings.Contains(got, "read ") {
		t.Errorf("the demo's browse of its page did not answer with the page's text:\n%s", got)
	}
	// Email on the bridge, when the mail packages are there (make test
	// installs them; without them the demo says it goes without email).
	if strings.Contains(got, "email: skipped") {
		if testkit.Strict() {
			t.Errorf("the demo went without email under %s=1:\n%s", testkit.StrictEnv, got)
		}
	} else {
		for _, want := range []string{
			"1 unseen of 1 message in INBOX; newest: \"Welcome to the demo's mailbox\" from Choir <hello@choir.test>",
			"1 of 1 unseen messages in INBOX, 1 marked seen",
			"This message waits in the agent's mailbox",
			`sent "lunch at noon?" to bob@example.com`,
		} {
			if !strings.Contains(got, want) {
				t.Errorf("demo output lacks %q:\n%s", want, got)
			}
		}
	}
	if data, err := os.ReadFile(filepath.Join(files, "greeting.txt")); err != nil || !strings.Contains(string(data), "a file from the demo model") {
		t.Errorf("the file the agent sent = %q, %v", data, err)
	}
	// Nothing left behind: no demo container, and its scratch directory gone.
	cs, err := dc.ContainerList(ctx, docker.ContainerListOptions{All: true, Filters: docker.Filters{"label": {"choir.agent=demo"}}})
	if err != nil || len(cs) != 0 {
		t.Errorf("containers left: %d (%v)", len(cs), err)
	}
	if m := regexp.MustCompile(`(/tmp/choir-demo-[0-9]+)/home`).FindStringSubmatch(got); m == nil {
		t.Error("the demo did not say where its home was")
	} else if _, err := os.Stat(m[1]); !os.IsNotExist(err) {
		t.Errorf("%s is still there after the demo", m[1])
	}
}
