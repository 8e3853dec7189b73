package main

// choirctl chat <agent-id> [--once] [--wait-cores] [--timeout D]
//
// The operator's console DM: lines typed are sent to the running agent as
// user messages, and everything the agent sends to its DM (replies, core
// job reports, notices, errors, files, approval requests) is printed as it
// arrives. Commands work as in Telegram: /inject <text> appends to the
// agent's context at its next safe point; /cores lists its core jobs;
// /cancel <job> stops one; /compact folds its working memory; /approve
// <id> and /reject <id> decide an approval; /quit, Ctrl-D or Ctrl-C ends
// the chat.
//
// With --once, the whole of stdin is one message: choirctl prints the reply
// and exits 0, or prints the error and exits 1; --wait-cores also waits for
// the report of every core job that turn started. A session that ends
// before the reply (the agent crashed, or was stopped) ends the chat with
// an error saying how to start the agent again; so does a crash during an
// interactive chat.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"choir/internal/ctl"
	"choir/internal/rpc"
)

func runChat(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "chat", "chat <agent-id> [--once [--wait-cores]] [--timeout D]")
	once := fs.Bool("once", false, "send stdin as one message, print the reply, exit")
	filesDir := fs.String("files", "choir-files", "where to save the files the agent sends")
	waitCores := fs.Bool("wait-cores", false, "with --once: also wait for the reports of the core jobs the turn starts")
	timeout := fs.Duration("timeout", 10*time.Minute, "with --once: give up waiting after this long")
	agentID, err := oneArg(fs, args, "agent id")
	if err != nil {
		return err
	}
	c := e.client()
	defer c.Close()
	// Subscribe before sending, so no reply can slip past.
	streamCtx, stop := context.WithCancel(ctx)
	defer stop()
	out, err := c.Outbox(streamCtx, agentID)
	if err != nil {
		return err
	}
	defer out.Close()
	show := func(m ctl.ConsoleMessage) { printMessage(e, agentID, m, *filesDir) }
	if *once {
		ctx, cancel := context.WithTimeout(ctx, *timeout)
		defer cancel()
		return chatOnce(ctx, e, c, out, agentID, *waitCores, show)
	}
	return chatInteractive(ctx, e, c, out, agentID, show)
}

func chatOnce(ctx context.Context, e *env, c *ctl.Client, out *ctl.OutboxStream, agentID string, waitCores bool, show func(ctl.ConsoleMessage)) error {
	data, err := io.ReadAll(e.stdin)
	if err != nil {
		return err
	}
	text := strings.TrimSpace(string(data))
	if text == "" {
		return usagef("--once sends stdin as the message, and stdin is empty")
	}
	id, err := c.SendMessage(ctx, agentID, text)
	if err != nil {
		return err
	}
	msgs := make(chan ctl.ConsoleMessage)
	errc := make(chan error, 1)
	go func() {
		for {
			m, err := out.Next()
			if err != nil {
				errc <- err
				return
			}
			msgs <- m
		}
	}()
	var replied bool
	var failed error
	pending := map[string]bool{}
	reported := map[string]bool{} // a fast core can report before the reply names it
	for !replied || (waitCores && len(pending) > 0) {
		select {
		case <-ctx.Done():
			if ctx.Err() == context.DeadlineExceeded {
				return fmt.Errorf("no reply from %s in time", agentID)
			}
			return nil
		case err := <-errc:
			return fmt.Errorf("choird ended the chat: %w", err)
		case m := <-msgs:
			show(m)
			switch {
			case m.Ended != nil:
				return sessionEnded(agentID, m.Ended, "before it replied")
			case m.ReplyTo == id && (m.Kind == rpc.DMReply || m.Kind == rpc.DMError):
				replied = true
				if m.Kind == rpc.DMError {
					failed = errors.New(m.Text)
				}
				for _, core := range m.Cores {
					if !reported[core] {
						pending[core] = true
					}
				}
			case m.Kind == rpc.DMCoreReport:
				delete(pending, m.Core)
				reported[m.Core] = true
			}
		}
	}
	return failed
}

// sessionEnded is the error of a chat whose agent's session ended while it
// waited, saying how to go on.
func sessionEnded(agentID string, end *ctl.SessionEnd, while string) error {
	how := "crashed"
	if end.Status != "crashed" {
		how = "was stopped"
	}
	if while != "" {
		how += " " + while
	}
	return fmt.Errorf("%s %s (%s); start it again with `choirctl agent start %s`", agentID, how, end.Reason, agentID)
}

// chatDrainTimeout bounds the wait for answers once input has ended.
const chatDrainTimeout = 5 * time.Minute

func chatInteractive(ctx context.Context, e *env, c *ctl.Client, out *ctl.OutboxStream, agentID string, show func(ctl.ConsoleMessage)) error {
	fmt.Fprintf(e.stdout, "chatting with %s; /inject <text>, /cores, /cancel <job>, /compact, /approve|/reject <id>, /quit\n", agentID)
	// When input ends (piped input), the chat waits for the answers to the
	// messages it sent before it leaves.
	var mu sync.Mutex
	pending := map[string]bool{}
	early := map[string]bool{} // answered before SendMessage returned its id
	answered := make(chan struct{}, 1)
	crashed := make(chan *ctl.SessionEnd, 1) // the agent crashed: the chat is over
	go func() {
		for {
			m, err := out.Next()
			if err != nil {
				if ctx.Err() == nil && len(crashed) == 0 {
					fmt.Fprintf(e.stderr, "choird ended the chat: %v\n", err)
				}
				return
			}
			show(m)
			if m.Ended != nil && m.Ended.Status == "crashed" {
				crashed <- m.Ended
				return
			}
			if m.ReplyTo != "" && (m.Kind == rpc.DMReply || m.Kind == rpc.DMError) {
				mu.Lock()
				if pending[m.ReplyTo] {
					delete(pending, m.ReplyTo)
				} else {
					early[m.ReplyTo] = true
				}
				mu.Unlock()
				select {
				case answered <- struct{}{}:
				default:
				}
			}
		}
	}()
	waitAnswers := func() error {
		deadline := time.After(chatDrainTimeout)
		for {
			mu.Lock()
			n := len(pending)
			mu.Unlock()
			if n == 0 {
				return nil
			}
			select {
			case <-ctx.Done():
				return nil
			case <-deadline:
				return fmt.Errorf("%d messages still unanswered after %s", n, chatDrainTimeout)
			case end := <-crashed:
				return sessionEnded(agentID, end, fmt.Sprintf("with %d messages unanswered", n))
			case <-answered:
			}
		}
	}
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(e.stdin)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	for {
		select {
		case <-ctx.Done():
			return nil
		case end := <-crashed:
			return sessionEnded(agentID, end, "")
		case line, ok := <-lines:
			if !ok {
				return waitAnswers()
			}
			line = strings.TrimSpace(line)
			switch {
			case line == "":
			case line == "/quit":
				return nil
			case strings.HasPrefix(line, "/"):
				if err := chatCommand(ctx, e, c, agentID, line); err != nil {
					fmt.Fprintf(e.stderr, "%s: %v\n", strings.Fields(line)[0], err)
				}
			default:
				id, err := c.SendMessage(ctx, agentID, line)
				if err != nil {
					fmt.Fprintf(e.stderr, "send: %v\n", err)
					continue
				}
				mu.Lock()
				if early[id] {
					delete(early, id)
				} else {
					pending[id] = true
				}
				mu.Unlock()
			}
		}
	}
}

// chatCommand runs one of the console's slash commands.
func chatCommand(ctx context.Context, e *env, c *ctl.Client, agentID, line string) error {
	name, arg, _ := strings.Cut(line, " ")
	arg = strings.TrimSpace(arg)
	session := func() (string, error) {
		st, err := c.Agent(ctx, agentID)
		if err != nil {
			return "", err
		}
		if st.SessionID == "" {
			return "", fmt.Errorf("%s is not running", agentID)
		}
		return st.SessionID, nil
	}
	switch name {
	case "/inject":
		if arg == "" {
			return errors.New("usage: /inject <text>")
		}
		return c.Inject(ctx, agentID, arg)
	case "/cores":
		id, err := session()
		if err != nil {
			return err
		}
		cores, err := c.Cores(ctx, id)
		if err != nil {
			return err
		}
		if len(cores) == 0 {
			fmt.Fprintln(e.stdout, "[cores] none running")
		}
		for _, st := range cores {
			fmt.Fprintf(e.stdout, "[cores] %s: %s (step %d)\n", strings.TrimPrefix(st.Lane, "core:"), st.State, st.Step)
		}
		return nil
	case "/cancel":
		id, err := session()
		if err != nil {
			return err
		}
		if arg == "" {
			return errors.New("usage: /cancel <job>")
		}
		return c.CancelCore(ctx, id, arg)
	case "/compact":
		id, err := session()
		if err != nil {
			return err
		}
		return c.Compact(ctx, id)
	case "/approve", "/reject":
		if arg == "" {
			return fmt.Errorf("usage: %s <approval id>", name)
		}
		a, err := c.Decide(ctx, arg, name == "/approve")
		if err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "[approval %s] %s\n", a.ID, a.Status)
		return nil
	}
	return fmt.Errorf("unknown command; the console knows /inject, /cores, /cancel, /compact, /approve, /reject, /quit")
}

// printMessage shows one message from the agent, saving its files.
func printMessage(e *env, agentID string, m ctl.ConsoleMessage, filesDir string) {
	w := e.stdout
	prefix := agentID + "> "
	if m.Ended != nil {
		fmt.Fprintf(w, "[session] %s's session %s ended: %s (%s)\n", agentID, m.Ended.SessionID, m.Ended.Status, m.Ended.Reason)
		return
	}
	switch m.Kind {
	case rpc.DMCoreReport:
		prefix = fmt.Sprintf("[core %s] ", m.Core)
	case rpc.DMNotice:
		prefix = "[notice] "
	case rpc.DMError:
		prefix = "[error] "
	case rpc.DMApprovalRequest:
		prefix = fmt.Sprintf("[approval %s] ", m.Approval)
		defer fmt.Fprintf(w, "  decide with /approve %s or /reject %s\n", m.Approval, m.Approval)
	case rpc.DMApprovalOutcome:
		prefix = fmt.Sprintf("[approval %s] ", m.Approval)
	}
	if m.Text != "" {
		fmt.Fprintln(w, prefix+m.Text)
	}
	for _, a := range m.Attachments {
		path, err := saveAttachment(filesDir, a)
		if err != nil {
			fmt.Fprintf(e.stderr, "%s[file] %s not saved: %v\n", prefix, a.Name, err)
			continue
		}
		fmt.Fprintf(w, "%s[file] %s (%d bytes)\n", prefix, path, len(a.Data))
	}
}

// saveAttachment writes a file the agent sent into dir under its base name,
// never over an existing file.
func saveAttachment(dir string, a ctl.Attachment) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	name := filepath.Base(filepath.Clean("/" + a.Name))
	if name == "/" || name == "." {
		name = "file"
	}
	ext := filepath.Ext(name)
	stem := strings.TrimSuffix(name, ext)
	for i := 0; i < 1000; i++ {
		candidate := name
		if i > 0 {
			candidate = fmt.Sprintf("%s-%d%s", stem, i, ext)
		}
		p := filepath.Join(dir, candidate)
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if os.IsExist(err) {
			continue
		}
		if err != nil {
			return "", err
		}
		_, err = f.Write(a.Data)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		return p, err
	}
	return "", fmt.Errorf("no free name for %s in %s", name, dir)
}
