package email

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"choir/agent/tool"
	"choir/internal/config"
	"choir/internal/imap"
)

// Check is choir.email.check: how many messages are unseen, and who sent
// the newest and about what. It opens the mailbox read-only and changes
// nothing.
type Check struct {
	llm     tool.LLMTool
	dynamic func() config.Dynamic
}

var _ tool.Tool = (*Check)(nil)

const checkParams = `{
  "type": "object",
  "properties": {
    "mailbox": {"type": "string", "minLength": 1, "maxLength": 200, "description": "Mailbox to check (default INBOX)."},
    "newest": {"type": "integer", "minimum": 0, "maximum": 20, "description": "List sender and subject of this many newest unseen messages (default 5)."}
  },
  "additionalProperties": false
}`

// NewCheck returns choir.email.check reading the account from dynamic per
// call.
func NewCheck(dynamic func() config.Dynamic) *Check {
	return &Check{
		llm: tool.LLMTool{
			Name: "choir.email.check",
			Description: "Check this agent's mailbox for new email: the number of unseen messages and the sender, " +
				"subject and date of the newest. Changes nothing; read messages with choir.email.receive.",
			Parameters: json.RawMessage(checkParams),
		},
		dynamic: dynamic,
	}
}

func (t *Check) Name() string      { return t.llm.Name }
func (t *Check) LLM() tool.LLMTool { return t.llm }
func (t *Check) Runtime() tool.Runtime {
	return tool.Runtime{
		Timeout: time.Minute, Network: true, SecretResources: []string{tool.SecretEmail},
		SideEffect: tool.SideEffectRead, Idempotent: true, Version: "1", Exposure: tool.ExposeBoth,
	}
}

// Locks is none: EXAMINE changes nothing.
func (t *Check) Locks(json.RawMessage) ([]tool.LockReq, error) { return nil, nil }

// Execute counts and lists.
func (t *Check) Execute(ctx context.Context, input json.RawMessage, env tool.Env) (tool.Result, error) {
	var in struct {
		Mailbox string `json:"mailbox"`
		Newest  *int   `json:"newest"`
	}
	if err := json.Unmarshal(input, &in); err != nil {
		return tool.Result{}, tool.Errorf(tool.CodeInvalidInput, "%v", err)
	}
	n := 5
	if in.Newest != nil {
		n = min(max(*in.Newest, 0), 20)
	}
	acct, err := resolve(t.dynamic, env)
	if err != nil {
		return tool.Result{}, err
	}
	c, mb, err := open(ctx, acct, in.Mailbox, false)
	if err != nil {
		return tool.Result{}, err
	}
	defer c.Logout(context.WithoutCancel(ctx))
	uids, err := c.Search(ctx, imap.Criteria{Unseen: true})
	if err != nil {
		return tool.Result{}, serverError("searching "+mb.Name, err)
	}
	var list []imap.Message
	if n > 0 {
		if list, err = c.Fetch(ctx, newest(uids, n), false); err != nil {
			return tool.Result{}, serverError("fetching envelopes from "+mb.Name, err)
		}
	}
	items := make([]map[string]any, 0, len(list))
	var lines []string
	for i := len(list) - 1; i >= 0; i-- {
		m := list[i]
		item := map[string]any{"uid": m.UID, "from": firstAddr(m.From), "subject": clean(m.Subject), "size": m.Size}
		if !m.Date.IsZero() {
			item["date"] = m.Date.Format(time.RFC3339)
		}
		items = append(items, item)
		if len(lines) < 3 {
			lines = append(lines, fmt.Sprintf("%s from %s", quoteSubject(clean(m.Subject)), firstAddr(m.From)))
		}
	}
	summary := fmt.Sprintf("%d unseen of %s in %s", len(uids), plural(mb.Exists, "message"), mb.Name)
	if len(lines) > 0 {
		summary += "; newest: " + strings.Join(lines, "; ")
	}
	return tool.Success(summary, map[string]any{
		"mailbox": mb.Name, "unseen": len(uids), "total": mb.Exists, "newest": items,
	}), nil
}
