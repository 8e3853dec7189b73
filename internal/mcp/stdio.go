package mcp

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Stdio is the stdio transport: newline-delimited JSON-RPC on the server's
// stdin and stdout, its stderr read line by line for the log.
type Stdio struct {
	cmd    *exec.Cmd
	r      io.Reader
	w      io.WriteCloser
	onErr  func(line string)
	desc   string
	closer []io.Closer // our ends of the pipes

	wmu sync.Mutex

	mu      sync.Mutex
	tail    []string // last stderr lines, for the error when it dies
	exited  chan struct{}
	errDone chan struct{} // closed when stderr has been read to its end
	waitErr error
	s       sink
}

// Grace periods of Close for a server process: after stdin is closed, then
// after SIGTERM, before SIGKILL.
const (
	stdioExitGrace = 2 * time.Second
	stderrTail     = 8
	stderrGrace    = 500 * time.Millisecond
	// stdioWriteGrace is how long a write may still take after its
	// context ended.
	stdioWriteGrace = time.Second
	maxStderrLine   = 4096
)

// NewStdio returns a transport that starts cmd (at Connect) with its stdin,
// stdout and stderr connected to the client; cmd's Stdin, Stdout and Stderr
// must be nil. stderr, when not nil, receives each line the server writes
// to its stderr (lines are cut at 4 KiB). Close closes the server's stdin,
// waits for it to exit, then sends SIGTERM and finally SIGKILL.
func NewStdio(cmd *exec.Cmd, stderr func(line string)) *Stdio {
	desc := "stdio server " + filepath.Base(cmd.Path)
	return &Stdio{cmd: cmd, onErr: stderr, desc: desc, exited: make(chan struct{}), errDone: make(chan struct{})}
}

// NewStdioPipes returns a stdio transport over a server reached some other
// way (a process the caller supervises, or an in-process server in tests):
// r is the server's output, w its input. Close closes w (and r if it is an
// io.Closer).
func NewStdioPipes(r io.Reader, w io.WriteCloser) *Stdio {
	return &Stdio{r: r, w: w, desc: "stdio server (pipes)", exited: make(chan struct{})}
}

// String implements Transport.
func (t *Stdio) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.desc
}

// Pid is the server process's id, 0 before it started or for pipes.
func (t *Stdio) Pid() int {
	if t.cmd == nil || t.cmd.Process == nil {
		return 0
	}
	return t.cmd.Process.Pid
}

func (t *Stdio) start(ctx context.Context, s sink, lim limits) error {
	t.s = s
	if t.cmd != nil {
		if err := t.startProcess(); err != nil {
			return err
		}
	} else {
		close(t.exited)
	}
	go t.read(lim.maxMessage)
	return nil
}

func (t *Stdio) startProcess() error {
	c := t.cmd
	if c.Stdin != nil || c.Stdout != nil || c.Stderr != nil {
		return errors.New("NewStdio: the command's Stdin, Stdout and Stderr must be nil: the transport connects them")
	}
	inR, inW, err := os.Pipe()
	if err != nil {
		return err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		outR.Close()
		outW.Close()
		return err
	}
	c.Stdin, c.Stdout, c.Stderr = inR, outW, errW
	err = c.Start()
	inR.Close()
	outW.Close()
	errW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		errR.Close()
		return fmt.Errorf("start %s: %w", c.Path, err)
	}
	t.mu.Lock()
	t.desc = fmt.Sprintf("stdio server %s (pid %d)", filepath.Base(c.Path), c.Process.Pid)
	t.mu.Unlock()
	t.r, t.w = outR, inW
	t.closer = []io.Closer{outR}
	go t.readStderr(errR)
	go func() {
		err := c.Wait()
		t.mu.Lock()
		t.waitErr = err
		t.mu.Unlock()
		close(t.exited)
	}()
	return nil
}

// read delivers each stdout line; a line over the limit ends the connection
// (its id cannot be known, so no single request can be failed instead).
func (t *Stdio) read(max int) {
	br := bufio.NewReaderSize(t.r, 64<<10)
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if len(line)+len(chunk) > max+1 {
			t.s.lost(errTooLarge(t.String()+" stdout", max))
			t.kill()
			return
		}
		line = append(line, chunk...)
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if len(bytes.TrimSpace(line)) > 0 {
			t.s.receive(line)
		}
		line = line[:0]
		if err != nil {
			t.s.lost(t.endErr(err))
			return
		}
	}
}

// endErr says why stdout ended: the process's exit when it exited.
func (t *Stdio) endErr(readErr error) error {
	if t.cmd == nil {
		if errors.Is(readErr, io.EOF) {
			return fmt.Errorf("%s closed its output", t)
		}
		return fmt.Errorf("%s: read: %w", t, readErr)
	}
	select {
	case <-t.exited:
	case <-time.After(stdioExitGrace):
		return fmt.Errorf("%s closed its stdout but did not exit", t)
	}
	select { // its last words on stderr (a child may hold stderr open: do not wait long)
	case <-t.errDone:
	case <-time.After(stderrGrace):
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	msg := fmt.Sprintf("%s exited", t.desc)
	if t.waitErr != nil {
		msg += ": " + t.waitErr.Error()
	} else {
		msg += " with status 0"
	}
	if len(t.tail) > 0 {
		msg += "; its last stderr lines: " + strings.Join(t.tail, " | ")
	}
	return errors.New(msg)
}

func (t *Stdio) readStderr(r io.ReadCloser) {
	defer close(t.errDone)
	defer r.Close()
	br := bufio.NewReaderSize(r, maxStderrLine)
	for {
		line, err := br.ReadSlice('\n')
		long := errors.Is(err, bufio.ErrBufferFull)
		text := strings.TrimRight(string(line), "\r\n")
		if long {
			text += " …(cut)"
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = br.ReadSlice('\n')
			}
		}
		if text != "" {
			t.mu.Lock()
			t.tail = append(t.tail, text)
			if len(t.tail) > stderrTail {
				t.tail = t.tail[1:]
			}
			t.mu.Unlock()
			if t.onErr != nil {
				t.onErr(text)
			}
		}
		if err != nil {
			return
		}
	}
}

// send writes one line. A write the server does not take within
// stdioWriteGrace after ctx ends (it stopped reading its stdin) breaks the
// framing, so it ends the connection; a write that completes in the grace
// counts as sent, so a call cancelled while its request was being written
// can still be cancelled at the server.
func (t *Stdio) send(ctx context.Context, m outgoing) error {
	buf := make([]byte, 0, len(m.data)+1)
	buf = append(append(buf, m.data...), '\n')
	t.wmu.Lock()
	defer t.wmu.Unlock()
	if f, ok := t.w.(*os.File); ok {
		if dl, ok := ctx.Deadline(); ok {
			f.SetWriteDeadline(dl.Add(stdioWriteGrace))
		} else {
			f.SetWriteDeadline(time.Time{})
		}
		stop := context.AfterFunc(ctx, func() { f.SetWriteDeadline(time.Now().Add(stdioWriteGrace)) })
		_, err := f.Write(buf)
		stop()
		return t.writeErr(ctx, err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := t.w.Write(buf)
		done <- err
	}()
	select {
	case err := <-done:
		return t.writeErr(ctx, err)
	case <-ctx.Done():
	}
	select {
	case err := <-done:
		return t.writeErr(ctx, err)
	case <-time.After(stdioWriteGrace):
	}
	t.w.Close()
	err := fmt.Errorf("%s did not read its input: %w", t, context.Cause(ctx))
	t.s.lost(err)
	return err
}

func (t *Stdio) writeErr(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		err = fmt.Errorf("%s did not read its stdin: %w", t, context.Cause(ctx))
		t.w.Close()
		t.s.lost(err)
		return err
	}
	return fmt.Errorf("write to %s: %w", t, err)
}

func (t *Stdio) negotiated(string)      {}
func (t *Stdio) opened(context.Context) {}
func (t *Stdio) abandon(string)         {}

func (t *Stdio) kill() {
	if t.cmd != nil && t.cmd.Process != nil {
		t.cmd.Process.Kill()
	}
}

// close follows the spec's stdio shutdown: close stdin, wait, SIGTERM,
// wait, SIGKILL.
func (t *Stdio) close() error {
	t.w.Close()
	if t.cmd == nil {
		if c, ok := t.r.(io.Closer); ok {
			c.Close()
		}
		return nil
	}
	if t.cmd.Process == nil {
		return nil
	}
	defer func() {
		for _, c := range t.closer {
			c.Close()
		}
	}()
	select {
	case <-t.exited:
		return nil
	case <-time.After(stdioExitGrace):
	}
	t.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-t.exited:
		return nil
	case <-time.After(stdioExitGrace):
	}
	t.cmd.Process.Kill()
	<-t.exited
	return fmt.Errorf("%s did not exit after its stdin closed and SIGTERM; killed", t)
}
