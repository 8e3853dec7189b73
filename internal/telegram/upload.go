package telegram

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/textproto"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// MediaOptions are the optional parts of a sent file, photo, voice note,
// audio file or video.
type MediaOptions struct {
	// Caption is shown under the media, plain text, at most
	// MaxCaptionLength UTF-16 code units.
	Caption string
	// Duration of a voice note, audio file or video, rounded to seconds; 0
	// leaves it to Telegram. Ignored by SendDocument and SendPhoto.
	Duration time.Duration
	// ReplyToMessageID, ReplyMarkup and DisableNotification are as in
	// MessageOptions.
	ReplyToMessageID    int64
	ReplyMarkup         *InlineKeyboardMarkup
	DisableNotification bool
}

// SendDocument uploads r as a general file named filename (only its base
// name is sent).
func (c *Client) SendDocument(ctx context.Context, chatID int64, filename string, r io.Reader, opt MediaOptions) (*Message, error) {
	return c.upload(ctx, "sendDocument", "document", chatID, filename, r, opt)
}

// SendPhoto uploads r as a photo (JPEG or PNG, at most 10 MB; Telegram
// recompresses it).
func (c *Client) SendPhoto(ctx context.Context, chatID int64, filename string, r io.Reader, opt MediaOptions) (*Message, error) {
	return c.upload(ctx, "sendPhoto", "photo", chatID, filename, r, opt)
}

// SendVoice uploads r as a voice note. For Telegram to show it as one, r
// must be OGG encoded with Opus (MP3 and M4A also work); a filename ending
// in .ogg or .oga is sent as audio/ogg.
func (c *Client) SendVoice(ctx context.Context, chatID int64, filename string, r io.Reader, opt MediaOptions) (*Message, error) {
	return c.upload(ctx, "sendVoice", "voice", chatID, filename, r, opt)
}

// SendAudio uploads r as music or another recording the chat shows in its
// player (MP3 or M4A; Telegram sends other formats as a document would be).
func (c *Client) SendAudio(ctx context.Context, chatID int64, filename string, r io.Reader, opt MediaOptions) (*Message, error) {
	return c.upload(ctx, "sendAudio", "audio", chatID, filename, r, opt)
}

// SendVideo uploads r as a video (MPEG4 plays inline).
func (c *Client) SendVideo(ctx context.Context, chatID int64, filename string, r io.Reader, opt MediaOptions) (*Message, error) {
	return c.upload(ctx, "sendVideo", "video", chatID, filename, r, opt)
}

// errUploadDone closes the pipe once the request is over, so a writer still
// copying gives up.
var errUploadDone = errors.New("upload request finished")

// upload streams a multipart/form-data request: the fields, then r as the
// file part named field, through a pipe, so the file is never held in
// memory. It is bounded by the transfer timeout.
func (c *Client) upload(ctx context.Context, method, field string, chatID int64, filename string, r io.Reader, opt MediaOptions) (*Message, error) {
	if r == nil {
		return nil, fmt.Errorf("telegram %s: no content to upload (nil reader)", method)
	}
	fields, err := mediaFields(field, chatID, opt)
	if err != nil {
		return nil, fmt.Errorf("telegram %s: encode parameters: %w", method, err)
	}
	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	src := &sourceReader{r: r}
	written := make(chan error, 1)
	go func() {
		err := writeForm(mw, fields, field, partName(field, filename), src)
		pw.CloseWithError(err) // nil: the body ends cleanly
		written <- err
	}()

	ctx, cancel := context.WithTimeout(ctx, c.transferTimeout)
	defer cancel()
	var m Message
	err = c.post(ctx, method, mw.FormDataContentType(), pr, &m)
	pr.CloseWithError(errUploadDone)
	<-written
	if src.err != nil {
		return nil, fmt.Errorf("telegram %s: read %s content %q: %w", method, field, partName(field, filename), c.redactErr(src.err))
	}
	if err != nil {
		return nil, err
	}
	return &m, nil
}

// mediaFields are the form fields of an upload other than the file, in
// the order they are written.
func mediaFields(field string, chatID int64, opt MediaOptions) ([][2]string, error) {
	f := [][2]string{{"chat_id", strconv.FormatInt(chatID, 10)}}
	if opt.Caption != "" {
		f = append(f, [2]string{"caption", opt.Caption})
	}
	if secs := int64(opt.Duration.Round(time.Second) / time.Second); secs > 0 && (field == "voice" || field == "audio" || field == "video") {
		f = append(f, [2]string{"duration", strconv.FormatInt(secs, 10)})
	}
	if opt.DisableNotification {
		f = append(f, [2]string{"disable_notification", "true"})
	}
	if rp := replyTo(opt.ReplyToMessageID); rp != nil {
		b, err := json.Marshal(rp)
		if err != nil {
			return nil, err
		}
		f = append(f, [2]string{"reply_parameters", string(b)})
	}
	if opt.ReplyMarkup != nil {
		b, err := json.Marshal(opt.ReplyMarkup)
		if err != nil {
			return nil, err
		}
		f = append(f, [2]string{"reply_markup", string(b)})
	}
	return f, nil
}

// writeForm writes the whole multipart body.
func writeForm(mw *multipart.Writer, fields [][2]string, field, filename string, content io.Reader) error {
	for _, kv := range fields {
		if err := mw.WriteField(kv[0], kv[1]); err != nil {
			return err
		}
	}
	h := make(textproto.MIMEHeader)
	h.Set("Content-Disposition", fmt.Sprintf(`form-data; name="%s"; filename="%s"`, quoteEscape(field), quoteEscape(filename)))
	h.Set("Content-Type", contentType(field, filename))
	part, err := mw.CreatePart(h)
	if err != nil {
		return err
	}
	if _, err := io.Copy(part, content); err != nil {
		return err
	}
	return mw.Close()
}

// partName is the file name sent: the base name only (a host path says
// nothing to the user and may say too much), never empty.
func partName(field, filename string) string {
	name := filepath.Base(strings.TrimSpace(filename))
	if name == "." || name == "/" || name == "" {
		name = field
	}
	return name
}

func contentType(field, filename string) string {
	ext := strings.ToLower(filepath.Ext(filename))
	if field == "voice" && (ext == ".ogg" || ext == ".oga" || ext == ".opus" || ext == "") {
		return "audio/ogg"
	}
	if t := mime.TypeByExtension(ext); t != "" {
		return t
	}
	return "application/octet-stream"
}

var quoteEscaper = strings.NewReplacer("\\", "\\\\", `"`, "\\\"", "\r", " ", "\n", " ")

func quoteEscape(s string) string { return quoteEscaper.Replace(s) }

// sourceReader remembers an error of the caller's reader, to tell it apart
// from the pipe closing under the writer.
type sourceReader struct {
	r   io.Reader
	err error
}

func (s *sourceReader) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	if err != nil && err != io.EOF {
		s.err = err
	}
	return n, err
}
