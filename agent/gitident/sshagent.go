package gitident

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"os/exec"
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
	add := sandbox.Command(ctx, "ssh-add", "-q", "-")
	add.Env = append(add.Env, "SSH_AUTH_SOCK="+a.sock)
	add.Stdin = strings.NewReader(key)
	if out, err := add.CombinedOutput(); err != nil {
		a.stopLocked()
		return fmt.Errorf("ssh-add - (the key from memory): %v: %s", err, strings.TrimSpace(string(out)))
	}
	a.key = sum
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
