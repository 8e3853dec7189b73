package telegramtest

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// Sent is one message a bot sent, as it was sent (edits are in Edits).
type Sent struct {
	MessageID int64
	ChatID    int64
	// Method is sendMessage, sendDocument, sendPhoto, sendVoice, sendAudio
	// or sendVideo.
	Method string
	// Text is a sendMessage's text; Caption a file's caption.
	Text, Caption string
	// File is what a send* file method uploaded; nil for sendMessage.
	File *File
	// Keyboard is the inline keyboard sent with it, nil if none.
	Keyboard [][]Button
	// ReplyTo is the message it answers, 0 if none.
	ReplyTo int64
	// Silent reports disable_notification.
	Silent bool
}

// File is an uploaded file as the fake received it.
type File struct {
	// Field is the upload's form field: document, photo, voice, audio or
	// video.
	Field string
	// Name and ContentType are the multipart part's filename and
	// Content-Type.
	Name, ContentType string
	Data              []byte
	// FileID is the id the fake gave it; the bot can getFile it.
	FileID string
}

// Button is one inline keyboard button.
type Button struct {
	Text, CallbackData, URL string
}

// Edit is one editMessageText or editMessageReplyMarkup that succeeded.
type Edit struct {
	MessageID int64
	Method    string
	Text      string     // the new text (editMessageText)
	Keyboard  [][]Button // the new keyboard, nil when removed
}

// Answer is one answerCallbackQuery that succeeded, with the press it
// answered.
type Answer struct {
	QueryID   string
	ChatID    int64
	MessageID int64  // the message whose button was pressed
	Data      string // the button's callback_data
	Text      string
	ShowAlert bool
}

// Command is one entry of a command menu.
type Command struct {
	Command, Description string
}

// Scope names a command menu's BotCommandScope.
type Scope struct {
	Type           string
	ChatID, UserID int64
}

// DefaultScope is the scope of setMyCommands without one.
var DefaultScope = Scope{Type: "default"}

// ChatScope is the scope of one chat.
func ChatScope(chatID int64) Scope { return Scope{Type: "chat", ChatID: chatID} }

// Call is one request a bot made, with the HTTP status it got.
type Call struct {
	Method string
	Status int
}

// Message is a message of a chat as it stands now, edits applied.
type Message struct {
	ID       int64
	FromBot  bool
	Text     string
	Keyboard [][]Button
	Edited   bool
}

// Sent returns everything bot sent to chat, in order.
func (s *Server) Sent(bot BotID, chat int64) []Sent {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.bot(bot).chats[chat]
	if c == nil {
		return nil
	}
	return slices.Clone(c.sent)
}

// Texts returns the texts of bot's sendMessage calls to chat, in order.
func (s *Server) Texts(bot BotID, chat int64) []string {
	s.t.Helper()
	var out []string
	for _, m := range s.Sent(bot, chat) {
		if m.Method == "sendMessage" {
			out = append(out, m.Text)
		}
	}
	return out
}

// Files returns the files bot uploaded to chat, in order.
func (s *Server) Files(bot BotID, chat int64) []File {
	s.t.Helper()
	var out []File
	for _, m := range s.Sent(bot, chat) {
		if m.File != nil {
			out = append(out, *m.File)
		}
	}
	return out
}

// Edits returns bot's successful edits in chat, in order.
func (s *Server) Edits(bot BotID, chat int64) []Edit {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.bot(bot).chats[chat]
	if c == nil {
		return nil
	}
	return slices.Clone(c.edits)
}

// Message returns message id of chat as it stands now.
func (s *Server) Message(bot BotID, chat, id int64) (Message, bool) {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.bot(bot).chats[chat]
	if c == nil || c.messages[id] == nil {
		return Message{}, false
	}
	m := c.messages[id]
	_, edited := m.obj["edit_date"]
	return Message{ID: id, FromBot: m.fromBot, Text: m.text, Keyboard: m.keyboard, Edited: edited}, true
}

// Answers returns bot's answered callback queries, in order.
func (s *Server) Answers(bot BotID) []Answer {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.bot(bot).answers)
}

// Commands returns bot's command menu for scope, and whether one is set.
func (s *Server) Commands(bot BotID, scope Scope) ([]Command, bool) {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	cmds, set := s.bot(bot).commands[scope]
	return slices.Clone(cmds), set
}

// Calls returns every request bot made, in the order they completed.
func (s *Server) Calls(bot BotID) []Call {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.bot(bot).calls)
}

// CallCount is how many calls of method bot completed.
func (s *Server) CallCount(bot BotID, method string) int {
	s.t.Helper()
	n := 0
	for _, c := range s.Calls(bot) {
		if c.Method == canonical(method) {
			n++
		}
	}
	return n
}

// InFlight is how many calls of method bot has open now (a getUpdates long
// poll waiting, a hanging fault).
func (s *Server) InFlight(bot BotID, method string) int {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.bot(bot).inflight[canonical(method)]
}

// Polling reports whether a getUpdates long poll of bot is waiting for
// updates: an update injected now answers it.
func (s *Server) Polling(bot BotID) bool {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.bot(bot).poll != nil
}

// Unconfirmed is how many updates of bot no getUpdates offset has
// confirmed yet.
func (s *Server) Unconfirmed(bot BotID) int {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.bot(bot).updates)
}

// WaitSent waits until bot has sent at least n messages to chat and returns
// them all. On timeout it fails the test, listing what was sent.
func (s *Server) WaitSent(t testing.TB, bot BotID, chat int64, n int) []Sent {
	t.Helper()
	s.waitFor(t, func() string {
		return fmt.Sprintf("%d messages from bot %d in chat %d; got %s", n, bot, chat, describe(s.Sent(bot, chat)))
	}, func() bool { return len(s.Sent(bot, chat)) >= n })
	return s.Sent(bot, chat)
}

// WaitPolling waits until a getUpdates long poll of bot is waiting.
func (s *Server) WaitPolling(t testing.TB, bot BotID) {
	t.Helper()
	s.Wait(t, fmt.Sprintf("bot %d to long-poll getUpdates", bot), func() bool { return s.Polling(bot) })
}

func describe(sent []Sent) string {
	if len(sent) == 0 {
		return "none"
	}
	parts := make([]string, len(sent))
	for i, m := range sent {
		text := m.Text
		if m.File != nil {
			text = m.File.Name
		}
		if len(text) > 40 {
			text = text[:40] + "..."
		}
		parts[i] = fmt.Sprintf("%s %q", m.Method, text)
	}
	return fmt.Sprintf("%d: %s", len(sent), strings.Join(parts, ", "))
}

func lower(method string) string { return strings.ToLower(method) }

// canonical spells a method as the Bot API documents it.
func canonical(method string) string {
	if m, ok := methods[lower(method)]; ok {
		return m.name
	}
	return method
}
