package testkit_test

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"choir/internal/config"
	"choir/internal/ctl"
	"choir/testkit"
	"choir/testkit/demomodel"
	"choir/testkit/dockertest"
	"choir/testkit/imagetest"
	"choir/testkit/pgtest"
	"choir/testkit/telegramtest"
)

func TestMain(m *testing.M) {
	defer pgtest.Stop()
	dockertest.Main(m)
}

// quickstart returns the README's quickstart commands and example config.
func quickstart(t *testing.T) (script string, cfg map[string]any) {
	t.Helper()
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(readme), "## Quickstart")
	if !ok {
		t.Fatal("README.md has no Quickstart section")
	}
	sh := regexp.MustCompile("(?s)```sh\n(.*?)```").FindStringSubmatch(section)
	js := regexp.MustCompile("(?s)```json\n(.*?)```").FindStringSubmatch(section)
	if sh == nil || js == nil {
		t.Fatal("the Quickstart lacks its sh or json block")
	}
	if err := json.Unmarshal([]byte(js[1]), &cfg); err != nil {
		t.Fatalf("the README's example config is not JSON: %v", err)
	}
	return sh[1], cfg
}

// TestReadmeQuickstart runs the README's quickstart commands as written, in
// a fresh HOME, with the README's example config (its host names, paths and
// endpoints pointed at the test's Postgres, Docker engine, fake Telegram and
// offline model), and checks the agent answers. The README cannot rot.
func TestReadmeQuickstart(t *testing.T) {
	dc := dockertest.Engine(t)
	imagetest.Debian(t, dc) // the Dockerfile.base that init scaffolds starts FROM it
	db := pgtest.DB(t)
	script, cfg := quickstart(t)

	home := t.TempDir()
	prefix := filepath.Join(home, "prefix")
	os.MkdirAll(filepath.Join(prefix, "bin"), 0o755)

	// The offline model, on the Docker bridge where containers reach it.
	ip := dockertest.BridgeIP(t)
	l, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		t.Fatal(err)
	}
	model := &http.Server{Handler: &demomodel.Server{}}
	go model.Serve(l)
	t.Cleanup(func() { model.Close() })
	tg := telegramtest.New(t)
	tg.AddBot("123456789:your-bot-token", "choir_readme_bot")

	// The example config, with the test's places in place of the README's.
	u, _ := url.Parse(db.DSN)
	port, _ := strconv.Atoi(u.Port())
	cfg["global_repo"].(map[string]any)["url"] = filepath.Join(home, "choir/global.git")
	cfg["workspaces"].(map[string]any)["main"].(map[string]any)["path"] = filepath.Join(home, "choir/workspace")
	fast := cfg["models"].(map[string]any)["fast"].(map[string]any)
	fast["endpoint"], fast["model"] = "http://"+l.Addr().String()+"/v1", "demo"
	cfg["gateways"].(map[string]any)["bot"].(map[string]any)["api_base"] = tg.URL()
	cfg["postgres"] = map[string]any{"host": u.Hostname(), "port": port, "database": strings.TrimPrefix(u.Path, "/"),
		"sslmode": "disable", "pool_size": 1, "namespace": db.Namespace, "secret": "postgres"}
	cfg["agents"].(map[string]any)["assistant"].(map[string]any)["repo"].(map[string]any)["url"] = filepath.Join(home, "choir/assistant.git")
	data, _ := json.MarshalIndent(cfg, "", "  ")
	prepared := filepath.Join(home, "prepared-config.json")
	os.WriteFile(prepared, data, 0o644)
	editor := filepath.Join(home, "editor")
	os.WriteFile(editor, []byte("#!/bin/sh\ncp '"+prepared+"' \"$1\"\n"), 0o755)

	// The postgres secret the README sets is the test database's.
	password, _ := u.User.Password()
	script = strings.Replace(script, "'choir:change-me'", "'"+u.User.Username()+":"+password+"'", 1)

	// The README runs as an ordinary user, who owns the workspace its
	// `mkdir -p` makes; the test runs as root, so the workspace is made
	// first, owned by an unprivileged uid (choird refuses a root-owned one).
	if err := testkit.MakeWorkspace(filepath.Join(home, "choir/workspace")); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", "-e", "-c", script)
	cmd.Dir = ".." // the checkout, where make build runs
	cmd.Env = append(os.Environ(), "HOME="+home, "PREFIX="+prefix, "EDITOR="+editor,
		"PATH="+filepath.Join(prefix, "bin")+":"+os.Getenv("PATH"), "DOCKER_HOST="+dc.Host(), "CHOIR_HOME=")
	var out testkit.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	// choird stays in the background holding the script's output: once the
	// script has exited, stop waiting for that output.
	cmd.WaitDelay = 5 * time.Second
	t.Cleanup(func() { stopChoird(t, filepath.Join(home, ".choir.d")) })
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
		if errors.Is(err, exec.ErrWaitDelay) {
			err = nil
		}
	case <-time.After(10 * time.Minute):
		cmd.Process.Kill()
		t.Fatalf("the quickstart did not finish in 10 minutes:\n%s", out.String())
	}
	if err != nil {
		stderr, _ := os.ReadFile(filepath.Join(home, "choird.stderr"))
		t.Fatalf("the README's quickstart failed: %v\n%s\nchoird:\n%s", err, out.String(), lastLines(stderr, 20))
	}
	if !strings.Contains(out.String(), "assistant> "+demomodel.Prefix) {
		t.Errorf("the quickstart's chat got no answer:\n%s", out.String())
	}
}

// stopChoird stops the agent and the choird the quickstart left running.
func stopChoird(t *testing.T, home string) {
	c := ctl.NewClient(config.Home{Dir: home}.AdminSocket())
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	st, err := c.Status(ctx)
	if err != nil {
		return
	}
	c.StopAgent(ctx, "assistant")
	syscall.Kill(st.PID, syscall.SIGTERM)
	for ctx.Err() == nil {
		if syscall.Kill(st.PID, 0) != nil {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Errorf("choird (pid %d) did not stop", st.PID)
}

func lastLines(b []byte, n int) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
