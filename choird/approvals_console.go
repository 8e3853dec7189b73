package main

import (
	"context"
	"errors"

	"choir/choird/approval"
	"choir/choird/control"
	"choir/internal/rpc"
)

// consoleNotifier shows approval requests and outcomes to the console DM
// (choirctl chat) of the agent that asked.
type consoleNotifier struct {
	console *control.Console
}

func (n consoleNotifier) Requested(ctx context.Context, a approval.Approval) error {
	return n.send(ctx, a, rpc.DMApprovalRequest, approval.RequestText(a))
}

func (n consoleNotifier) Decided(ctx context.Context, a approval.Approval) error {
	return n.send(ctx, a, rpc.DMApprovalOutcome, approval.OutcomeText(a))
}

func (n consoleNotifier) send(ctx context.Context, a approval.Approval, kind, text string) error {
	return n.console.Deliver(ctx, a.AgentID, "", rpc.DMSend{Kind: kind, Text: text, Approval: a.ID})
}

// notifiers shows approvals everywhere they can be decided: the Telegram
// DM and the console. One showing is enough.
type notifiers []approval.Notifier

func (ns notifiers) Requested(ctx context.Context, a approval.Approval) error {
	return ns.each(func(n approval.Notifier) error { return n.Requested(ctx, a) })
}

func (ns notifiers) Decided(ctx context.Context, a approval.Approval) error {
	return ns.each(func(n approval.Notifier) error { return n.Decided(ctx, a) })
}

func (ns notifiers) each(f func(approval.Notifier) error) error {
	var errs []error
	for _, n := range ns {
		if err := f(n); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) == len(ns) {
		return errors.Join(errs...)
	}
	return nil
}
