package mcp

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"choir/internal/mcp"
)

// DefaultElicitTimeout is how long a server's question waits for the
// user's answer before it is declined.
const DefaultElicitTimeout = 2 * time.Minute

// elicitor turns a server's elicitation/create (form mode) into a question
// in the bound DM: the server's message (its untrusted text, said to be
// the server's) and the form's fields with their defaults. The user
// answers with a message that starts with accept (optionally followed by
// name=value pairs that replace defaults), decline or cancel; any other
// message goes to the agent as usual. No answer within the timeout is a
// decline. One question is open at a time; others wait for it.
type elicitor struct {
	notify  func(string)
	timeout time.Duration
	turn    chan struct{} // one question at a time

	mu      sync.Mutex
	pending *question
}

type question struct {
	server string
	fields []mcp.Field
	answer chan string
}

func newElicitor(notify func(string), timeout time.Duration) *elicitor {
	if timeout <= 0 {
		timeout = DefaultElicitTimeout
	}
	return &elicitor{notify: notify, timeout: timeout, turn: make(chan struct{}, 1)}
}

// handler is the internal/mcp Elicit callback for server.
func (e *elicitor) handler(server string) func(context.Context, mcp.ElicitRequest) (mcp.ElicitResult, error) {
	return func(ctx context.Context, req mcp.ElicitRequest) (mcp.ElicitResult, error) {
		decline := mcp.ElicitResult{Action: mcp.ActionDecline}
		if e == nil || e.notify == nil || (req.Mode != "" && req.Mode != "form") {
			return decline, nil
		}
		fields, err := req.Fields()
		if err != nil {
			return decline, nil
		}
		ctx, cancel := context.WithTimeout(ctx, e.timeout)
		defer cancel()
		select {
		case e.turn <- struct{}{}:
		case <-ctx.Done():
			return decline, nil
		}
		defer func() { <-e.turn }()
		q := &question{server: server, fields: fields, answer: make(chan string, 1)}
		e.mu.Lock()
		e.pending = q
		e.mu.Unlock()
		defer func() { e.mu.Lock(); e.pending = nil; e.mu.Unlock() }()
		e.notify(e.render(server, req.Message, fields))
		var text string
		select {
		case text = <-q.answer:
		case <-ctx.Done():
			e.notify(fmt.Sprintf("No answer to MCP server %s's question within %v: declined.", server, e.timeout))
			return decline, nil
		}
		return answerResult(req, fields, text)
	}
}

func (e *elicitor) render(server, message string, fields []mcp.Field) string {
	var b strings.Builder
	fmt.Fprintf(&b, "MCP server %s asks (its words, not choir's): %s\n", server, clip(message, 1000))
	for _, f := range fields {
		fmt.Fprintf(&b, "- %s (%s", f.Name, f.Type)
		if f.Required {
			b.WriteString(", required")
		}
		if len(f.Enum) > 0 {
			fmt.Fprintf(&b, ", one of %s", strings.Join(f.Enum, "|"))
		}
		if f.Default != nil {
			fmt.Fprintf(&b, ", default %s", clip(string(f.Default), 200))
		}
		b.WriteString(")")
		if d := f.Description; d != "" {
			b.WriteString(": " + clip(d, 200))
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "Answer \"accept\" to send the defaults (\"accept name=value ...\" to change some), \"decline\" or \"cancel\"; no answer within %v declines.", e.timeout)
	return b.String()
}

// answer delivers a user's message to the open question when it is an
// answer (accept, decline or cancel), and says what was done.
func (e *elicitor) answer(text string) (string, bool) {
	if e == nil {
		return "", false
	}
	word := strings.ToLower(strings.Fields(text + " x")[0])
	if word != mcp.ActionAccept && word != mcp.ActionDecline && word != mcp.ActionCancel {
		return "", false
	}
	e.mu.Lock()
	q := e.pending
	e.mu.Unlock()
	if q == nil {
		return "", false
	}
	select {
	case q.answer <- text:
		return fmt.Sprintf("Your answer (%s) went to MCP server %s.", word, q.server), true
	default:
		return "", false
	}
}

// answerResult reads "accept [name=value ...]", "decline" or "cancel".
// Values are converted by the field's type; a value the form refuses
// declines.
func answerResult(req mcp.ElicitRequest, fields []mcp.Field, text string) (mcp.ElicitResult, error) {
	words := strings.Fields(text)
	switch strings.ToLower(words[0]) {
	case mcp.ActionCancel:
		return mcp.ElicitResult{Action: mcp.ActionCancel}, nil
	case mcp.ActionDecline:
		return mcp.ElicitResult{Action: mcp.ActionDecline}, nil
	}
	content, err := req.Defaults()
	if err != nil {
		return mcp.ElicitResult{Action: mcp.ActionDecline}, nil
	}
	byName := map[string]mcp.Field{}
	for _, f := range fields {
		byName[f.Name] = f
	}
	for _, kv := range words[1:] {
		name, raw, ok := strings.Cut(kv, "=")
		f, known := byName[name]
		if !ok || !known {
			return mcp.ElicitResult{Action: mcp.ActionDecline}, nil
		}
		v, ok := convertValue(f, raw)
		if !ok {
			return mcp.ElicitResult{Action: mcp.ActionDecline}, nil
		}
		content[name] = v
	}
	for _, f := range fields {
		if _, ok := content[f.Name]; f.Required && !ok {
			return mcp.ElicitResult{Action: mcp.ActionDecline}, nil
		}
	}
	return mcp.ElicitResult{Action: mcp.ActionAccept, Content: content}, nil
}

func convertValue(f mcp.Field, raw string) (any, bool) {
	if len(f.Enum) > 0 && f.Type != "array" && !contains(f.Enum, raw) {
		return nil, false
	}
	switch f.Type {
	case "boolean":
		b, err := strconv.ParseBool(raw)
		return b, err == nil
	case "integer":
		n, err := strconv.ParseInt(raw, 10, 64)
		return n, err == nil
	case "number":
		x, err := strconv.ParseFloat(raw, 64)
		return x, err == nil
	case "array":
		return strings.Split(raw, ","), true
	}
	return raw, true
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
