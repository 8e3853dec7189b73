package telegram

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// MessageOptions are the optional parts of a sent message. The zero value
// sends plain text with nothing attached.
type MessageOptions struct {
	// ReplyToMessageID makes the message a reply to that message of the
	// same chat. It is sent as reply_parameters (the Bot API's current form
	// of the older reply_to_message_id) with allow_sending_without_reply, so
	// a deleted original does not stop the answer.
	ReplyToMessageID int64
	// ReplyMarkup is an inline keyboard shown under the message.
	ReplyMarkup *InlineKeyboardMarkup
	// DisableNotification delivers the message silently.
	DisableNotification bool
}

type replyParameters struct {
	MessageID                int64 `json:"message_id"`
	AllowSendingWithoutReply bool  `json:"allow_sending_without_reply,omitempty"`
}

func replyTo(id int64) *replyParameters {
	if id == 0 {
		return nil
	}
	return &replyParameters{MessageID: id, AllowSendingWithoutReply: true}
}

type sendMessageParams struct {
	ChatID              int64                 `json:"chat_id"`
	Text                string                `json:"text"`
	DisableNotification bool                  `json:"disable_notification,omitempty"`
	ReplyParameters     *replyParameters      `json:"reply_parameters,omitempty"`
	ReplyMarkup         *InlineKeyboardMarkup `json:"reply_markup,omitempty"`
}

// SendMessage sends text, as plain text (no parse_mode), to a chat and
// returns the message Telegram made of it. text must be 1-4096 UTF-16 code
// units (MaxMessageLength); SendText splits longer texts.
func (c *Client) SendMessage(ctx context.Context, chatID int64, text string, opt MessageOptions) (*Message, error) {
	var m Message
	err := c.call(ctx, "sendMessage", sendMessageParams{
		ChatID:              chatID,
		Text:                text,
		DisableNotification: opt.DisableNotification,
		ReplyParameters:     replyTo(opt.ReplyToMessageID),
		ReplyMarkup:         opt.ReplyMarkup,
	}, &m)
	if err != nil {
		return nil, err
	}
	return &m, nil
}

// SendText sends a text of any length as as many messages as it takes, in
// order, split by SplitText at MaxMessageLength. The reply goes on the first
// part and the keyboard under the last; parts that are only whitespace
// (which Telegram refuses as empty) are skipped. On an error it returns the
// messages already sent with it.
//
// SendText does not pace itself: the gateway sends through a Limiter, part
// by part (SplitText, then SendMessage for each).
func (c *Client) SendText(ctx context.Context, chatID int64, text string, opt MessageOptions) ([]*Message, error) {
	var parts []string
	for _, p := range SplitText(text, MaxMessageLength) {
		if strings.TrimSpace(p) != "" {
			parts = append(parts, p)
		}
	}
	if len(parts) == 0 {
		return nil, errors.New("telegram sendMessage: text is empty or only whitespace; Telegram refuses empty messages")
	}
	sent := make([]*Message, 0, len(parts))
	for i, p := range parts {
		o := MessageOptions{DisableNotification: opt.DisableNotification}
		if i == 0 {
			o.ReplyToMessageID = opt.ReplyToMessageID
		}
		if i == len(parts)-1 {
			o.ReplyMarkup = opt.ReplyMarkup
		}
		m, err := c.SendMessage(ctx, chatID, p, o)
		if err != nil {
			if len(parts) == 1 {
				return sent, err
			}
			return sent, fmt.Errorf("part %d of %d: %w", i+1, len(parts), err)
		}
		sent = append(sent, m)
	}
	return sent, nil
}

type editMessageTextParams struct {
	ChatID      int64                 `json:"chat_id"`
	MessageID   int64                 `json:"message_id"`
	Text        string                `json:"text"`
	ReplyMarkup *InlineKeyboardMarkup `json:"reply_markup,omitempty"`
}

// EditMessageText replaces the text of a message the bot sent, and its
// keyboard with markup: a nil markup removes the keyboard, as the Bot API
// does when reply_markup is left out. Setting the same text and keyboard
// again is refused with a 400 "message is not modified".
func (c *Client) EditMessageText(ctx context.Context, chatID, messageID int64, text string, markup *InlineKeyboardMarkup) (*Message, error) {
	var m Message
	err := c.call(ctx, "editMessageText", editMessageTextParams{
		ChatID: chatID, MessageID: messageID, Text: text, ReplyMarkup: markup,
	}, &m)
	if err != nil {
		return nil, err
	}
	return &m, nil
}

type editMessageReplyMarkupParams struct {
	ChatID      int64                 `json:"chat_id"`
	MessageID   int64                 `json:"message_id"`
	ReplyMarkup *InlineKeyboardMarkup `json:"reply_markup,omitempty"`
}

// EditMessageReplyMarkup replaces the keyboard of a message the bot sent;
// nil removes it (an approval answered, its buttons gone).
func (c *Client) EditMessageReplyMarkup(ctx context.Context, chatID, messageID int64, markup *InlineKeyboardMarkup) (*Message, error) {
	var m Message
	err := c.call(ctx, "editMessageReplyMarkup", editMessageReplyMarkupParams{
		ChatID: chatID, MessageID: messageID, ReplyMarkup: markup,
	}, &m)
	if err != nil {
		return nil, err
	}
	return &m, nil
}
