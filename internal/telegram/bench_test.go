package telegram_test

import (
	"testing"

	"choir/internal/telegram"
)

// BenchmarkSendMessage measures one sendMessage round trip against the fake
// on loopback: encoding, HTTP, the fake's decoding, checks and recording,
// and decoding the sent Message.
func BenchmarkSendMessage(b *testing.B) {
	_, _, c := newBot(b)
	kb := approvalKeyboard()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.SendMessage(b.Context(), user, "The build finished: 42 tests passed.", telegram.MessageOptions{ReplyMarkup: kb}); err != nil {
			b.Fatal(err)
		}
	}
}
