package control

import (
	"context"
	"sync"

	"choir/internal/rpc"
)

// Console is the operator's DM: `choirctl chat` subscribers of an agent
// receive everything the agent sends to its bound DM.
type Console struct {
	mu   sync.Mutex
	subs map[string]map[*subscriber]struct{}
}

type subscriber struct {
	ch   chan rpc.DMSend
	done chan struct{}
}

// consoleBuffer is how many messages a slow subscriber may fall behind
// before Deliver waits for it.
const consoleBuffer = 64

// Subscribe returns a channel of the agent's outgoing messages and a
// function that ends the subscription.
func (c *Console) Subscribe(agentID string) (<-chan rpc.DMSend, func()) {
	s := &subscriber{ch: make(chan rpc.DMSend, consoleBuffer), done: make(chan struct{})}
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

// Deliver hands a message to every subscriber of the agent, waiting for one
// that has fallen behind rather than dropping the message, until it leaves
// or ctx ends.
func (c *Console) Deliver(ctx context.Context, agentID, dm string, msg rpc.DMSend) error {
	c.mu.Lock()
	subs := make([]*subscriber, 0, len(c.subs[agentID]))
	for s := range c.subs[agentID] {
		subs = append(subs, s)
	}
	c.mu.Unlock()
	for _, s := range subs {
		select {
		case s.ch <- msg:
		case <-s.done:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}
