package pgtest

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"
)

// serverScript is pglite-socket's own server, as npm ships it (no patch:
// the store must work on the server users run); installed is a file of the
// npm packages package.json pins. serverArgs serve pgvector, one
// connection at a time (the server's connections would share its one
// backend session otherwise), in memory, on a port the kernel picks.
const (
	serverScript = "node_modules/@electric-sql/pglite-socket/dist/scripts/server.js"
	installed    = "node_modules/@electric-sql/pglite-socket/package.json"
)

var serverArgs = []string{"--host=127.0.0.1", "--port=0", "--db=memory://", "--extensions=vector", "--max-connections=1"}

// startTimeout bounds PGlite's start (1.5-5 s on two busy cores).
const startTimeout = 2 * time.Minute

// errNoNode and errNotInstalled say what is missing for a private server.
var (
	errNoNode       = errors.New("node is not on PATH: install Node.js 20+ (apt-get install nodejs npm)")
	errNotInstalled = errors.New("PGlite is not installed: run `npm ci --prefix testkit/pgtest` (make test does)")
)

// server is a PGlite process started by this test binary.
type server struct {
	addr    string
	logPath string
	stopc   chan struct{} // closed to ask the process to stop
	done    chan struct{} // closed when the process has exited
}

// packageDir finds testkit/pgtest: above the working directory (go test
// runs in the package's directory), else beside this source file.
func packageDir() (string, error) {
	if dir, err := os.Getwd(); err == nil {
		for d := dir; ; d = filepath.Dir(d) {
			if b, err := os.ReadFile(filepath.Join(d, "go.mod")); err == nil && strings.HasPrefix(string(b), "module choir\n") {
				return filepath.Join(d, "testkit", "pgtest"), nil
			}
			if filepath.Dir(d) == d {
				break
			}
		}
	}
	if _, file, _, ok := runtime.Caller(0); ok {
		return filepath.Dir(file), nil
	}
	return "", errors.New("cannot find the choir module's testkit/pgtest directory")
}

// startServer starts PGlite with pgvector, in memory, on a port the kernel
// picks, and waits until it listens.
func startServer() (*server, error) {
	node, err := exec.LookPath("node")
	if err != nil {
		return nil, errNoNode
	}
	dir, err := packageDir()
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(filepath.Join(dir, installed)); err != nil {
		return nil, errNotInstalled
	}
	logf, err := os.CreateTemp("", "pgtest-pglite-*.log")
	if err != nil {
		return nil, err
	}
	s := &server{logPath: logf.Name(), stopc: make(chan struct{}), done: make(chan struct{})}
	pr, pw, err := os.Pipe()
	if err != nil {
		logf.Close()
		return nil, err
	}
	cmd := exec.Command(node, append([]string{serverScript}, serverArgs...)...)
	cmd.Dir = dir
	cmd.Stdout = pw
	cmd.Stderr = logf
	cmd.SysProcAttr = sysProcAttr()

	// The process is started from a goroutine that keeps its OS thread for
	// the process's whole life: the parent-death signal (Linux) is tied to
	// that thread, so PGlite dies with this test binary, however it ends.
	started := make(chan error, 1)
	exited := make(chan struct{})
	go func() {
		runtime.LockOSThread()
		err := cmd.Start()
		pw.Close()
		started <- err
		if err != nil {
			return
		}
		go func() {
			cmd.Wait()
			close(exited)
		}()
		select {
		case <-exited:
			return
		case <-s.stopc:
		}
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
	}()
	if err := <-started; err != nil {
		pr.Close()
		logf.Close()
		return nil, fmt.Errorf("start %s: %w", serverScript, err)
	}

	// Copy stdout to the log until the process exits, and find the
	// "listening" line in it.
	port := make(chan int, 1)
	go func() {
		defer close(s.done)
		defer logf.Close()
		defer pr.Close()
		sc := bufio.NewScanner(pr)
		found := false
		for sc.Scan() {
			line := sc.Text()
			fmt.Fprintln(logf, line)
			if p, ok := listeningPort(line); ok && !found {
				found = true
				port <- p
			}
		}
		io.Copy(io.Discard, pr)
		<-exited
	}()
	timer := time.NewTimer(startTimeout)
	defer timer.Stop()
	select {
	case p := <-port:
		s.addr = fmt.Sprintf("127.0.0.1:%d", p)
		return s, nil
	case <-s.done:
		return nil, fmt.Errorf("PGlite exited during start: %s", s.logTail())
	case <-timer.C:
		err := fmt.Errorf("PGlite did not listen within %v: %s", startTimeout, s.logTail())
		s.stop()
		return nil, err
	}
}

// listeningPort reads the port from PGlite's
// `PGLiteSocketServer listening on {"port":N,"host":"..."}` line.
func listeningPort(line string) (int, bool) {
	const prefix = "PGLiteSocketServer listening on "
	rest, ok := strings.CutPrefix(line, prefix)
	if !ok {
		return 0, false
	}
	var v struct{ Port int }
	if err := json.Unmarshal([]byte(rest), &v); err != nil || v.Port == 0 {
		return 0, false
	}
	return v.Port, true
}

// stop ends the process (SIGTERM, then SIGKILL after 10 s) and removes its
// log; safe to call twice.
func (s *server) stop() {
	select {
	case <-s.stopc:
	default:
		close(s.stopc)
	}
	<-s.done
	os.Remove(s.logPath)
}

// logTail is the end of the server's log, for error messages.
func (s *server) logTail() string {
	b, _ := os.ReadFile(s.logPath)
	const max = 2000
	if len(b) > max {
		b = b[len(b)-max:]
	}
	return fmt.Sprintf("log %s: %s", s.logPath, strings.TrimSpace(string(b)))
}
