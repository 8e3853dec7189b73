package telegramtest

import "net/http"

func (s *Server) answerCallbackQuery(b *bot, p *params, _ *http.Request) reply {
	id, _, rep := p.str("callback_query_id")
	if rep != nil {
		return *rep
	}
	text, _, rep := p.str("text")
	if rep != nil {
		return *rep
	}
	alert, rep := p.bool("show_alert")
	if rep != nil {
		return *rep
	}
	if utf16Len(text) > 200 {
		return badRequest("MESSAGE_TOO_LONG")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	q := b.queries[id]
	if q == nil || q.answered {
		return badRequest("query is too old and response timeout expired or query ID is invalid")
	}
	q.answered = true
	b.answers = append(b.answers, Answer{
		QueryID: id, ChatID: q.chatID, MessageID: q.messageID, Data: q.data, Text: text, ShowAlert: alert,
	})
	s.notify()
	return ok(true)
}
