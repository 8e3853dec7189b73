package gateway

import (
	"context"
	"sort"

	"choir/internal/telegram"
)

// setMenus sets the bot's command menus (§19.3): the regular commands as
// the default, the admin menu on each admin DM's chat, and removes a chat
// menu left on a DM that is no longer admin. Failures are logged: the
// commands work without a menu.
func (b *bot) setMenus(ctx context.Context) {
	if err := b.client.SetMyCommands(ctx, menu(false), telegram.ScopeDefault()); err != nil {
		b.log.Warn("regular command menu not set", keyError, err.Error())
	}
	users := make([]int64, 0, len(b.users))
	for u := range b.users {
		users = append(users, u)
	}
	sort.Slice(users, func(i, j int) bool { return users[i] < users[j] })
	for _, u := range users {
		dm, _ := b.dmOf(u)
		var err error
		if dm.admin {
			err = b.client.SetMyCommands(ctx, menu(true), telegram.ScopeChat(u))
		} else {
			err = b.client.DeleteMyCommands(ctx, telegram.ScopeChat(u))
		}
		if err != nil && ctx.Err() == nil {
			b.log.Warn("command menu of a DM not set", keyDM, dm.name, "admin", dm.admin, keyError, err.Error())
		}
	}
}
