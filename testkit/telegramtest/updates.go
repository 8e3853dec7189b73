package telegramtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
	"unicode/utf16"
)

const conflictDescription = "Conflict: terminated by other getUpdates request; make sure that only one bot instance is running"

// getUpdates is the real long poll: offset confirms (forgets) every update
// below it, or with -N keeps only the last N; queued updates are answered at
// once, up to limit; otherwise the request waits up to timeout seconds for
// one. A newer long poll for the same bot ends a waiting one with 409
// Conflict, as the real server does: the newcomer wins.
func (s *Server) getUpdates(b *bot, p *params, r *http.Request) reply {
	offset, _, rep := p.int("offset")
	if rep != nil {
		return *rep
	}
	limit, present, rep := p.int("limit")
	if rep != nil {
		return *rep
	}
	if !present || limit > 100 {
		limit = 100
	}
	limit = max(limit, 1)
	timeout, _, rep := p.int("timeout")
	if rep != nil {
		return *rep
	}
	var allowed []string
	allowedSet := p.has("allowed_updates")
	if allowedSet {
		v, _, rep := p.object("allowed_updates")
		if rep != nil {
			return *rep
		}
		list, isList := v.([]any)
		if !isList {
			return badRequest("can't parse allowed_updates JSON array")
		}
		allowed = []string{}
		for _, x := range list {
			name, isString := x.(string)
			if !isString {
				return badRequest("can't parse allowed_updates JSON array")
			}
			allowed = append(allowed, name)
		}
	}

	s.mu.Lock()
	if allowedSet {
		b.allowed = allowed
	}
	b.confirm(offset)
	if ups := b.take(int(limit)); len(ups) > 0 || timeout <= 0 {
		s.notify()
		s.mu.Unlock()
		return ok(ups)
	}
	if b.poll != nil {
		close(b.poll.aborted)
	}
	lp := &longPoll{aborted: make(chan struct{})}
	b.poll = lp
	s.notify()
	expire := time.NewTimer(time.Duration(timeout) * s.pollSecond)
	defer expire.Stop()
	for {
		changed := s.changed
		s.mu.Unlock()
		var answer *reply
		select {
		case <-changed:
		case <-lp.aborted:
			rep := fail(http.StatusConflict, conflictDescription)
			answer = &rep
		case <-expire.C:
			rep := ok([]json.RawMessage{})
			answer = &rep
		case <-r.Context().Done():
			rep := fail(499, "client closed request")
			answer = &rep
		case <-s.done:
			rep := fail(http.StatusServiceUnavailable, "server stopped")
			answer = &rep
		}
		s.mu.Lock()
		if answer == nil {
			ups := b.take(int(limit))
			if len(ups) == 0 {
				continue
			}
			rep := ok(ups)
			answer = &rep
		}
		if b.poll == lp {
			b.poll = nil
			s.notify()
		}
		s.mu.Unlock()
		return *answer
	}
}

// confirm applies getUpdates' offset. s.mu is held.
func (b *bot) confirm(offset int64) {
	switch {
	case offset > 0:
		i := 0
		for i < len(b.updates) && b.updates[i].id < offset {
			i++
		}
		b.updates = b.updates[i:]
	case offset < 0:
		if keep := int(-offset); keep < len(b.updates) {
			b.updates = b.updates[len(b.updates)-keep:]
		}
	}
}

// take returns up to limit queued updates, still unconfirmed. s.mu is held.
func (b *bot) take(limit int) []json.RawMessage {
	out := []json.RawMessage{}
	for _, u := range b.updates[:min(limit, len(b.updates))] {
		out = append(out, u.body)
	}
	return out
}

// queue adds an update of kind to b, unless b's allowed_updates excludes
// kind: then Telegram never makes it, and neither does the fake. It returns
// the update_id, 0 when dropped. s.mu is held.
func (s *Server) queue(b *bot, kind string, body any) int64 {
	if !b.allows(kind) {
		return 0
	}
	s.lastUpdate++
	raw, err := json.Marshal(map[string]any{"update_id": s.lastUpdate, kind: body})
	if err != nil {
		s.t.Errorf("telegramtest: encode %s update: %v", kind, err)
		return 0
	}
	b.updates = append(b.updates, queuedUpdate{id: s.lastUpdate, body: raw})
	s.notify()
	return s.lastUpdate
}

// userMessage starts a message from user to bot in their private chat.
// s.mu is held.
func (b *bot) userMessage(user int64) *message {
	return b.chat(user).newMessage(userObject(user), false)
}

// InjectText delivers a text message from user to the bot in their private
// chat (whose id is the user's) and returns its message_id. A text starting
// with "/" carries a bot_command entity, as Telegram adds.
func (s *Server) InjectText(bot BotID, user int64, text string) int64 {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.bot(bot)
	m := b.userMessage(user)
	m.setText(text)
	if strings.HasPrefix(text, "/") {
		cmd, _, _ := strings.Cut(text, " ")
		cmd, _, _ = strings.Cut(cmd, "\n")
		m.obj["entities"] = []any{map[string]any{"type": "bot_command", "offset": 0, "length": utf16Len(cmd)}}
	}
	s.queue(b, "message", m.snapshot())
	return m.id()
}

// InjectDocument delivers a file from user, with an optional caption, and
// returns the message_id. The bot can getFile and download it.
func (s *Server) InjectDocument(bot BotID, user int64, name string, data []byte, caption string) int64 {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.bot(bot)
	f := b.addFile("documents", extOf(name), data)
	m := b.userMessage(user)
	m.obj["document"] = map[string]any{
		"file_id": f.id, "file_unique_id": f.uniqueID, "file_name": name,
		"mime_type": mimeOf(name, "application/octet-stream"), "file_size": len(data),
	}
	setCaption(m, caption)
	s.queue(b, "message", m.snapshot())
	return m.id()
}

// InjectPhoto delivers a photo from user, offered in one size (as a small
// photo is), and returns the message_id.
func (s *Server) InjectPhoto(bot BotID, user int64, data []byte, caption string) int64 {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.bot(bot)
	f := b.addFile("photos", ".jpg", data)
	w, h := imageSize(data)
	m := b.userMessage(user)
	m.obj["photo"] = []any{map[string]any{
		"file_id": f.id, "file_unique_id": f.uniqueID, "width": w, "height": h, "file_size": len(data),
	}}
	setCaption(m, caption)
	s.queue(b, "message", m.snapshot())
	return m.id()
}

// InjectVoice delivers a voice note (OGG/Opus as Telegram records them) of
// the given duration in seconds from user and returns the message_id.
func (s *Server) InjectVoice(bot BotID, user int64, data []byte, duration int) int64 {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.bot(bot)
	f := b.addFile("voice", ".oga", data)
	m := b.userMessage(user)
	m.obj["voice"] = map[string]any{
		"file_id": f.id, "file_unique_id": f.uniqueID, "duration": duration,
		"mime_type": "audio/ogg", "file_size": len(data),
	}
	s.queue(b, "message", m.snapshot())
	return m.id()
}

// InjectAudio delivers an audio file (music, or a recording sent as a
// file of audio) named name from user and returns the message_id.
func (s *Server) InjectAudio(bot BotID, user int64, name string, data []byte, duration int) int64 {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.bot(bot)
	f := b.addFile("music", extOf(name), data)
	m := b.userMessage(user)
	m.obj["audio"] = map[string]any{
		"file_id": f.id, "file_unique_id": f.uniqueID, "duration": duration, "file_name": name,
		"mime_type": mimeOf(name, "audio/mpeg"), "file_size": len(data),
	}
	s.queue(b, "message", m.snapshot())
	return m.id()
}

// InjectCallback presses a button: user sends data from the bot's message
// messageID in their private chat. It returns the callback query's id, which
// the bot answers with answerCallbackQuery. The message must be one the bot
// sent there.
func (s *Server) InjectCallback(bot BotID, user int64, messageID int64, data string) string {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.bot(bot)
	c := b.chat(user)
	m := c.messages[messageID]
	if m == nil || !m.fromBot {
		s.t.Fatalf("telegramtest: InjectCallback: bot %d sent no message %d to chat %d", bot, messageID, user)
	}
	q := &query{id: fmt.Sprintf("Q%d-%d", b.id, len(b.queries)+1), chatID: user, messageID: messageID, data: data}
	b.queries[q.id] = q
	s.queue(b, "callback_query", map[string]any{
		"id":            q.id,
		"from":          userObject(user),
		"message":       m.snapshot(),
		"chat_instance": fmt.Sprintf("CI%d-%d", b.id, user),
		"data":          data,
	})
	return q.id
}

// InjectUpdate queues any other update: body is the object under kind
// ("edited_message", "my_chat_member"...). It returns the update_id, or 0
// when the bot's allowed_updates excludes kind.
func (s *Server) InjectUpdate(bot BotID, kind string, body any) int64 {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.queue(s.bot(bot), kind, body)
}

func setCaption(m *message, caption string) {
	if caption != "" {
		m.obj["caption"] = caption
	}
}

// utf16Len is how Telegram measures text: UTF-16 code units.
func utf16Len(s string) int {
	n := 0
	for _, r := range s {
		if k := utf16.RuneLen(r); k > 0 {
			n += k
		} else {
			n++
		}
	}
	return n
}
