package gateway

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	_ "image/jpeg" // photo dimensions
	_ "image/png"
	"io"
	"net/http"
	"os"
	"path"
	"strings"

	"choir/internal/telegram"
)

// Telegram's limits on a photo (sendPhoto): at most 10 MB, width + height
// at most 10000, neither side more than 20 times the other. An image over
// them goes as a document.
const (
	maxPhotoSize  = 10 << 20
	maxPhotoSides = 10000
	maxPhotoRatio = 20
)

// headSize is how much of a file mediaKind reads: an OGG page header with
// its OpusHead, a JPEG's EXIF and frame header.
const headSize = 256 << 10

// Media kinds, named by the field of their Bot API method.
const (
	kindPhoto    = "photo"
	kindVoice    = "voice"
	kindAudio    = "audio"
	kindVideo    = "video"
	kindDocument = "document"
)

// mediaKind chooses how a file goes out (§19.5) from its name, size and
// first bytes: a JPEG or PNG within the photo limits as a photo; an OGG
// file holding Opus (what choir.tts.speak writes) as a voice message; MP3
// and M4A as audio; MP4 as a video; anything else, or anything that is not
// what its extension says, as a document.
func mediaKind(name string, size int64, head []byte) string {
	switch strings.ToLower(path.Ext(name)) {
	case ".jpg", ".jpeg", ".png":
		if size <= maxPhotoSize && photoFits(head) {
			return kindPhoto
		}
	case ".ogg", ".oga", ".opus":
		if isOggOpus(head) {
			return kindVoice
		}
	case ".mp3", ".m4a":
		return kindAudio
	case ".mp4", ".m4v":
		return kindVideo
	}
	return kindDocument
}

// photoFits reports an image Telegram takes as a photo.
func photoFits(head []byte) bool {
	cfg, _, err := image.DecodeConfig(bytes.NewReader(head))
	if err != nil || cfg.Width <= 0 || cfg.Height <= 0 {
		return false
	}
	w, h := cfg.Width, cfg.Height
	return w+h <= maxPhotoSides && w <= maxPhotoRatio*h && h <= maxPhotoRatio*w
}

// isOggOpus reports an OGG stream whose first page carries an Opus
// identification header (RFC 7845: "OpusHead" right after the page header
// of 27 bytes and its segment table).
func isOggOpus(head []byte) bool {
	if len(head) < 27 || !bytes.HasPrefix(head, []byte("OggS")) {
		return false
	}
	start := 27 + int(head[26])
	return len(head) >= start+8 && string(head[start:start+8]) == "OpusHead"
}

// outFile is a checked DMSend file.
type outFile struct {
	arg  string // as the agent named it
	name string // inside .choirtmp/send
	size int64
}

// notSent is a file removed from .choirtmp/send/ without being delivered,
// and why, for the DM.
type notSent struct {
	arg, why string
}

// checkOutFiles resolves every named file before anything is sent: each
// must be a regular file (not a symlink) under .choirtmp/send/ of the
// agent's workspace; anything else refuses the whole message. A file
// named twice is sent once.
func checkOutFiles(send *os.Root, files []string) ([]outFile, error) {
	var out []outFile
	seen := map[string]bool{}
	for _, f := range files {
		name, err := sendName(f)
		if err != nil {
			return nil, err
		}
		if seen[name] {
			continue
		}
		seen[name] = true
		fi, err := send.Lstat(name)
		if err != nil {
			return nil, fmt.Errorf("file %q: %w", f, err)
		}
		if !fi.Mode().IsRegular() {
			return nil, fmt.Errorf("file %q: not a regular file (%s)", f, fi.Mode().Type())
		}
		out = append(out, outFile{arg: f, name: name, size: fi.Size()})
	}
	return out, nil
}

// capSend splits a message's files into those that go out and those that
// do not: a file over the Bot API's upload size, and every file past the
// cap on one message's files (count and bytes, in the order named).
func capSend(files []outFile, maxFiles int, maxBytes int64) (send []outFile, refused []notSent) {
	var total int64
	for _, f := range files {
		switch {
		case f.size > maxUploadSize:
			refused = append(refused, notSent{f.arg, fmt.Sprintf("it is %s; Telegram takes at most %s from a bot", mb(f.size), mb(maxUploadSize))})
		case len(send) >= maxFiles || total+f.size > maxBytes:
			refused = append(refused, notSent{f.arg, fmt.Sprintf("one message sends at most %d files and %s", maxFiles, mb(maxBytes))})
		default:
			send = append(send, f)
			total += f.size
		}
	}
	return send, refused
}

// errRefused marks a file Telegram will never take (a 400 for it as a
// document): it is removed and the DM told, not retried.
var errRefused = errors.New("refused by Telegram")

// sendFile uploads one checked file to chat through the limiter, as its
// mediaKind; a photo, voice note, audio file or video Telegram refuses
// with a 400 (an image over the photo limits, a user whose privacy
// settings forbid voice notes) goes again as a document. The file is
// opened afresh for each attempt (a 429 retries the send). It returns
// Telegram's id of the message.
func (b *bot) sendFile(ctx context.Context, send *os.Root, chat int64, f outFile, replyTo int64) (int64, error) {
	kind, err := sniff(send, f)
	if err != nil {
		return 0, err
	}
	id, err := b.upload(ctx, send, chat, f, kind, replyTo)
	if kind != kindDocument && isBadRequest(err) {
		b.log.Info("file refused as "+kind+"; sending it as a document", "file", f.arg, keyError, err.Error())
		id, err = b.upload(ctx, send, chat, f, kindDocument, replyTo)
	}
	if isBadRequest(err) {
		return 0, fmt.Errorf("%w: %w", errRefused, err)
	}
	return id, err
}

func isBadRequest(err error) bool {
	e, ok := errors.AsType[*telegram.APIError](err)
	return ok && e.Code == http.StatusBadRequest
}

// sniff reads a file's first bytes and chooses its kind.
func sniff(send *os.Root, f outFile) (string, error) {
	r, err := send.Open(f.name)
	if err != nil {
		return "", err
	}
	defer r.Close()
	head, err := io.ReadAll(io.LimitReader(r, headSize))
	if err != nil {
		return "", fmt.Errorf("read %q: %w", f.arg, err)
	}
	return mediaKind(f.name, f.size, head), nil
}

func (b *bot) upload(ctx context.Context, send *os.Root, chat int64, f outFile, kind string, replyTo int64) (int64, error) {
	m, err := telegram.Limited(ctx, b.limiter, chat, func(ctx context.Context) (*telegram.Message, error) {
		r, err := send.Open(f.name)
		if err != nil {
			return nil, err
		}
		defer r.Close()
		if fi, err := r.Stat(); err != nil || !fi.Mode().IsRegular() {
			return nil, fmt.Errorf("file %q changed while being sent", f.arg)
		}
		// Never more than was checked: a file the agent grows meanwhile
		// is cut, not sent past the caps.
		body := io.LimitReader(r, f.size)
		opt := telegram.MediaOptions{ReplyToMessageID: replyTo}
		base := path.Base(f.name)
		switch kind {
		case kindPhoto:
			return b.client.SendPhoto(ctx, chat, base, body, opt)
		case kindVoice:
			return b.client.SendVoice(ctx, chat, base, body, opt)
		case kindAudio:
			return b.client.SendAudio(ctx, chat, base, body, opt)
		case kindVideo:
			return b.client.SendVideo(ctx, chat, base, body, opt)
		default:
			return b.client.SendDocument(ctx, chat, base, body, opt)
		}
	})
	if err != nil || m == nil {
		return 0, err
	}
	return m.MessageID, nil
}

// notSentText tells the DM which files were removed unsent, and why.
func notSentText(files []notSent) string {
	var sb strings.Builder
	if len(files) == 1 {
		sb.WriteString("1 file from the agent was not sent and has been removed:")
	} else {
		fmt.Fprintf(&sb, "%d files from the agent were not sent and have been removed:", len(files))
	}
	const listed = 10
	for i, f := range files {
		if i == listed {
			fmt.Fprintf(&sb, "\n… and %d more", len(files)-listed)
			break
		}
		fmt.Fprintf(&sb, "\n- %s: %s", path.Base(f.arg), f.why)
	}
	return sb.String()
}
