package telegramtest

import (
	"bytes"
	"image"
	_ "image/jpeg" // photo sizes
	_ "image/png"
	"mime"
	"net/http"
	"path/filepath"
	"strings"
)

// Limits the real API enforces on what a bot sends.
const (
	maxTextLength    = 4096 // UTF-16 code units
	maxCaptionLength = 1024
	maxCallbackData  = 64 // bytes
)

// outgoing are the parameters every send method shares.
type outgoing struct {
	chatID   int64
	keyboard [][]Button
	markup   any // reply_markup as sent, decoded
	replyTo  int64
	silent   bool
}

// readOutgoing reads chat_id, reply_markup, the reply (reply_parameters, or
// the older reply_to_message_id) and disable_notification, checking the
// replied-to message exists unless allow_sending_without_reply says not to
// care. s.mu is not held.
func (s *Server) readOutgoing(b *bot, p *params) (outgoing, *reply) {
	var o outgoing
	var rep *reply
	if o.chatID, rep = p.chatID(); rep != nil {
		return o, rep
	}
	if o.keyboard, o.markup, rep = readKeyboard(p); rep != nil {
		return o, rep
	}
	if o.silent, rep = p.bool("disable_notification"); rep != nil {
		return o, rep
	}
	lenient := false
	if v, present, rep := p.object("reply_parameters"); rep != nil {
		return o, rep
	} else if present {
		obj, isObj := v.(map[string]any)
		id, isInt := jsonInt(obj["message_id"])
		if !isObj || !isInt {
			r := badRequest("can't parse reply parameters JSON object")
			return o, &r
		}
		o.replyTo = id
		lenient, _ = obj["allow_sending_without_reply"].(bool)
	} else if id, present, rep := p.int("reply_to_message_id"); rep != nil {
		return o, rep
	} else if present {
		o.replyTo = id
		if lenient, rep = p.bool("allow_sending_without_reply"); rep != nil {
			return o, rep
		}
	}
	if o.replyTo != 0 {
		s.mu.Lock()
		exists := b.chat(o.chatID).messages[o.replyTo] != nil
		s.mu.Unlock()
		if !exists {
			if !lenient {
				r := badRequest("message to be replied not found")
				return o, &r
			}
			o.replyTo = 0
		}
	}
	return o, nil
}

// readKeyboard reads an inline keyboard from reply_markup: absent gives
// nil, an empty inline_keyboard too (it removes the keyboard).
func readKeyboard(p *params) ([][]Button, any, *reply) {
	v, present, rep := p.object("reply_markup")
	if rep != nil || !present {
		return nil, nil, rep
	}
	bad := func(why string) ([][]Button, any, *reply) {
		r := badRequest("can't parse reply keyboard markup JSON object: %s", why)
		return nil, nil, &r
	}
	obj, isObj := v.(map[string]any)
	if !isObj {
		return bad("not an object")
	}
	rows, isList := obj["inline_keyboard"].([]any)
	if !isList {
		return bad(`no "inline_keyboard" array (the fake knows inline keyboards only)`)
	}
	var kb [][]Button
	for _, row := range rows {
		cells, isList := row.([]any)
		if !isList {
			return bad("a row is not an array")
		}
		var out []Button
		for _, cell := range cells {
			btn, isObj := cell.(map[string]any)
			if !isObj {
				return bad("a button is not an object")
			}
			text, _ := btn["text"].(string)
			data, hasData := btn["callback_data"].(string)
			url, hasURL := btn["url"].(string)
			switch {
			case text == "":
				r := badRequest("text buttons are unallowed in the inline keyboard")
				return nil, nil, &r
			case hasData && (len(data) == 0 || len(data) > maxCallbackData):
				r := badRequest("BUTTON_DATA_INVALID")
				return nil, nil, &r
			case !hasData && !hasURL:
				r := badRequest("can't find field \"callback_data\" or \"url\" in the inline keyboard button")
				return nil, nil, &r
			}
			out = append(out, Button{Text: text, CallbackData: data, URL: url})
		}
		kb = append(kb, out)
	}
	if len(kb) == 0 {
		return nil, nil, nil
	}
	return kb, v, nil
}

// readText reads and checks a message text.
func readText(p *params) (string, *reply) {
	text, _, rep := p.str("text")
	if rep != nil {
		return "", rep
	}
	if strings.TrimSpace(text) == "" {
		r := badRequest("message text is empty")
		return "", &r
	}
	if utf16Len(text) > maxTextLength {
		r := badRequest("message is too long")
		return "", &r
	}
	return text, nil
}

func (s *Server) sendMessage(b *bot, p *params, _ *http.Request) reply {
	text, rep := readText(p)
	if rep != nil {
		return *rep
	}
	o, rep := s.readOutgoing(b, p)
	if rep != nil {
		return *rep
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c := b.chat(o.chatID)
	m := c.newMessage(b.user(), true)
	m.setText(text)
	m.setKeyboard(o.keyboard, o.markup)
	s.attachReply(c, m, o.replyTo)
	c.sent = append(c.sent, Sent{
		MessageID: m.id(), ChatID: o.chatID, Method: "sendMessage", Text: text,
		Keyboard: o.keyboard, ReplyTo: o.replyTo, Silent: o.silent,
	})
	s.notify()
	return ok(m.snapshot())
}

// attachReply sets reply_to_message. s.mu is held.
func (s *Server) attachReply(c *chat, m *message, replyTo int64) {
	if replyTo == 0 {
		return
	}
	orig := c.messages[replyTo]
	obj := make(map[string]any, len(orig.obj))
	for k, v := range orig.obj {
		if k != "reply_to_message" {
			obj[k] = v
		}
	}
	m.obj["reply_to_message"] = obj
}

// mediaHandler serves sendDocument, sendPhoto, sendVoice, sendAudio and
// sendVideo: the
// file comes as a multipart part named field, or as the file_id of a file
// the bot already has.
func mediaHandler(field string) handler {
	return func(s *Server, b *bot, p *params, _ *http.Request) reply {
		caption, _, rep := p.str("caption")
		if rep != nil {
			return *rep
		}
		if utf16Len(caption) > maxCaptionLength {
			return badRequest("message caption is too long")
		}
		duration, _, rep := p.int("duration")
		if rep != nil {
			return *rep
		}
		o, rep := s.readOutgoing(b, p)
		if rep != nil {
			return *rep
		}
		up := p.files[field]
		s.mu.Lock()
		defer s.mu.Unlock()
		if up == nil {
			id, present, _ := p.str(field)
			f := b.files[id]
			switch {
			case !present:
				return badRequest("there is no %s in the request", field)
			case f == nil:
				return badRequest("wrong file identifier/HTTP URL specified")
			}
			up = &upload{name: filepath.Base(f.path), data: f.data}
		}
		if field == "photo" {
			if rep := checkPhoto(up.data); rep != nil {
				return *rep
			}
		}
		c := b.chat(o.chatID)
		m := c.newMessage(b.user(), true)
		f := b.addFile(field+"s", extOf(up.name), up.data)
		shown := field
		if field == "voice" && !voiceFormat(up.data) {
			shown = "document" // "other formats may be sent as Audio or Document"
		}
		m.obj[shown] = mediaObject(shown, f, up, duration)
		setCaption(m, caption)
		m.setKeyboard(o.keyboard, o.markup)
		s.attachReply(c, m, o.replyTo)
		c.sent = append(c.sent, Sent{
			MessageID: m.id(), ChatID: o.chatID, Method: "send" + strings.ToUpper(field[:1]) + field[1:],
			Caption: caption, Keyboard: o.keyboard, ReplyTo: o.replyTo, Silent: o.silent,
			File: &File{Field: field, Name: up.name, ContentType: up.contentType, Data: up.data, FileID: f.id},
		})
		s.notify()
		return ok(m.snapshot())
	}
}

// Photo limits of sendPhoto: "The photo must be at most 10 MB in size. The
// photo's width and height must not exceed 10000 in total. Width and height
// ratio must be at most 20."
const (
	maxPhotoSides = 10000
	maxPhotoRatio = 20
)

// checkPhoto refuses a photo over the Bot API's limits as Telegram does; a
// body that is not a JPEG or PNG is refused too (the real API cannot
// process it as a photo).
func checkPhoto(data []byte) *reply {
	if len(data) > maxPhotoBytes {
		r := badRequest("PHOTO_INVALID_DIMENSIONS")
		return &r
	}
	w, h := imageSize(data)
	switch {
	case w == 0 || h == 0:
		r := badRequest("IMAGE_PROCESS_FAILED")
		return &r
	case w+h > maxPhotoSides || w > maxPhotoRatio*h || h > maxPhotoRatio*w:
		r := badRequest("PHOTO_INVALID_DIMENSIONS")
		return &r
	}
	return nil
}

// voiceFormat reports what Telegram shows as a voice message: OGG with
// Opus (the first page's packet starts "OpusHead"), MP3 or M4A.
func voiceFormat(data []byte) bool {
	if len(data) >= 27 && bytes.HasPrefix(data, []byte("OggS")) {
		start := 27 + int(data[26])
		return len(data) >= start+8 && string(data[start:start+8]) == "OpusHead"
	}
	return bytes.HasPrefix(data, []byte("ID3")) || len(data) > 2 && data[0] == 0xff && data[1]&0xe0 == 0xe0 ||
		len(data) >= 12 && string(data[4:8]) == "ftyp" && string(data[8:11]) == "M4A"
}

// mediaObject is the Document, PhotoSize list, Voice, Audio or Video
// Telegram makes of an upload.
func mediaObject(field string, f *storedFile, up *upload, duration int64) any {
	base := map[string]any{"file_id": f.id, "file_unique_id": f.uniqueID, "file_size": len(up.data)}
	switch field {
	case "photo":
		base["width"], base["height"] = imageSize(up.data)
		return []any{base}
	case "voice":
		base["duration"] = duration
		base["mime_type"] = "audio/ogg"
	case "audio":
		base["duration"] = duration
		base["file_name"] = up.name
		base["mime_type"] = mimeOf(up.name, "audio/mpeg")
	case "video":
		base["duration"] = duration
		base["width"], base["height"] = 0, 0
		base["file_name"] = up.name
		base["mime_type"] = mimeOf(up.name, "video/mp4")
	default:
		base["file_name"] = up.name
		base["mime_type"] = mimeOf(up.name, "application/octet-stream")
	}
	return base
}

// imageSize reads a JPEG's or PNG's dimensions; 0, 0 for anything else.
func imageSize(data []byte) (int, int) {
	cfg, _, err := image.DecodeConfig(bytes.NewReader(data))
	if err != nil {
		return 0, 0
	}
	return cfg.Width, cfg.Height
}

func extOf(name string) string { return strings.ToLower(filepath.Ext(name)) }

func mimeOf(name, fallback string) string {
	if t := mime.TypeByExtension(extOf(name)); t != "" {
		t, _, _ = strings.Cut(t, ";")
		return t
	}
	return fallback
}
