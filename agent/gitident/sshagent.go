package gitident

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"choir/agent/sandbox"
)

// sshAgent is the ssh-agent holding the identity's key: started on demand
// as a tool process (the workspace's owner: ssh-agent serves only its own
// uid), so the sandbox's sweep ends it with the tool call that needed it.
type sshAgent struct {
	sock string

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{} // closed when cmd has exited
	key  [32]byte      // hash of the key it holds
}

// agentStart bounds how long ssh-agent may take to make its socket.
const agentStart = 10 * time.Second

// ensure makes sure an ssh-agent runs with key loaded.
func (a *sshAgent) ensure(ctx context.Context, key string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	sum := sha256.Sum256([]byte(key))
	if a.running() && a.key == sum {
		return nil
	}
	a.stopLocked()
	os.Remove(a.sock)
	cmd := sandbox.Command(context.Background(), "ssh-agent", "-D", "-a", a.sock)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start ssh-agent: %w (is openssh-client installed in the image?)", err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	a.cmd, a.done, a.key = cmd, done, [32]byte{}
	deadline := time.NewTimer(agentStart)
	defer deadline.Stop()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		if _, err := os.Stat(a.sock); err == nil {
			break
		}
		select {
		case <-done:
			return fmt.Errorf("ssh-agent exited: %s", strings.TrimSpace(stderr.String()))
		case <-deadline.C:
			a.stopLocked()
			return fmt.Errorf("ssh-agent made no socket at %s within %s", a.sock, agentStart)
		case <-ctx.Done():
			a.stopLocked()
			return ctx.Err()
		case <-tick.C:
		}
	}
	if !strings.HasSuffix(key, "\n") {
		key += "\n"
	}
	if err := a.add(ctx, key); err != nil {
		a.stopLocked()
		return err
	}
	a.key = sum
	return nil
}

// add loads key with `ssh-add -`, the key on its stdin. ssh-add runs as
// root, not as the tools' uid: a tool could otherwise read the key in its
// memory (a same-uid ptrace or /proc/<pid>/mem) while it runs. ssh-agent
// serves only its own uid and root, and root here lacks
// CAP_DAC_OVERRIDE to reach its socket, so ssh-add talks to a root-only
// socket in the agent's directory, which the agent relays to ssh-agent.
func (a *sshAgent) add(ctx context.Context, key string) error {
	relay := filepath.Join(filepath.Dir(filepath.Dir(a.sock)), fmt.Sprintf(".ssh-add.%d.sock", time.Now().UnixNano()))
	var ln net.Listener
	if err := sandbox.AsRoot(func() error {
		l, err := net.Listen("unix", relay)
		if err != nil {
			return err
		}
		ln = l
		return os.Chmod(relay, 0o600)
	}); err != nil {
		if ln != nil {
			ln.Close()
		}
		return fmt.Errorf("ssh-add's socket: %w", err)
	}
	defer sandbox.AsRoot(func() error { return os.Remove(relay) })
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				up, err := net.Dial("unix", a.sock)
				if err != nil {
					return
				}
				defer up.Close()
				go func() { io.Copy(up, c); up.(*net.UnixConn).CloseWrite() }()
				io.Copy(c, up)
			}()
		}
	}()
	cmd := exec.CommandContext(ctx, "ssh-add", "-q", "-")
	cmd.Env = []string{"PATH=" + sandbox.Path, "SSH_AUTH_SOCK=" + relay}
	cmd.Stdin = strings.NewReader(key)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("ssh-add - (the key from memory): %v: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}

func (a *sshAgent) running() bool {
	if a.cmd == nil {
		return false
	}
	select {
	case <-a.done:
		return false
	default:
		return true
	}
}

func (a *sshAgent) stop() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.stopLocked()
}

func (a *sshAgent) stopLocked() {
	if a.cmd == nil {
		return
	}
	if a.running() {
		a.cmd.Process.Kill()
	}
	<-a.done
	a.cmd, a.done = nil, nil
	os.Remove(a.sock)
}
