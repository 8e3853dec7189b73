package telegram_test

import (
	"testing"

	"choir/internal/telegram"
)

// TestCallbackRoundTrip: the bot asks with buttons, the user presses one,
// the bot sees the press with its data and the message, answers it, and
// edits the buttons away.
func TestCallbackRoundTrip(t *testing.T) {
	s, bot, c := newBot(t)
	ctx := t.Context()
	asked, err := c.SendMessage(ctx, user, "Approve deploy?", telegram.MessageOptions{ReplyMarkup: approvalKeyboard()})
	if err != nil {
		t.Fatal(err)
	}
	qid := s.InjectCallback(bot, user, asked.MessageID, "approve:7")
	ups := updates(t, c, 0)
	if len(ups) != 1 || ups[0].CallbackQuery == nil {
		t.Fatalf("updates = %+v; want one callback query", ups)
	}
	q := ups[0].CallbackQuery
	if q.ID != qid || q.Data != "approve:7" || q.From.ID != user || q.Message == nil || q.Message.MessageID != asked.MessageID || q.ChatInstance == "" {
		t.Errorf("CallbackQuery = %+v; want %s with approve:7 on message %d", q, qid, asked.MessageID)
	}
	if err := c.AnswerCallbackQuery(ctx, q.ID, telegram.CallbackAnswer{Text: "Approved"}); err != nil {
		t.Fatalf("AnswerCallbackQuery = %v", err)
	}
	if a := s.Answers(bot); len(a) != 1 || a[0].QueryID != qid || a[0].Text != "Approved" || a[0].Data != "approve:7" || a[0].MessageID != asked.MessageID {
		t.Errorf("answers = %+v", a)
	}
	// A query is answered once.
	err = c.AnswerCallbackQuery(ctx, q.ID, telegram.CallbackAnswer{})
	apiError(t, err, 400)
	if _, err := c.EditMessageReplyMarkup(ctx, user, q.Message.MessageID, nil); err != nil {
		t.Fatalf("EditMessageReplyMarkup(nil) = %v", err)
	}
	if m, _ := s.Message(bot, user, asked.MessageID); m.Keyboard != nil {
		t.Errorf("keyboard after removal = %v", m.Keyboard)
	}
}

func TestCallbackDataOver64BytesIsRefused(t *testing.T) {
	_, _, c := newBot(t)
	long := make([]byte, 65)
	for i := range long {
		long[i] = 'x'
	}
	kb := telegram.Keyboard([]telegram.InlineKeyboardButton{telegram.CallbackButton("x", string(long))})
	_, err := c.SendMessage(t.Context(), user, "pick", telegram.MessageOptions{ReplyMarkup: kb})
	if e := apiError(t, err, 400); e.Description != "Bad Request: BUTTON_DATA_INVALID" {
		t.Errorf("65-byte callback data = %v", err)
	}
}
