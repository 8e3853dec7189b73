package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"choir/internal/docker"
	"choir/testkit/demomodel"
	"choir/testkit/dockertest"
	"choir/testkit/imagetest"
)

// demo holds what the demo started, so teardown removes exactly that.
type demo struct {
	options
	work       string // scratch directory: engine, database, repos, workspace
	home       string
	engineDir  string // set when the demo started its own engine
	pgDir      string // set when the demo started PGlite
	model      *http.Server
	choird     *exec.Cmd
	choirdDone chan error
	agent      string
	mail       *demoMail // nil when the mail packages are missing
	demoModel  *demomodel.Server
	page       *http.Server // the demo page; nil without a browser
	pageURL    string
	browserEnv []string // where choird finds the driver and Chromium
}

func (d *demo) say(format string, args ...any) { fmt.Fprintf(d.stdout, "== "+format+"\n", args...) }

func (d *demo) run(ctx context.Context) error {
	if d.llm.endpoint != "" && d.llm.key != "" {
		d.say("choir demo, using the model at %s", d.llm.endpoint)
	} else {
		d.say("choir demo, using the OFFLINE DEMO MODEL: a deterministic responder, not a real LLM (set CHOIR_LLM_ENDPOINT and CHOIR_LLM_KEY for a real one)")
	}
	var err error
	if d.work, err = os.MkdirTemp("", "choir-demo-"); err != nil {
		return err
	}
	d.home = filepath.Join(d.work, "home")
	if d.demoHome != "" {
		d.home = d.demoHome
	}
	for _, bin := range []string{"choird", "choirctl", "choir-agent"} {
		if _, err := os.Stat(filepath.Join(d.bin, bin)); err != nil {
			return fmt.Errorf("%s/%s is missing: run make build first (make demo does)", d.bin, bin)
		}
	}
	steps := []struct {
		what string
		do   func(context.Context) error
	}{
		{"Docker engine", d.engine},
		{"Postgres with pgvector", d.postgres},
		{"Debian base image", d.debian},
		{"model", d.startModel},
		{"mail servers", d.mailServers},
		{"browser", d.browser},
		{"home, repos and config", d.configure},
		{"choird", d.startChoird},
		{"agent image", d.build},
		{"agent", d.startAgent},
	}
	for _, s := range steps {
		if err := s.do(ctx); err != nil {
			return fmt.Errorf("%s: %w", s.what, err)
		}
	}
	if d.script {
		return d.scripted(ctx)
	}
	d.say("chatting with %s (Ctrl-D or /quit to leave; try: list the files, note: buy milk, file: hello, core: look around, check mail, browse the demo page)", d.agent)
	d.say("files the agent sends are saved in %s", d.filesDir())
	return d.ctl(ctx, d.stdin, d.stdout, "chat", d.agent, "--files", d.filesDir())
}

// engine finds a Docker engine or starts a private one.
func (d *demo) engine(ctx context.Context) error {
	if c, err := docker.New(ctx, ""); err == nil {
		d.say("Docker engine: %s", c.Host())
		c.Close()
		return nil
	}
	d.say("no Docker engine answers: starting a private one (installs docker.io the first time)")
	d.engineDir = filepath.Join(d.work, "engine")
	out, err := d.script1(ctx, "testkit/dockertest/engine.sh", "start", d.engineDir)
	if err != nil {
		d.engineDir = ""
		return fmt.Errorf("cannot start a Docker engine (run as root, with apt-get available): %w", err)
	}
	host := strings.TrimPrefix(strings.TrimSpace(out), docker.HostEnv+"=")
	os.Setenv(docker.HostEnv, host)
	d.dockerEnv = docker.HostEnv + "=" + host
	return nil
}

// postgres uses CHOIR_DATABASE_URL or starts the embedded PGlite.
func (d *demo) postgres(ctx context.Context) error {
	if d.database != "" {
		d.say("Postgres: CHOIR_DATABASE_URL")
		return nil
	}
	d.say("starting PGlite (Postgres 17 + pgvector; installs its npm packages the first time)")
	d.pgDir = filepath.Join(d.work, "pg")
	out, err := d.script1(ctx, "testkit/pgtest/pglite.sh", "start", d.pgDir)
	if err != nil {
		d.pgDir = ""
		return fmt.Errorf("cannot start PGlite (needs node and npm): %w", err)
	}
	d.database = strings.TrimPrefix(strings.TrimSpace(out), "CHOIR_TEST_DATABASE_URL=")
	return nil
}

// debian makes the base image's FROM available with no registry.
func (d *demo) debian(ctx context.Context) error {
	c, err := docker.New(ctx, "")
	if err != nil {
		return err
	}
	defer c.Close()
	d.say("Debian base image (debootstrap the first time: a minute or two, cached after)")
	_, err = imagetest.Ensure(ctx, c)
	return err
}

// startModel serves the offline model on the Docker bridge's gateway
// address, which containers reach; never on every interface.
func (d *demo) startModel(ctx context.Context) error {
	if d.llm.endpoint != "" && d.llm.key != "" {
		return nil
	}
	ip, err := dockertest.BridgeAddr()
	if err != nil {
		return err
	}
	l, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		return fmt.Errorf("listen on the Docker bridge %s: %w", ip, err)
	}
	d.demoModel = &demomodel.Server{}
	d.model = &http.Server{Handler: d.demoModel}
	go d.model.Serve(l)
	d.llm = llmChoice{endpoint: "http://" + l.Addr().String() + "/v1", model: "choir-demo"}
	return nil
}

// startChoird runs choird in the background until teardown.
func (d *demo) startChoird(ctx context.Context) error {
	logf, err := os.Create(filepath.Join(d.work, "choird.stderr"))
	if err != nil {
		return err
	}
	d.choird = exec.Command(filepath.Join(d.bin, "choird"), "--home", d.home)
	d.choird.Env = append(os.Environ(), d.browserEnv...)
	d.choird.Stderr = logf
	if err := d.choird.Start(); err != nil {
		return err
	}
	d.choirdDone = make(chan error, 1)
	go func() { d.choirdDone <- d.choird.Wait(); logf.Close() }()
	deadline := time.Now().Add(60 * time.Second)
	for {
		if err := d.ctl(ctx, nil, io.Discard, "status"); err == nil {
			d.say("choird is ready (its log: %s)", filepath.Join(d.home, "logs", "choird.log"))
			return nil
		}
		select {
		case err := <-d.choirdDone:
			d.choirdDone <- err
			tail, _ := os.ReadFile(filepath.Join(d.work, "choird.stderr"))
			return fmt.Errorf("choird exited: %v\n%s", err, lastLines(tail, 15))
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("choird did not answer within a minute")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (d *demo) build(ctx context.Context) error {
	d.say("choirctl agent build %s", d.agent)
	return d.ctl(ctx, nil, d.stdout, "agent", "build", d.agent)
}

func (d *demo) startAgent(ctx context.Context) error {
	d.say("choirctl agent start %s --dm=operator", d.agent)
	return d.ctl(ctx, nil, d.stdout, "agent", "start", d.agent, "--dm=operator")
}

// scripted sends each line of stdin as one message and prints the replies.
func (d *demo) scripted(ctx context.Context) error {
	sc := bufio.NewScanner(d.stdin)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		fmt.Fprintf(d.stdout, "you> %s\n", line)
		if err := d.ctl(ctx, strings.NewReader(line), d.stdout, "chat", d.agent, "--once", "--wait-cores", "--timeout=3m", "--files", d.filesDir()); err != nil {
			return fmt.Errorf("message %q: %w", line, err)
		}
	}
	return sc.Err()
}

// filesDir is where the chat saves the files the agent sends: kept after
// the demo (CHOIR_DEMO_FILES, else choir-demo-files in the temp directory).
func (d *demo) filesDir() string {
	if dir := os.Getenv("CHOIR_DEMO_FILES"); dir != "" {
		return dir
	}
	return filepath.Join(os.TempDir(), "choir-demo-files")
}

// ctl runs choirctl against the demo's home.
func (d *demo) ctl(ctx context.Context, stdin io.Reader, stdout io.Writer, args ...string) error {
	cmd := exec.CommandContext(ctx, filepath.Join(d.bin, "choirctl"), append([]string{"--home", d.home}, args...)...)
	cmd.Stdin, cmd.Stdout = stdin, stdout
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if stdout == d.stdout {
		cmd.Stderr = d.stderr
	}
	if err := cmd.Run(); err != nil {
		if msg := strings.TrimSpace(stderr.String()); msg != "" {
			return fmt.Errorf("%w: %s", err, msg)
		}
		return err
	}
	return nil
}

// script1 runs one of the project's scripts and returns its stdout.
func (d *demo) script1(ctx context.Context, script string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(d.repoRoot, script), args...)
	cmd.Stderr = d.stderr
	out, err := cmd.Output()
	return string(out), err
}

// teardown stops and removes everything the demo started.
func (d *demo) teardown() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if d.choird != nil && d.choirdDone != nil {
		if d.agent != "" {
			d.ctl(ctx, nil, io.Discard, "agent", "stop", d.agent)
		}
		d.choird.Process.Signal(syscall.SIGTERM)
		select {
		case <-d.choirdDone:
		case <-time.After(90 * time.Second):
			d.choird.Process.Kill()
			<-d.choirdDone
		}
	}
	if d.model != nil {
		d.model.Close()
	}
	d.stopMail()
	d.stopPage()
	if d.pgDir != "" {
		d.script1(ctx, "testkit/pgtest/pglite.sh", "stop", d.pgDir)
	}
	if d.engineDir != "" {
		d.script1(ctx, "testkit/dockertest/engine.sh", "stop", d.engineDir)
	}
	if d.work != "" {
		os.RemoveAll(d.work)
	}
	if d.work != "" || d.choird != nil {
		fmt.Fprintln(d.stdout, "== demo stopped; everything it started is gone")
	}
}

func lastLines(b []byte, n int) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
