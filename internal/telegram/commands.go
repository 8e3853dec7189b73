package telegram

import "context"

// BotCommandScope says which chats a command menu applies to. Telegram picks,
// for a private chat, the first menu set among: that chat's scope, the
// all_private_chats scope, the default scope. So the gateway sets the
// regular commands as the default and each admin DM's longer menu on
// ScopeChat(its chat id).
type BotCommandScope struct {
	Type   string `json:"type"`
	ChatID int64  `json:"chat_id,omitempty"`
	UserID int64  `json:"user_id,omitempty"`
}

// ScopeDefault applies to every chat without a more specific menu.
func ScopeDefault() BotCommandScope { return BotCommandScope{Type: "default"} }

// ScopeAllPrivateChats applies to every private chat without a chat menu.
func ScopeAllPrivateChats() BotCommandScope { return BotCommandScope{Type: "all_private_chats"} }

// ScopeChat applies to one chat; for a DM the chat id is the user's id.
func ScopeChat(chatID int64) BotCommandScope { return BotCommandScope{Type: "chat", ChatID: chatID} }

type setMyCommandsParams struct {
	Commands []BotCommand     `json:"commands"`
	Scope    *BotCommandScope `json:"scope,omitempty"`
}

type deleteMyCommandsParams struct {
	Scope *BotCommandScope `json:"scope,omitempty"`
}

func scopeParam(s BotCommandScope) *BotCommandScope {
	if s.Type == "" {
		return nil
	}
	return &s
}

// SetMyCommands sets the command menu (at most 100 commands) for scope; the
// zero scope is the default one.
func (c *Client) SetMyCommands(ctx context.Context, commands []BotCommand, scope BotCommandScope) error {
	if commands == nil {
		commands = []BotCommand{}
	}
	return c.call(ctx, "setMyCommands", setMyCommandsParams{Commands: commands, Scope: scopeParam(scope)}, nil)
}

// DeleteMyCommands removes the menu of scope, so its chats fall back to the
// next broader one (a DM no longer admin gets the default menu back).
func (c *Client) DeleteMyCommands(ctx context.Context, scope BotCommandScope) error {
	return c.call(ctx, "deleteMyCommands", deleteMyCommandsParams{Scope: scopeParam(scope)}, nil)
}
