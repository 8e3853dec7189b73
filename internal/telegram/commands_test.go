package telegram_test

import (
	"reflect"
	"testing"

	"choir/internal/telegram"
	"choir/testkit/telegramtest"
)

// TestCommandMenusPerScope gives regular DMs the default menu and an admin
// DM its own, then takes the admin's away.
func TestCommandMenusPerScope(t *testing.T) {
	s, bot, c := newBot(t)
	ctx := t.Context()
	const admin int64 = 5550002
	regular := []telegram.BotCommand{{Command: "status", Description: "Agent status"}, {Command: "stop", Description: "Stop the agent"}}
	adminMenu := append(regular[:2:2], telegram.BotCommand{Command: "agent", Description: "Manage agents"})
	if err := c.SetMyCommands(ctx, regular, telegram.BotCommandScope{}); err != nil {
		t.Fatalf("SetMyCommands(default) = %v", err)
	}
	if err := c.SetMyCommands(ctx, adminMenu, telegram.ScopeChat(admin)); err != nil {
		t.Fatalf("SetMyCommands(chat) = %v", err)
	}
	want := func(cmds []telegram.BotCommand) []telegramtest.Command {
		var out []telegramtest.Command
		for _, c := range cmds {
			out = append(out, telegramtest.Command{Command: c.Command, Description: c.Description})
		}
		return out
	}
	if got, _ := s.Commands(bot, telegramtest.DefaultScope); !reflect.DeepEqual(got, want(regular)) {
		t.Errorf("default menu = %v; want %v", got, want(regular))
	}
	if got, _ := s.Commands(bot, telegramtest.ChatScope(admin)); !reflect.DeepEqual(got, want(adminMenu)) {
		t.Errorf("admin menu = %v; want %v", got, want(adminMenu))
	}
	if _, set := s.Commands(bot, telegramtest.ChatScope(user)); set {
		t.Error("a regular DM got a menu of its own")
	}
	if err := c.DeleteMyCommands(ctx, telegram.ScopeChat(admin)); err != nil {
		t.Fatalf("DeleteMyCommands = %v", err)
	}
	if _, set := s.Commands(bot, telegramtest.ChatScope(admin)); set {
		t.Error("admin menu still set after DeleteMyCommands")
	}
	err := c.SetMyCommands(ctx, []telegram.BotCommand{{Command: "Bad-Name", Description: "x"}}, telegram.ScopeDefault())
	apiError(t, err, 400)
}
