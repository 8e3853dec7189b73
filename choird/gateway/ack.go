package gateway

import (
	"os"
	"path"
	"slices"
	"strings"
	"sync"

	"choir/internal/rpc"
)

// What "the agent acknowledges receipt" of a file means (§19.5): the
// agent has answered the user message that carried it. Every user message
// gets one answer, a choir.dm.send of kind reply (or error) whose ReplyTo
// is the message's id; when that answer names core jobs its turn started
// (DMSend.Cores), the acknowledgement waits for each of them to report
// (kind core_report, Core), since a core job may still read the file.
// Then choird removes the message's files from .choirtmp/recv/. A file
// the agent wants to keep must be copied out of .choirtmp/ before then.
//
// The book lives in choird's memory: after a restart of choird (or of the
// agent, whose unanswered messages are then never answered) the files of
// unacknowledged messages stay until recv/'s cap removes them, oldest
// first.

// maxPending bounds the messages the book remembers per agent; the oldest
// are forgotten first (their files are left to the cap).
const maxPending = 1000

// ackBook remembers, per agent, the received files of each user message
// not yet acknowledged. Its zero value is ready to use.
type ackBook struct {
	mu      sync.Mutex
	byAgent map[string]*agentAcks
}

type agentAcks struct {
	pending  []*pendingMsg   // oldest first
	reported map[string]bool // core jobs that reported before the reply named them
}

type pendingMsg struct {
	id      string
	files   []string        // names inside .choirtmp/recv
	replied bool            // the reply arrived; waiting is only for cores
	cores   map[string]bool // core jobs yet to report
}

func (a *ackBook) agent(id string) *agentAcks {
	if a.byAgent == nil {
		a.byAgent = map[string]*agentAcks{}
	}
	aa := a.byAgent[id]
	if aa == nil {
		aa = &agentAcks{reported: map[string]bool{}}
		a.byAgent[id] = aa
	}
	return aa
}

// add records the files of a user message passed on to agent.
func (a *ackBook) add(agent, msgID string, files []string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	aa := a.agent(agent)
	aa.pending = append(aa.pending, &pendingMsg{id: msgID, files: files})
	if len(aa.pending) > maxPending {
		aa.pending = aa.pending[len(aa.pending)-maxPending:]
	}
}

// forget drops files that are gone already (removed by the cap), given as
// workspace paths.
func (a *ackBook) forget(agent string, paths []string) {
	gone := map[string]bool{}
	for _, p := range paths {
		gone[path.Base(p)] = true
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	aa := a.agent(agent)
	for _, p := range aa.pending {
		p.files = slices.DeleteFunc(p.files, func(f string) bool { return gone[f] })
	}
}

// settle applies what the agent sent to its DM and returns the received
// files it acknowledged, to be removed.
func (a *ackBook) settle(agent string, msg rpc.DMSend) []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	aa := a.agent(agent)
	switch {
	case (msg.Kind == rpc.DMReply || msg.Kind == rpc.DMError) && msg.ReplyTo != "":
		for _, p := range aa.pending {
			if p.id != msg.ReplyTo || p.replied {
				continue
			}
			p.replied = true
			p.cores = map[string]bool{}
			for _, c := range msg.Cores {
				if aa.reported[c] {
					delete(aa.reported, c)
				} else {
					p.cores[c] = true
				}
			}
		}
	case msg.Kind == rpc.DMCoreReport && msg.Core != "":
		waited := false
		for _, p := range aa.pending {
			if p.replied && p.cores[msg.Core] {
				delete(p.cores, msg.Core)
				waited = true
			}
		}
		if !waited {
			if len(aa.reported) >= maxPending {
				clear(aa.reported)
			}
			aa.reported[msg.Core] = true
		}
	default:
		return nil
	}
	var done []string
	keep := aa.pending[:0]
	for _, p := range aa.pending {
		if p.replied && len(p.cores) == 0 {
			done = append(done, p.files...)
			continue
		}
		keep = append(keep, p)
	}
	clear(aa.pending[len(keep):])
	aa.pending = keep
	return done
}

// removeReceived removes acknowledged files from the agent's
// .choirtmp/recv/, through an os.Root (no symlink is followed).
func (g *Gateway) removeReceived(agentID string, names []string) {
	if len(names) == 0 {
		return
	}
	ws, err := g.control.WorkspacePath(agentID)
	if err != nil {
		return
	}
	root, err := os.OpenRoot(ws)
	if err != nil {
		return
	}
	defer root.Close()
	recv, err := root.OpenRoot(recvDir)
	if err != nil {
		return
	}
	defer recv.Close()
	for _, n := range names {
		if strings.ContainsAny(n, `/\`) {
			continue
		}
		if err := recv.Remove(n); err != nil && !os.IsNotExist(err) {
			g.log.Warn("acknowledged file not removed from "+recvDir, keyAgent, agentID, "file", n, keyError, err.Error())
		}
	}
}
