package gateway

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
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

// maxPhotoSize is the largest image sent as a photo; bigger ones go as
// documents (the Bot API's photo limit is 10 MB).
const maxPhotoSize = 10 << 20

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
func (g *Gateway) receiveFile(ctx context.Context, b *bot, dm dmInfo, m *telegram.Message) {
	agent, ok := g.control.AgentForDM(dm.name)
	if !ok {
		b.reply(ctx, dm, noAgentText(dm))
		return
	}
	f, _ := fileOf(m)
	if limit := g.cfg.MaxFileSize; f.size > limit {
		b.reply(ctx, dm, fmt.Sprintf("That file is %s; the limit is %s. Nothing was passed on.", mb(f.size), mb(limit)))
		return
	}
	ws, err := g.control.WorkspacePath(agent)
	if err != nil {
		b.reply(ctx, dm, fmt.Sprintf("Could not receive the file for %s: %v", agent, err))
		return
	}
	rel, err := g.download(ctx, b, ws, m.MessageID, f)
	if err != nil {
		b.log.Warn("inbound file not stored", keyDM, dm.name, keyAgent, agent, keyError, err.Error())
		if errors.Is(err, telegram.ErrFileTooLarge) {
			b.reply(ctx, dm, fmt.Sprintf("That file is over the limit of %s. Nothing was passed on.", mb(g.cfg.MaxFileSize)))
			return
		}
		b.reply(ctx, dm, "Could not receive the file: "+err.Error())
		return
	}
	msg := rpc.UserMessage{ID: messageID(b.name, dm.user, m.MessageID), From: dm.name, Text: strings.TrimSpace(m.Caption), Attachments: []string{rel}}
	if _, err := g.control.SendUserMessage(agent, msg); err != nil {
		b.log.Warn("user message with a file not delivered to the agent", keyDM, dm.name, keyAgent, agent, keyError, err.Error())
		b.reply(ctx, dm, fmt.Sprintf("Stored %s, but could not pass it on to %s: %v", rel, agent, err))
	}
}

func mb(n int64) string { return fmt.Sprintf("%.1f MB", float64(n)/(1<<20)) }

// download stores f under ws/.choirtmp/recv with a unique sanitized name
// and returns its workspace-relative path. The directory is reached
// through an os.Root at the workspace, so no symlink the agent planted
// can send the write outside it.
func (g *Gateway) download(ctx context.Context, b *bot, ws string, msgID int64, f inbound) (string, error) {
	root, err := os.OpenRoot(ws)
	if err != nil {
		return "", fmt.Errorf("open workspace: %w", err)
	}
	defer root.Close()
	if err := root.MkdirAll(recvDir, 0o755); err != nil {
		return "", fmt.Errorf("create %s: %w", recvDir, err)
	}
	recv, err := root.OpenRoot(recvDir)
	if err != nil {
		return "", fmt.Errorf("open %s: %w", recvDir, err)
	}
	defer recv.Close()
	out, name, err := createUnique(recv, fmt.Sprintf("%d-%s", msgID, sanitize(f.name)))
	if err != nil {
		return "", err
	}
	tf, err := b.client.GetFile(ctx, f.fileID)
	if err == nil {
		_, err = b.client.Download(ctx, tf, out, g.cfg.MaxFileSize)
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		recv.Remove(name)
		return "", err
	}
	return recvDir + "/" + name, nil
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

// mediaKind chooses how a file is sent, by its extension (§19.5).
func mediaKind(name string, size int64) string {
	switch strings.ToLower(filepath.Ext(name)) {
	case ".jpg", ".jpeg", ".png":
		if size <= maxPhotoSize {
			return "photo"
		}
	case ".ogg", ".oga", ".opus":
		return "voice"
	case ".mp4", ".m4v":
		return "video"
	}
	return "document"
}

// outFile is a checked DMSend file.
type outFile struct {
	arg  string // as the agent named it
	name string // inside .choirtmp/send
	size int64
}

// checkOutFiles resolves every named file before anything is sent: each
// must be a regular file (not a symlink) under .choirtmp/send/ of the
// agent's workspace, within the Bot API's upload size.
func checkOutFiles(send *os.Root, files []string) ([]outFile, error) {
	var out []outFile
	for _, f := range files {
		name, err := sendName(f)
		if err != nil {
			return nil, err
		}
		fi, err := send.Lstat(name)
		if err != nil {
			return nil, fmt.Errorf("file %q: %w", f, err)
		}
		if !fi.Mode().IsRegular() {
			return nil, fmt.Errorf("file %q: not a regular file (%s)", f, fi.Mode().Type())
		}
		if fi.Size() > maxUploadSize {
			return nil, fmt.Errorf("file %q is %s; Telegram takes at most %s from a bot", f, mb(fi.Size()), mb(maxUploadSize))
		}
		out = append(out, outFile{arg: f, name: name, size: fi.Size()})
	}
	return out, nil
}

// sendFile uploads one checked file to chat through the limiter; the file
// is opened afresh for each attempt (a 429 retries the send).
func (b *bot) sendFile(ctx context.Context, send *os.Root, chat int64, f outFile, replyTo int64) error {
	kind := mediaKind(f.name, f.size)
	return b.limiter.Do(ctx, chat, func(ctx context.Context) error {
		r, err := send.Open(f.name)
		if err != nil {
			return err
		}
		defer r.Close()
		if fi, err := r.Stat(); err != nil || !fi.Mode().IsRegular() {
			return fmt.Errorf("file %q changed while being sent", f.arg)
		}
		opt := telegram.MediaOptions{ReplyToMessageID: replyTo}
		base := path.Base(f.name)
		switch kind {
		case "photo":
			_, err = b.client.SendPhoto(ctx, chat, base, r, opt)
		case "voice":
			_, err = b.client.SendVoice(ctx, chat, base, r, opt)
		case "video":
			_, err = b.client.SendVideo(ctx, chat, base, r, opt)
		default:
			_, err = b.client.SendDocument(ctx, chat, base, r, opt)
		}
		return err
	})
}
