package gateway

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"choir/choird/store"
	"choir/internal/rpc"
	"choir/internal/telegram"
)

// The durable outbox (issue 19): choir.dm.send to a Telegram DM returns as
// soon as the message is a row of the DM's outbox in Postgres; the DM's
// sender (sender.go) delivers the rows in order, at Telegram's pace. The
// console (choirctl chat) is not behind it: it gets the message at once.

// DefaultOutboxMax is how many messages one agent may have waiting for
// Telegram when config.json does not say (agents.<id>.outbox_max): at
// Telegram's one message a second to a chat, about 17 minutes of sending.
const DefaultOutboxMax = 1000

// outboxDir is where a queued message's files wait, relative to the
// workspace: moved out of .choirtmp/send/ when the message is queued (so
// the agent's next message does not name them again), one directory per
// message, removed once it is sent.
const outboxDir = ".choirtmp/outbox"

// OutboxStore is the durable outbox: choird/store's dm_outbox.
type OutboxStore interface {
	QueueOutbox(ctx context.Context, n store.NewOutbox, max int) (store.OutboxMessage, bool, error)
	NextOutbox(ctx context.Context, dm string) (store.OutboxMessage, error)
	OutboxAttempt(ctx context.Context, id int64, part int) error
	OutboxPartSent(ctx context.Context, id int64, part int, telegramID int64, note string, last bool) error
	FailOutbox(ctx context.Context, id int64, reason string) error
	FailQueuedOutbox(ctx context.Context, dm, reason string) (int, error)
	OutboxByKey(ctx context.Context, agentID, key string) (store.OutboxMessage, error)
	PruneOutbox(ctx context.Context, before time.Time) (int, error)
	QueuedOutboxDirs(ctx context.Context) ([]store.OutboxFileDir, error)
}

var _ OutboxStore = (*store.Store)(nil)

// ErrOutboxFull is returned (wrapped, with the numbers and what to do)
// when an agent sends past its cap of queued messages.
var ErrOutboxFull = errors.New("outbox full")

// plan is a queued message as its sender carries it out: the body of its
// outbox row. Its parts go out in order, each recorded once Telegram has it.
type plan struct {
	Kind    string `json:"kind"`
	ReplyTo int64  `json:"reply_to,omitempty"` // Telegram's id of the message answered
	// Workspace is the agent's workspace on the host and Dir the message's
	// directory under it (outboxDir/<hash of the key>), when it has files.
	Workspace string `json:"workspace,omitempty"`
	Dir       string `json:"dir,omitempty"`
	Parts     []part `json:"parts"`
	// Refused are the files not sent for what they were when the message
	// was queued (over the caps), for the closing notice.
	Refused []refusedFile `json:"refused,omitempty"`
}

// part is one Telegram message: a piece of the text, a file, or the
// closing notice of the files not sent (sent only when there are some).
type part struct {
	Text   string `json:"text,omitempty"`
	File   string `json:"file,omitempty"` // inside Dir
	Arg    string `json:"arg,omitempty"`  // the file as the agent named it
	Size   int64  `json:"size,omitempty"`
	Notice bool   `json:"notice,omitempty"`
}

// queue makes msg a row of the DM's outbox: the text split into
// Telegram-sized parts, each file checked and moved from .choirtmp/send/
// into the message's own directory, and a closing notice part when the
// message has files. A message whose key the agent already queued is not
// queued again (nor are its files touched). Past the agent's cap nothing
// is queued and the files go back to .choirtmp/send/ for a later message.
func (g *Gateway) queue(ctx context.Context, agentID string, dm dmInfo, msg rpc.DMSend) error {
	key := msg.ID
	if key == "" {
		key = "choird-" + rpc.NewRequestID()
	}
	if err := checkKey(key); err != nil {
		return err
	}
	p := plan{Kind: msg.Kind, ReplyTo: replyTarget(msg.ReplyTo, dm.bot.name, dm.user)}
	for _, t := range telegram.SplitText(msg.Text, 0) {
		if strings.TrimSpace(t) != "" {
			p.Parts = append(p.Parts, part{Text: t})
		}
	}
	var moved [][2]string // from, to: undone when the row is refused
	var root *os.Root
	if len(msg.Files) > 0 {
		// A message sent again must not be refused for its files, which
		// the first one took.
		if _, err := g.cfg.Outbox.OutboxByKey(ctx, agentID, key); err == nil {
			g.log.Info("message sent again by the agent; it is queued once", keyAgent, agentID, keyDM, dm.name)
			return nil
		}
		ws, err := g.control.WorkspacePath(agentID)
		if err != nil {
			return fmt.Errorf("workspace of %s: %w", agentID, err)
		}
		if root, err = os.OpenRoot(ws); err != nil {
			return fmt.Errorf("open workspace of %s: %w", agentID, err)
		}
		defer root.Close()
		p.Workspace = ws
		p.Dir = outboxDir + "/" + keyDir(agentID, key)
		var refused []notSent
		var files []outFile
		if files, refused, err = g.takeFiles(root, p.Dir, msg.Files, &moved); err != nil {
			return err
		}
		for i, f := range files {
			p.Parts = append(p.Parts, part{File: strconv.Itoa(i) + "/" + path.Base(f.name), Arg: f.arg, Size: f.size})
		}
		for _, f := range refused {
			p.Refused = append(p.Refused, refusedFile{f.arg, f.why})
		}
		p.Parts = append(p.Parts, part{Notice: true})
	}
	body, err := json.Marshal(p)
	if err != nil {
		return fmt.Errorf("queue message for DM %s: %w", dm.name, err)
	}
	max := DefaultOutboxMax
	if g.cfg.OutboxMax != nil {
		if n := g.cfg.OutboxMax(agentID); n > 0 {
			max = n
		}
	}
	m, fresh, err := g.cfg.Outbox.QueueOutbox(ctx, store.NewOutbox{AgentID: agentID, DM: dm.name, Key: key, Body: body}, max)
	if err != nil {
		putBack(root, moved)
		if errors.Is(err, store.ErrOutboxFull) {
			g.log.Warn("message refused: the agent's outbox is full", keyAgent, agentID, keyDM, dm.name, "outbox_max", max)
			return fmt.Errorf("%w: %s already has %d messages waiting for Telegram in DM %s's outbox, its cap (agents.%s.outbox_max in config.json); "+
				"this one was not queued (nothing queued before it is lost, and its files stay in %s/): wait for the DM to catch up "+
				"(choirctl agent status %s shows the depth) and send it again, send fewer and longer messages, or raise the cap",
				ErrOutboxFull, agentID, max, dm.name, agentID, sendDir, agentID)
		}
		return fmt.Errorf("queue message for DM %s: %w", dm.name, err)
	}
	if fresh {
		g.wakeSender(dm.name)
	} else {
		g.log.Info("message sent again by the agent; it is queued once", keyAgent, agentID, keyDM, dm.name, "outbox_id", m.ID)
	}
	return nil
}

// maxKey bounds a message's key (DMSend.ID): a call id is 36 bytes.
const maxKey = 200

// checkKey refuses a key Postgres could not index or store as text.
func checkKey(key string) error {
	if len(key) > maxKey {
		return fmt.Errorf("choir.dm.send: id is %d bytes; at most %d (leave it empty: choird uses the call id)", len(key), maxKey)
	}
	for _, r := range key {
		if r < 0x20 || r == 0x7f || r == utf8.RuneError {
			return fmt.Errorf("choir.dm.send: id %q holds a control character or invalid UTF-8; use printable characters (or leave it empty)", key)
		}
	}
	return nil
}

// takeFiles checks the named files as Deliver always did (a path outside
// .choirtmp/send/, a symlink or a missing file refuses the whole message),
// applies the caps on one message's files, and moves those that will go
// into dir, each in a numbered subdirectory.
func (g *Gateway) takeFiles(root *os.Root, dir string, names []string, moved *[][2]string) ([]outFile, []notSent, error) {
	send, err := root.OpenRoot(sendDir)
	if err != nil {
		return nil, nil, fmt.Errorf("open %s: %w", sendDir, err)
	}
	defer send.Close()
	files, err := checkOutFiles(send, names)
	if err != nil {
		return nil, nil, err
	}
	files, refused := capSend(files, g.cfg.SendMaxFiles, g.cfg.SendMaxBytes)
	for i, f := range files {
		to := dir + "/" + strconv.Itoa(i) + "/" + path.Base(f.name)
		if err := root.MkdirAll(path.Dir(to), 0o700); err != nil {
			putBack(root, *moved)
			return nil, nil, fmt.Errorf("queue file %q: %w", f.arg, err)
		}
		from := sendDir + "/" + f.name
		if err := root.Rename(from, to); err != nil {
			putBack(root, *moved)
			return nil, nil, fmt.Errorf("queue file %q: %w", f.arg, err)
		}
		*moved = append(*moved, [2]string{from, to})
	}
	for _, f := range refused {
		if name, err := sendName(f.arg); err == nil {
			send.Remove(name)
		}
	}
	return files, refused, nil
}

// putBack undoes the moves of a message that was not queued.
func putBack(root *os.Root, moved [][2]string) {
	for _, m := range moved {
		root.Rename(m[1], m[0])
	}
}

// keyDir names a message's file directory after its agent and key.
func keyDir(agentID, key string) string {
	sum := sha256.Sum256([]byte(agentID + "\x00" + key))
	return hex.EncodeToString(sum[:12])
}

// wakeSender tells a DM's sender that its outbox has a new message.
func (g *Gateway) wakeSender(dm string) {
	if s := g.senders[dm]; s != nil {
		select {
		case s.wake <- struct{}{}:
		default:
		}
	}
}

// outboxRetention is how long sent and failed messages stay in the outbox
// (their keys stop a resend; agent status counts the failed ones).
const outboxRetention = 7 * 24 * time.Hour
