package telegramtest

import (
	"bytes"
	"encoding/json"
	"net/http"
	"time"
)

func (s *Server) editMessageText(b *bot, p *params, _ *http.Request) reply {
	text, rep := readText(p)
	if rep != nil {
		return *rep
	}
	return s.edit(b, p, "editMessageText", func(m *message, kb [][]Button, markup any) reply {
		if !m.hasText {
			return badRequest("there is no text in the message to edit")
		}
		if m.text == text && sameKeyboard(m.keyboard, kb) {
			return badRequest("message is not modified: specified new message content and reply markup are exactly the same as a current content and reply markup of the message")
		}
		m.setText(text)
		m.setKeyboard(kb, markup)
		return reply{}
	}, &text)
}

func (s *Server) editMessageReplyMarkup(b *bot, p *params, _ *http.Request) reply {
	return s.edit(b, p, "editMessageReplyMarkup", func(m *message, kb [][]Button, markup any) reply {
		if sameKeyboard(m.keyboard, kb) {
			return badRequest("message is not modified: specified new message content and reply markup are exactly the same as a current content and reply markup of the message")
		}
		m.setKeyboard(kb, markup)
		return reply{}
	}, nil)
}

// edit finds the bot's message named by chat_id and message_id, applies
// change and records the edit.
func (s *Server) edit(b *bot, p *params, method string, change func(m *message, kb [][]Button, markup any) reply, text *string) reply {
	if p.has("inline_message_id") {
		return badRequest("the fake does not know inline messages")
	}
	chatID, rep := p.chatID()
	if rep != nil {
		return *rep
	}
	id, present, rep := p.int("message_id")
	if rep != nil {
		return *rep
	}
	if !present || id == 0 {
		return badRequest("message identifier is not specified")
	}
	kb, markup, rep := readKeyboard(p)
	if rep != nil {
		return *rep
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c := b.chat(chatID)
	m := c.messages[id]
	switch {
	case m == nil:
		return badRequest("message to edit not found")
	case !m.fromBot:
		return badRequest("message can't be edited")
	}
	if rep := change(m, kb, markup); rep.status != 0 {
		return rep
	}
	m.obj["edit_date"] = time.Now().Unix()
	e := Edit{MessageID: id, Method: method, Keyboard: kb}
	if text != nil {
		e.Text = *text
	}
	c.edits = append(c.edits, e)
	s.notify()
	return ok(m.snapshot())
}

func sameKeyboard(a, b [][]Button) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}
