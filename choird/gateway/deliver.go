package gateway

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"choir/internal/rpc"
)

// Deliver sends what an agent sent to its bound DM (choir.dm.send; the
// lifecycle's Outbox): the text first, split at 4096 characters and paced
// by the bot's limiter, then each file from the agent's .choirtmp/send/,
// as a photo, voice note, video or document by its extension, deleting
// each once Telegram has it. Every file is checked before anything is
// sent; a path outside .choirtmp/send/ refuses the whole message. One
// DMSend's messages are never interleaved with another's in the same DM.
func (g *Gateway) Deliver(ctx context.Context, agentID, dmName string, msg rpc.DMSend) error {
	if g.consoleDMs[dmName] {
		return nil // the console delivers it to choirctl chat
	}
	dm, ok := g.dms[dmName]
	if !ok {
		return fmt.Errorf("dm %q is not a Telegram DM in config.json", dmName)
	}
	if bound, ok := g.control.AgentForDM(dmName); ok && bound != agentID {
		return fmt.Errorf("dm %q is bound to %s, not %s", dmName, bound, agentID)
	}
	if strings.TrimSpace(msg.Text) == "" && len(msg.Files) == 0 {
		return errors.New("nothing to send: the message has neither text nor files")
	}
	b := dm.bot
	var send *os.Root
	var files []outFile
	if len(msg.Files) > 0 {
		ws, err := g.control.WorkspacePath(agentID)
		if err != nil {
			return fmt.Errorf("workspace of %s: %w", agentID, err)
		}
		root, err := os.OpenRoot(ws)
		if err != nil {
			return fmt.Errorf("open workspace of %s: %w", agentID, err)
		}
		defer root.Close()
		if send, err = root.OpenRoot(sendDir); err != nil {
			return fmt.Errorf("open %s: %w", sendDir, err)
		}
		defer send.Close()
		if files, err = checkOutFiles(send, msg.Files); err != nil {
			return err
		}
	}
	replyTo := replyTarget(msg.ReplyTo, b.name, dm.user)

	mu := b.chatLock(dm.user)
	mu.Lock()
	defer mu.Unlock()
	if strings.TrimSpace(msg.Text) != "" {
		if _, err := b.sendTextLocked(ctx, dm.user, msg.Text, replyTo, nil); err != nil {
			return fmt.Errorf("deliver to DM %s: %w", dmName, err)
		}
		replyTo = 0
	}
	for i, f := range files {
		if err := b.sendFile(ctx, send, dm.user, f, replyTo); err != nil {
			return fmt.Errorf("deliver file %d of %d (%s) to DM %s: %w", i+1, len(files), f.arg, dmName, err)
		}
		if err := send.Remove(f.name); err != nil {
			b.log.Warn("sent file not removed from .choirtmp/send", keyAgent, agentID, "file", f.arg, keyError, err.Error())
		}
	}
	return nil
}
