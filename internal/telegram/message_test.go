package telegram_test

import (
	"reflect"
	"strings"
	"testing"

	"choir/internal/telegram"
	"choir/testkit/telegramtest"
)

func approvalKeyboard() *telegram.InlineKeyboardMarkup {
	return telegram.Keyboard(
		[]telegram.InlineKeyboardButton{telegram.CallbackButton("Approve", "approve:7"), telegram.CallbackButton("Reject", "reject:7")},
		[]telegram.InlineKeyboardButton{{Text: "Docs", URL: "https://example.org/approvals"}},
	)
}

var wantKeyboard = [][]telegramtest.Button{
	{{Text: "Approve", CallbackData: "approve:7"}, {Text: "Reject", CallbackData: "reject:7"}},
	{{Text: "Docs", URL: "https://example.org/approvals"}},
}

func TestSendMessageWithKeyboardAndReply(t *testing.T) {
	s, bot, c := newBot(t)
	asked := s.InjectText(bot, user, "may I deploy?")
	m, err := c.SendMessage(t.Context(), user, "Approve deploy?", telegram.MessageOptions{
		ReplyToMessageID: asked,
		ReplyMarkup:      approvalKeyboard(),
	})
	if err != nil {
		t.Fatalf("SendMessage = %v", err)
	}
	if m.Text != "Approve deploy?" || m.Chat.ID != user || m.From == nil || !m.From.IsBot {
		t.Errorf("SendMessage = %+v; want the bot's text in the user's chat", m)
	}
	if m.ReplyToMessage == nil || m.ReplyToMessage.MessageID != asked || m.ReplyToMessage.Text != "may I deploy?" {
		t.Errorf("ReplyToMessage = %+v; want message %d", m.ReplyToMessage, asked)
	}
	if !reflect.DeepEqual(m.ReplyMarkup, approvalKeyboard()) {
		t.Errorf("ReplyMarkup = %+v; want the keyboard sent", m.ReplyMarkup)
	}
	sent := s.WaitSent(t, bot, user, 1)
	if got := sent[0]; got.MessageID != m.MessageID || got.ReplyTo != asked || !reflect.DeepEqual(got.Keyboard, wantKeyboard) {
		t.Errorf("fake saw %+v; want message %d replying to %d with %v", got, m.MessageID, asked, wantKeyboard)
	}
}

// TestReplyToDeletedMessageStillSends: the client allows sending without
// the reply, so an answer to a message that is gone is not lost.
func TestReplyToDeletedMessageStillSends(t *testing.T) {
	s, bot, c := newBot(t)
	m, err := c.SendMessage(t.Context(), user, "answer", telegram.MessageOptions{ReplyToMessageID: 999})
	if err != nil || m.ReplyToMessage != nil {
		t.Fatalf("SendMessage replying to a missing message = %+v, %v; want it sent without the reply", m, err)
	}
	if got := s.Texts(bot, user); len(got) != 1 {
		t.Errorf("texts = %q", got)
	}
}

// TestSendTextSplitsAtLines sends 10,000 characters in lines of 100: three
// messages, in order, each within 4096, cut between lines.
func TestSendTextSplitsAtLines(t *testing.T) {
	s, bot, c := newBot(t)
	var lines []string
	for i := range 100 {
		lines = append(lines, strings.Repeat(string(rune('a'+i%26)), 99))
	}
	text := strings.Join(lines, "\n") + "\n"
	text = text[:len(text)-1] // 100 lines: 9,999 characters
	msgs, err := c.SendText(t.Context(), user, text, telegram.MessageOptions{ReplyMarkup: approvalKeyboard()})
	if err != nil {
		t.Fatalf("SendText = %v", err)
	}
	got := s.Texts(bot, user)
	if len(msgs) != 3 || len(got) != 3 {
		t.Fatalf("SendText sent %d messages (fake saw %d); want 3", len(msgs), len(got))
	}
	for i, part := range got {
		if n := telegram.TextLength(part); n > telegram.MaxMessageLength {
			t.Errorf("part %d is %d long; over 4096", i, n)
		}
		if msgs[i].Text != part {
			t.Errorf("message %d = %q...; fake saw %q...", i, msgs[i].Text[:10], part[:10])
		}
	}
	if joined := strings.Join(got, "\n"); joined != text {
		t.Errorf("parts joined by line breaks differ from the text: not cut at line boundaries")
	}
	if msgs[0].MessageID >= msgs[1].MessageID || msgs[1].MessageID >= msgs[2].MessageID {
		t.Errorf("message ids %d, %d, %d; want them in order", msgs[0].MessageID, msgs[1].MessageID, msgs[2].MessageID)
	}
	sent := s.Sent(bot, user)
	if sent[0].Keyboard != nil || sent[1].Keyboard != nil || sent[2].Keyboard == nil {
		t.Errorf("keyboards on parts = %v, %v, %v; want it on the last only", sent[0].Keyboard, sent[1].Keyboard, sent[2].Keyboard)
	}
}

func TestSendTextHardCutsAWord(t *testing.T) {
	s, bot, c := newBot(t)
	word := strings.Repeat("x", 5000)
	if _, err := c.SendText(t.Context(), user, word, telegram.MessageOptions{}); err != nil {
		t.Fatalf("SendText(5000-character word) = %v", err)
	}
	got := s.Texts(bot, user)
	if len(got) != 2 || len(got[0]) != 4096 || len(got[1]) != 904 {
		t.Errorf("parts = %d of lengths %v; want 4096 and 904", len(got), lengths(got))
	}
}

func TestSendTextRefusesEmpty(t *testing.T) {
	s, bot, c := newBot(t)
	if _, err := c.SendText(t.Context(), user, " \n\t", telegram.MessageOptions{}); err == nil {
		t.Error("SendText(whitespace) = nil; want an error")
	}
	if n := s.CallCount(bot, "sendMessage"); n != 0 {
		t.Errorf("%d sendMessage calls; want none", n)
	}
}

func TestEditMessage(t *testing.T) {
	s, bot, c := newBot(t)
	ctx := t.Context()
	m, err := c.SendMessage(ctx, user, "Approve deploy?", telegram.MessageOptions{ReplyMarkup: approvalKeyboard()})
	if err != nil {
		t.Fatal(err)
	}
	edited, err := c.EditMessageText(ctx, user, m.MessageID, "Deploy approved.", nil)
	if err != nil {
		t.Fatalf("EditMessageText = %v", err)
	}
	if edited.Text != "Deploy approved." || edited.ReplyMarkup != nil || edited.EditDate == 0 {
		t.Errorf("edited = %+v; want the new text, no keyboard, an edit date", edited)
	}
	if now, _ := s.Message(bot, user, m.MessageID); now.Text != "Deploy approved." || now.Keyboard != nil || !now.Edited {
		t.Errorf("fake's message = %+v", now)
	}

	retry := telegram.Keyboard([]telegram.InlineKeyboardButton{telegram.CallbackButton("Retry", "retry:7")})
	if _, err := c.EditMessageReplyMarkup(ctx, user, m.MessageID, retry); err != nil {
		t.Fatalf("EditMessageReplyMarkup = %v", err)
	}
	_, err = c.EditMessageReplyMarkup(ctx, user, m.MessageID, retry)
	if e := apiError(t, err, 400); !strings.Contains(e.Description, "message is not modified") {
		t.Errorf("same markup again = %v; want 400 not modified", err)
	}
	if _, err := c.EditMessageReplyMarkup(ctx, user, m.MessageID, nil); err != nil {
		t.Fatalf("EditMessageReplyMarkup(nil) = %v", err)
	}
	edits := s.Edits(bot, user)
	if len(edits) != 3 || edits[0].Method != "editMessageText" || edits[1].Keyboard == nil || edits[2].Keyboard != nil {
		t.Errorf("edits = %+v; want text, then a keyboard, then none", edits)
	}
	_, err = c.EditMessageText(ctx, user, 4242, "nope", nil)
	apiError(t, err, 400)
}

func lengths(parts []string) []int {
	var out []int
	for _, p := range parts {
		out = append(out, telegram.TextLength(p))
	}
	return out
}
