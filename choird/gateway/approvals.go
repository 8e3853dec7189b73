package gateway

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"choir/choird/approval"
	"choir/internal/telegram"
)

// The gateway is the approval pipeline's Notifier (§19.6).
var _ approval.Notifier = (*Gateway)(nil)

// Callback data of the approval buttons: "ap:<approval id>:y" or ":n".
const apPrefix = "ap:"

func callbackData(id string, approve bool) string {
	if approve {
		return apPrefix + id + ":y"
	}
	return apPrefix + id + ":n"
}

func parseCallback(data string) (id string, approve, ok bool) {
	rest, found := strings.CutPrefix(data, apPrefix)
	if !found {
		return "", false, false
	}
	i := strings.LastIndexByte(rest, ':')
	if i <= 0 {
		return "", false, false
	}
	switch rest[i+1:] {
	case "y":
		return rest[:i], true, true
	case "n":
		return rest[:i], false, true
	}
	return "", false, false
}

// errNoDM: the agent is bound to no Telegram DM (a console session, or it
// stopped), so there is nowhere to ask.
var errNoDM = errors.New("the agent has no Telegram DM bound")

// Requested sends the request to the agent's bound DM with [Approve]
// [Reject] buttons, and remembers the message to edit once decided.
func (g *Gateway) Requested(ctx context.Context, a approval.Approval) error {
	dm, ok := g.dmOfAgent(a.AgentID)
	if !ok {
		return fmt.Errorf("approval %s of %s: %w", a.ID, a.AgentID, errNoDM)
	}
	yes, no := callbackData(a.ID, true), callbackData(a.ID, false)
	if len(yes) > telegram.MaxCallbackData {
		return fmt.Errorf("approval id %q is too long for a button's callback data (64 bytes)", a.ID)
	}
	kb := telegram.Keyboard([]telegram.InlineKeyboardButton{
		telegram.CallbackButton("Approve", yes), telegram.CallbackButton("Reject", no),
	})
	m, err := dm.bot.sendTextMsg(ctx, dm.user, approval.RequestText(a), 0, kb)
	if err != nil {
		return fmt.Errorf("send approval %s to DM %s: %w", a.ID, dm.name, err)
	}
	ref := msgRef{bot: dm.bot.name, chat: dm.user, id: m.MessageID}
	g.mu.Lock()
	g.apMsgs[a.ID] = ref
	g.apByMsg[ref] = a.ID
	g.mu.Unlock()
	return nil
}

// Decided edits the request's message to the outcome and who decided,
// removing the buttons; without that message (choird restarted since), it
// sends the outcome to the agent's DM instead.
func (g *Gateway) Decided(ctx context.Context, a approval.Approval) error {
	text := approval.OutcomeText(a)
	g.mu.Lock()
	ref, ok := g.apMsgs[a.ID]
	delete(g.apMsgs, a.ID)
	delete(g.apByMsg, ref)
	g.mu.Unlock()
	if ok {
		if b := g.byName[ref.bot]; b != nil {
			return b.edit(ctx, ref.chat, ref.id, text)
		}
	}
	dm, found := g.dmOfAgent(a.AgentID)
	if !found {
		return fmt.Errorf("outcome of approval %s: %w", a.ID, errNoDM)
	}
	return dm.bot.sendText(ctx, dm.user, text, 0, nil)
}

// edit replaces a message's text and removes its keyboard, through the
// limiter. An edit to the same text is no failure.
func (b *bot) edit(ctx context.Context, chat, msgID int64, text string) error {
	_, err := telegram.Limited(ctx, b.limiter, chat, func(ctx context.Context) (*telegram.Message, error) {
		return b.client.EditMessageText(ctx, chat, msgID, text, nil)
	})
	if e, ok := errors.AsType[*telegram.APIError](err); ok && strings.Contains(e.Description, "not modified") {
		return nil
	}
	return err
}

// decider is who a DM decides as: an admin DM any agent's approvals, a
// regular DM only its bound agent's.
func (g *Gateway) decider(dm dmInfo) approval.Decider {
	by := fmt.Sprintf("telegram:%d (%s)", dm.user, dm.name)
	if dm.admin {
		return approval.Operator(by)
	}
	agent, _ := g.control.AgentForDM(dm.name)
	return approval.BoundTo(by, agent)
}

// handleCallback answers a button press: an approval decision.
func (g *Gateway) handleCallback(ctx context.Context, b *bot, dm dmInfo, q *telegram.CallbackQuery) {
	answer := func(text string, alert bool) {
		if r := []rune(text); len(r) > 200 {
			text = string(r[:199]) + "…"
		}
		if err := b.client.AnswerCallbackQuery(ctx, q.ID, telegram.CallbackAnswer{Text: text, ShowAlert: alert}); err != nil {
			b.log.Warn("callback query not answered", keyDM, dm.name, keyError, err.Error())
		}
	}
	id, approve, ok := parseCallback(q.Data)
	svc := g.approvalService()
	if !ok || svc == nil {
		answer("This button does nothing here.", false)
		return
	}
	a, err := svc.Decide(ctx, id, approve, g.decider(dm))
	switch {
	case err == nil:
		answer(strings.ToUpper(string(a.Status[:1]))+string(a.Status[1:]), false)
	case errors.Is(err, approval.ErrAlreadyDecided):
		answer(fmt.Sprintf("Already %s by %s; nothing changed.", a.Status, a.ResolvedBy), true)
		if q.Message != nil {
			b.edit(ctx, q.Message.Chat.ID, q.Message.MessageID, approval.OutcomeText(a))
		}
	case errors.Is(err, approval.ErrNotAllowed):
		b.log.Warn("approval button refused: not this DM's agent", keyDM, dm.name, keyApproval, id)
		answer("This DM can decide only its own agent's approvals.", true)
	case errors.Is(err, approval.ErrNotFound):
		answer("No such approval.", true)
	default:
		b.log.Warn("approval decision failed", keyDM, dm.name, keyApproval, id, keyError, err.Error())
		answer("Could not record the decision: "+err.Error(), true)
	}
}

// choice is an open "reply with the number" question after /approve or
// /reject without an id and several pending.
type choice struct {
	approve bool
	ids     []string
}

// takeChoice removes and returns the chat's open choice: any message
// closes it, and only a number answers it.
func (g *Gateway) takeChoice(b *bot, chat int64) (choice, bool) {
	k := chatKey{b.name, chat}
	g.mu.Lock()
	defer g.mu.Unlock()
	c, ok := g.choices[k]
	delete(g.choices, k)
	return c, ok
}

func (g *Gateway) pick(ctx context.Context, b *bot, dm dmInfo, c choice, n int) {
	if n < 1 || n > len(c.ids) {
		b.reply(ctx, dm, fmt.Sprintf("%d is not on the list (1-%d); send /approve or /reject again.", n, len(c.ids)))
		return
	}
	g.decide(ctx, b, dm, c.ids[n-1], c.approve)
}

// decide records a DM's /approve or /reject and answers it.
func (g *Gateway) decide(ctx context.Context, b *bot, dm dmInfo, id string, approve bool) {
	svc := g.approvalService()
	a, err := svc.Decide(ctx, id, approve, g.decider(dm))
	switch {
	case err == nil:
		b.reply(ctx, dm, approval.OutcomeText(a))
	case errors.Is(err, approval.ErrAlreadyDecided):
		b.reply(ctx, dm, fmt.Sprintf("Approval %s was already %s by %s; nothing changed.", a.ID, a.Status, a.ResolvedBy))
	case errors.Is(err, approval.ErrNotAllowed):
		b.log.Warn("approval command refused: not this DM's agent", keyDM, dm.name, keyApproval, id)
		b.reply(ctx, dm, "This DM can decide only its own agent's approvals.")
	case errors.Is(err, approval.ErrNotFound):
		b.reply(ctx, dm, fmt.Sprintf("There is no approval %s. Send /approvals for the pending ones.", id))
	default:
		b.reply(ctx, dm, "Could not record the decision: "+err.Error())
	}
}

// visible lists the pending approvals a DM may decide: all for an admin
// DM, its bound agent's for a regular one. ok false means answered.
func (c *call) visible(ctx context.Context) ([]approval.Approval, bool) {
	svc := c.g.approvalService()
	if svc == nil {
		c.say(ctx, fmt.Sprintf("/%s is not available in this choird yet.", c.name))
		return nil, false
	}
	agent := ""
	if !c.dm.admin {
		bound, ok := c.g.control.AgentForDM(c.dm.name)
		if !ok {
			c.say(ctx, noAgentText(c.dm))
			return nil, false
		}
		agent = bound
	}
	list, err := svc.List(ctx, agent)
	if err != nil {
		c.controlErr(ctx, "list approvals", err)
		return nil, false
	}
	return list, true
}

func numbered(list []approval.Approval) string {
	var sb strings.Builder
	for i, a := range list {
		s := a.ShownSummary()
		if r := []rune(s); len(r) > 200 {
			s = string(r[:200]) + "…"
		}
		fmt.Fprintf(&sb, "%d. %s · %s: %s\n   id %s\n", i+1, a.AgentID, a.RequestType, s, a.ID)
	}
	return sb.String()
}

func cmdApprovals(ctx context.Context, c *call) {
	list, ok := c.visible(ctx)
	if !ok {
		return
	}
	if len(list) == 0 {
		c.say(ctx, "No pending approvals.")
		return
	}
	c.say(ctx, "Pending approvals:\n"+numbered(list))
}

// cmdDecide is /approve and /reject: with an id; as a reply to the
// request's message; or alone: the one pending approval, or a numbered
// list to pick from by replying with the number.
func cmdDecide(approve bool) func(ctx context.Context, c *call) {
	return func(ctx context.Context, c *call) {
		if c.g.approvalService() == nil {
			c.say(ctx, fmt.Sprintf("/%s is not available in this choird yet.", c.name))
			return
		}
		if len(c.args) > 0 {
			c.g.decide(ctx, c.b, c.dm, c.args[0], approve)
			return
		}
		if r := c.m.ReplyToMessage; r != nil {
			c.g.mu.Lock()
			id, ok := c.g.apByMsg[msgRef{bot: c.b.name, chat: c.dm.user, id: r.MessageID}]
			c.g.mu.Unlock()
			if ok {
				c.g.decide(ctx, c.b, c.dm, id, approve)
				return
			}
		}
		list, ok := c.visible(ctx)
		if !ok {
			return
		}
		switch len(list) {
		case 0:
			c.say(ctx, "No pending approvals.")
		case 1:
			c.g.decide(ctx, c.b, c.dm, list[0].ID, approve)
		default:
			ids := make([]string, len(list))
			for i, a := range list {
				ids[i] = a.ID
			}
			c.g.mu.Lock()
			c.g.choices[chatKey{c.b.name, c.dm.user}] = choice{approve: approve, ids: ids}
			c.g.mu.Unlock()
			verb := "approve"
			if !approve {
				verb = "reject"
			}
			c.say(ctx, fmt.Sprintf("%d approvals are pending. Reply with the number to %s:\n%s", len(list), verb, numbered(list)))
		}
	}
}
