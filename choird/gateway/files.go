package gateway

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"strings"
	"unicode"
	"unicode/utf8"

	"choir/internal/rpc"
	"choir/internal/telegram"
)

// The agent's file exchange directories, relative to its workspace (§19.5).
const (
	recvDir = ".choirtmp/recv"
	sendDir = ".choirtmp/send"
)

// inbound is a file a message carries.
type inbound struct {
	fileID string
	name   string // as the user's client named it, or made up by kind
	size   int64  // 0 when Telegram did not say
}

func hasFile(m *telegram.Message) bool {
	_, ok := fileOf(m)
	return ok
}

// fileOf picks a message's file: a document, the largest size of a photo,
// a voice note, an audio file or a video.
func fileOf(m *telegram.Message) (inbound, bool) {
	switch {
	case m.Document != nil:
		return inbound{m.Document.FileID, or(m.Document.FileName, "document"), m.Document.FileSize}, true
	case len(m.Photo) > 0:
		p := m.LargestPhoto()
		return inbound{p.FileID, "photo.jpg", p.FileSize}, true
	case m.Voice != nil:
		return inbound{m.Voice.FileID, "voice.ogg", m.Voice.FileSize}, true
	case m.Audio != nil:
		return inbound{m.Audio.FileID, or(m.Audio.FileName, "audio.mp3"), m.Audio.FileSize}, true
	case m.Video != nil:
		return inbound{m.Video.FileID, or(m.Video.FileName, "video.mp4"), m.Video.FileSize}, true
	}
	return inbound{}, false
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// receiveFile stores a file in the bound agent's .choirtmp/recv/ and
// passes it on as a UserMessage attachment, with the caption as its text.
// A voice note or audio file is transcribed first when a Transcriber is
// configured: the text is the message, the audio stays attached. The
// message's files are remembered until the agent acknowledges it (see
// ackBook); older files make room when recv/ is over its cap, and the
// agent is told which.
func (g *Gateway) receiveFile(ctx context.Context, b *bot, dm dmInfo, m *telegram.Message) {
	agent, ok := g.control.AgentForDM(dm.name)
	if !ok {
		b.reply(ctx, dm, noAgentText(dm))
		return
	}
	f, _ := fileOf(m)
	if limit := min(g.cfg.MaxFileSize, g.cfg.RecvMaxBytes); f.size > limit {
		b.reply(ctx, dm, fmt.Sprintf("That file is %s; the limit is %s. Nothing was passed on.", mb(f.size), mb(limit)))
		return
	}
	ws, err := g.control.WorkspacePath(agent)
	if err != nil {
		b.reply(ctx, dm, fmt.Sprintf("Could not receive the file for %s: %v", agent, err))
		return
	}
	got, err := g.download(ctx, b, ws, m.MessageID, f)
	if err != nil {
		b.log.Warn("inbound file not stored", keyDM, dm.name, keyAgent, agent, keyError, err.Error())
		if errors.Is(err, telegram.ErrFileTooLarge) {
			b.reply(ctx, dm, fmt.Sprintf("That file is over the limit of %s. Nothing was passed on.", mb(min(g.cfg.MaxFileSize, g.cfg.RecvMaxBytes))))
			return
		}
		b.reply(ctx, dm, "Could not receive the file: "+err.Error())
		return
	}
	rel := recvDir + "/" + got.name
	text := strings.TrimSpace(m.Caption)
	if g.cfg.Transcriber != nil && (m.Voice != nil || m.Audio != nil) {
		heard, err := g.transcribe(ctx, ws, got.name)
		if err != nil {
			b.log.Warn("voice note not transcribed", keyDM, dm.name, keyAgent, agent, keyError, err.Error())
			b.reply(ctx, dm, fmt.Sprintf("Could not transcribe that (%s); %s gets the audio as a file.", oneLine(err.Error(), 300), agent))
			text = joinText(text, "[choird could not transcribe this voice note ("+oneLine(err.Error(), 300)+"); the audio is attached.]")
		} else {
			text = joinText(text, heard)
		}
	}
	if len(got.evicted) > 0 {
		g.acks.forget(agent, got.evicted)
		what := fmt.Sprintf("%d older received files", len(got.evicted))
		if len(got.evicted) == 1 {
			what = "1 older received file"
		}
		text = joinText(text, fmt.Sprintf("[choird removed %s to keep %s/ within %d files and %s: %s]",
			what, recvDir, g.cfg.RecvMaxFiles, mb(g.cfg.RecvMaxBytes), nameList(got.evicted, 5)))
	}
	id := messageID(b.name, dm.user, m.MessageID)
	msg := rpc.UserMessage{ID: id, From: dm.name, Text: text, Attachments: []string{rel}}
	g.acks.add(agent, id, []string{got.name})
	if _, err := g.control.SendUserMessage(agent, msg); err != nil {
		b.log.Warn("user message with a file not delivered to the agent", keyDM, dm.name, keyAgent, agent, keyError, err.Error())
		b.reply(ctx, dm, fmt.Sprintf("Stored %s, but could not pass it on to %s: %v", rel, agent, err))
	}
}

// mb says a size for a DM: in MB, or in KB or bytes when smaller.
func mb(n int64) string {
	switch {
	case n < 1<<10:
		return fmt.Sprintf("%d bytes", n)
	case n < 1<<20:
		return fmt.Sprintf("%.1f KB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%.1f MB", float64(n)/(1<<20))
}

// joinText puts b after a, a blank line between them when both are set.
func joinText(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "\n\n" + b
}

// oneLine shortens an error for a DM: one line, at most n bytes.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		cut := n
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}

// nameList names up to n files, then how many more.
func nameList(names []string, n int) string {
	if len(names) <= n {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:n], ", "), len(names)-n)
}

// stored is a file download kept: its name in .choirtmp/recv and the
// older files removed to make room for it.
type stored struct {
	name    string
	evicted []string
}

// download stores f under ws/.choirtmp/recv with a unique sanitized name,
// then keeps recv/ within its caps by removing the oldest other files.
// The directory is reached through an os.Root at the workspace, so no
// symlink the agent planted can send the write outside it.
func (g *Gateway) download(ctx context.Context, b *bot, ws string, msgID int64, f inbound) (stored, error) {
	root, err := os.OpenRoot(ws)
	if err != nil {
		return stored{}, fmt.Errorf("open workspace: %w", err)
	}
	defer root.Close()
	if err := root.MkdirAll(recvDir, 0o755); err != nil {
		return stored{}, fmt.Errorf("create %s: %w", recvDir, err)
	}
	recv, err := root.OpenRoot(recvDir)
	if err != nil {
		return stored{}, fmt.Errorf("open %s: %w", recvDir, err)
	}
	defer recv.Close()
	out, name, err := createUnique(recv, fmt.Sprintf("%d-%s", msgID, sanitize(f.name)))
	if err != nil {
		return stored{}, err
	}
	limit := min(g.cfg.MaxFileSize, g.cfg.RecvMaxBytes)
	tf, err := b.client.GetFile(ctx, f.fileID)
	if err == nil {
		_, err = b.client.Download(ctx, tf, out, limit)
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		recv.Remove(name)
		return stored{}, err
	}
	evicted, err := capRecv(recv, name, g.cfg.RecvMaxFiles, g.cfg.RecvMaxBytes)
	if err != nil {
		b.log.Warn("received files over the cap not all removed", keyError, err.Error())
	}
	return stored{name: name, evicted: evicted}, nil
}

// createUnique creates name in dir, or name-2, name-3… before its
// extension when taken; it never overwrites.
func createUnique(dir *os.Root, name string) (*os.File, string, error) {
	ext := path.Ext(name)
	stem := strings.TrimSuffix(name, ext)
	for i := 1; i <= 100; i++ {
		n := name
		if i > 1 {
			n = fmt.Sprintf("%s-%d%s", stem, i, ext)
		}
		f, err := dir.OpenFile(n, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err == nil {
			return f, n, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return nil, "", fmt.Errorf("create %s/%s: %w", recvDir, n, err)
		}
	}
	return nil, "", fmt.Errorf("create %s/%s: too many files of that name", recvDir, name)
}

// maxNameBytes bounds a stored file's name (filesystems allow 255).
const maxNameBytes = 120

// sanitize makes a user's file name safe to store: its base name only,
// letters, digits, '.', '-' and '_' (anything else becomes '_'), no
// leading dot or dash, at most maxNameBytes with the extension kept, and
// never empty.
func sanitize(name string) string {
	name = name[strings.LastIndexAny(name, `/\`)+1:]
	var sb strings.Builder
	for _, r := range name {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '.' || r == '-' || r == '_':
			sb.WriteRune(r)
		default:
			sb.WriteByte('_')
		}
	}
	s := strings.TrimLeft(sb.String(), ".-")
	if len(s) > maxNameBytes {
		ext := path.Ext(s)
		if len(ext) > 16 {
			ext = ""
		}
		stem := s[:maxNameBytes-len(ext)]
		for !utf8.ValidString(stem) {
			stem = stem[:len(stem)-1]
		}
		s = stem + ext
	}
	if strings.Trim(s, "._") == "" {
		return "file"
	}
	return s
}

// sendName is a DMSend file's path inside .choirtmp/send/: it accepts
// ".choirtmp/send/x", "./.choirtmp/send/x" and the container's
// "/workspace/.choirtmp/send/x", and refuses anything else.
func sendName(p string) (string, error) {
	rel := strings.TrimPrefix(p, "/workspace/")
	if path.IsAbs(rel) || strings.Contains(rel, `\`) {
		return "", fmt.Errorf("file %q: only files under %s/ can be sent", p, sendDir)
	}
	rest, ok := strings.CutPrefix(path.Clean(rel), sendDir+"/")
	if !ok || rest == "" {
		return "", fmt.Errorf("file %q: only files under %s/ can be sent", p, sendDir)
	}
	return rest, nil
}
