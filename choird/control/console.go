package control

import (
	"context"
	"fmt"
	"io"
	"os"
	"path"
	"strings"
	"sync"

	"choir/internal/ctl"
	"choir/internal/rpc"
)

// Console is the operator's DM: `choirctl chat` subscribers of an agent
// receive everything the agent sends to its DM, files attached.
type Console struct {
	// Workspace finds a running agent's workspace (for its files);
	// IsConsoleDM tells the console's own DMs, whose files nobody else
	// delivers, so the console removes them once read.
	Workspace   func(agentID string) (string, error)
	IsConsoleDM func(dm string) bool

	mu   sync.Mutex
	subs map[string]map[*subscriber]struct{}
}

type subscriber struct {
	ch   chan ctl.ConsoleMessage
	done chan struct{}
}

// consoleBuffer is how many messages a slow subscriber may fall behind
// before Deliver waits for it.
const consoleBuffer = 64

// maxAttachment bounds a file attached to a console message.
const maxAttachment = 20 << 20

// Subscribe returns a channel of the agent's outgoing messages and a
// function that ends the subscription.
func (c *Console) Subscribe(agentID string) (<-chan ctl.ConsoleMessage, func()) {
	s := &subscriber{ch: make(chan ctl.ConsoleMessage, consoleBuffer), done: make(chan struct{})}
	c.mu.Lock()
	if c.subs == nil {
		c.subs = map[string]map[*subscriber]struct{}{}
	}
	if c.subs[agentID] == nil {
		c.subs[agentID] = map[*subscriber]struct{}{}
	}
	c.subs[agentID][s] = struct{}{}
	c.mu.Unlock()
	var once sync.Once
	return s.ch, func() {
		once.Do(func() {
			c.mu.Lock()
			delete(c.subs[agentID], s)
			c.mu.Unlock()
			close(s.done)
		})
	}
}

// Deliver hands a message to every subscriber of the agent, with its files
// read from the workspace's .choirtmp/send/, waiting for a subscriber that
// has fallen behind rather than dropping the message, until it leaves or
// ctx ends.
func (c *Console) Deliver(ctx context.Context, agentID, dm string, msg rpc.DMSend) error {
	c.mu.Lock()
	subs := make([]*subscriber, 0, len(c.subs[agentID]))
	for s := range c.subs[agentID] {
		subs = append(subs, s)
	}
	c.mu.Unlock()
	consoleDM := c.IsConsoleDM != nil && c.IsConsoleDM(dm)
	if len(subs) == 0 && !consoleDM {
		return nil
	}
	out := ctl.ConsoleMessage{DMSend: msg}
	if len(msg.Files) > 0 {
		files, err := c.readFiles(agentID, msg.Files, consoleDM)
		if err != nil {
			return err
		}
		out.Attachments = files
	}
	for _, s := range subs {
		select {
		case s.ch <- out:
		case <-s.done:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// SessionEnded tells every subscriber of the agent that its session ended
// (lifecycle.SessionEnds): `choirctl chat` waiting for a reply learns that
// none will come. After a crash the outbox stream ends with it.
func (c *Console) SessionEnded(ctx context.Context, agentID string, end ctl.SessionEnd) {
	c.mu.Lock()
	subs := make([]*subscriber, 0, len(c.subs[agentID]))
	for s := range c.subs[agentID] {
		subs = append(subs, s)
	}
	c.mu.Unlock()
	for _, s := range subs {
		select {
		case s.ch <- ctl.ConsoleMessage{Ended: &end}:
		case <-s.done:
		case <-ctx.Done():
			return
		}
	}
}

// readFiles reads the named files under .choirtmp/send/ through os.Root (a
// symlink the agent planted cannot lead outside), removing them when the
// console is their only destination.
func (c *Console) readFiles(agentID string, names []string, remove bool) ([]ctl.Attachment, error) {
	if c.Workspace == nil {
		return nil, fmt.Errorf("files cannot reach the console in this choird")
	}
	ws, err := c.Workspace(agentID)
	if err != nil {
		return nil, err
	}
	root, err := os.OpenRoot(ws)
	if err != nil {
		return nil, fmt.Errorf("open the workspace of %s: %w", agentID, err)
	}
	defer root.Close()
	send, err := root.OpenRoot(".choirtmp/send")
	if err != nil {
		return nil, fmt.Errorf("open .choirtmp/send: %w", err)
	}
	defer send.Close()
	var out []ctl.Attachment
	for _, name := range names {
		rel, ok := strings.CutPrefix(path.Clean(name), ".choirtmp/send/")
		if !ok || rel == "" || strings.HasPrefix(rel, "../") {
			return nil, fmt.Errorf("file %q is not under .choirtmp/send/", name)
		}
		f, err := send.Open(rel)
		if err != nil {
			return nil, fmt.Errorf("file %s: %w", name, err)
		}
		fi, err := f.Stat()
		if err == nil && !fi.Mode().IsRegular() {
			err = fmt.Errorf("not a regular file")
		}
		var data []byte
		if err == nil {
			data, err = io.ReadAll(io.LimitReader(f, maxAttachment+1))
		}
		f.Close()
		if err == nil && len(data) > maxAttachment {
			err = fmt.Errorf("larger than %d MiB", maxAttachment>>20)
		}
		if err != nil {
			return nil, fmt.Errorf("file %s: %w", name, err)
		}
		out = append(out, ctl.Attachment{Name: path.Base(rel), Data: data})
		if remove {
			send.Remove(rel)
		}
	}
	return out, nil
}
