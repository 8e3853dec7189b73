package email

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path"
	"strings"
	"time"

	"choir/agent/egress"
	"choir/agent/tool"
	"choir/agent/tool/workspace"
	"choir/internal/config"
	"choir/internal/smtp"
)

// Limits of choir.email.send.
const (
	// MaxAttachmentBytes bounds the attachments of one message together
	// (base64 makes them a third larger on the wire; common servers take
	// 25 MB).
	MaxAttachmentBytes = 15 << 20
	// MaxAttachments bounds their number.
	MaxAttachments = 10
	// MaxRecipients bounds To and Cc together.
	MaxRecipients = 50
	// MaxBodyBytes bounds the text.
	MaxBodyBytes = 1 << 20
)

// Send is choir.email.send: one plain-text message, with files of the
// workspace attached, from the session's email account over SMTP.
type Send struct {
	llm     tool.LLMTool
	dynamic func() config.Dynamic
}

var _ tool.Tool = (*Send)(nil)

const sendParams = `{
  "type": "object",
  "properties": {
    "to": {"type": "array", "items": {"type": "string", "minLength": 3, "maxLength": 320},
      "description": "Recipients, as a@example.com or \"Name <a@example.com>\"."},
    "cc": {"type": "array", "items": {"type": "string", "minLength": 3, "maxLength": 320}, "description": "Copy recipients."},
    "subject": {"type": "string", "maxLength": 900, "description": "Subject line (one line; any language)."},
    "body": {"type": "string", "description": "Plain-text body."},
    "attachments": {"type": "array", "items": {"type": "string", "minLength": 1},
      "description": "Workspace-relative paths of files to attach (15 MB in all at most)."}
  },
  "required": ["to", "subject", "body"],
  "additionalProperties": false
}`

// NewSend returns choir.email.send reading the account from dynamic per
// call.
func NewSend(dynamic func() config.Dynamic) *Send {
	return &Send{
		llm: tool.LLMTool{
			Name: "choir.email.send",
			Description: "Send a plain-text email from this agent's email account, optionally attaching files of the workspace. " +
				"It really sends: check recipients and content first.",
			Parameters: json.RawMessage(sendParams),
		},
		dynamic: dynamic,
	}
}

func (t *Send) Name() string      { return t.llm.Name }
func (t *Send) LLM() tool.LLMTool { return t.llm }
func (t *Send) Runtime() tool.Runtime {
	return tool.Runtime{
		Timeout: 2 * time.Minute, Network: true, SecretResources: []string{tool.SecretEmail},
		SideEffect: tool.SideEffectExternal, Version: "1", Exposure: tool.ExposeBoth,
	}
}

type sendInput struct {
	To          []string `json:"to"`
	Cc          []string `json:"cc"`
	Subject     string   `json:"subject"`
	Body        string   `json:"body"`
	Attachments []string `json:"attachments"`
}

// Locks is file:<path> S on each attachment (choirtmp S for one under
// .choirtmp/) and nothing else: sending itself locks nothing (§9.5).
func (t *Send) Locks(input json.RawMessage) ([]tool.LockReq, error) {
	var in sendInput
	if err := json.Unmarshal(input, &in); err != nil {
		return nil, tool.Errorf(tool.CodeInvalidInput, "%v", err)
	}
	seen := map[string]bool{}
	var locks []tool.LockReq
	for _, p := range in.Attachments {
		clean, err := workspace.Clean(p)
		if err != nil {
			return nil, err
		}
		key := "file:" + clean
		switch {
		case clean == ".":
			return nil, tool.PathErrorf(tool.CodeIsDirectory, p, "the workspace root is a directory; attach files")
		case clean == ".choirtmp" || strings.HasPrefix(clean, ".choirtmp/"):
			key = "choirtmp"
		}
		if !seen[key] {
			seen[key] = true
			locks = append(locks, tool.LockReq{Key: key, Mode: tool.Shared})
		}
	}
	return locks, nil
}

// Execute sends the message.
func (t *Send) Execute(ctx context.Context, input json.RawMessage, env tool.Env) (tool.Result, error) {
	var in sendInput
	if err := json.Unmarshal(input, &in); err != nil {
		return tool.Result{}, tool.Errorf(tool.CodeInvalidInput, "%v", err)
	}
	switch {
	case len(in.To) == 0:
		return tool.Result{}, tool.Errorf(tool.CodeInvalidInput, "to is empty: give at least one recipient")
	case len(in.To)+len(in.Cc) > MaxRecipients:
		return tool.Result{}, tool.Errorf(tool.CodeInvalidInput, "%d recipients; at most %d", len(in.To)+len(in.Cc), MaxRecipients)
	}
	if len(in.Body) > MaxBodyBytes {
		return tool.Result{}, tool.Errorf(tool.CodeTooLarge, "the body has %d bytes; at most %d: attach long text as a file", len(in.Body), MaxBodyBytes)
	}
	acct, err := resolve(t.dynamic, env)
	if err != nil {
		return tool.Result{}, err
	}
	if acct.from == "" {
		return tool.Result{}, tool.Errorf(CodeNotConfigured, "the email account's user name %q is not an address: "+
			"set its address in config.json (email_accounts.<name>.address)", acct.user)
	}
	atts, err := readAttachments(env.Workspace, in.Attachments)
	if err != nil {
		return tool.Result{}, err
	}
	msg := &smtp.Message{From: acct.from, To: in.To, Cc: in.Cc, Subject: in.Subject, Text: in.Body, Attachments: atts}
	if _, err := msg.Bytes(); err != nil { // an address or the subject is wrong: the model's to fix
		return tool.Result{}, tool.Errorf(tool.CodeInvalidInput, "%v", err)
	}
	rc, err := smtp.Send(ctx, smtp.Config{
		Host: acct.SMTPHost, Port: acct.SMTPPort, Username: acct.user, Password: acct.password, RootCAs: acct.roots, Dial: egress.DialContext,
	}, msg)
	if err != nil {
		return tool.Result{}, serverError(fmt.Sprintf("sending through %s:%d failed; nothing was sent", acct.SMTPHost, acct.SMTPPort), err)
	}
	names := make([]map[string]any, len(atts))
	for i, a := range atts {
		names[i] = map[string]any{"name": a.Name, "path": in.Attachments[i], "size": len(a.Data)}
	}
	summary := fmt.Sprintf("sent %q to %s", in.Subject, strings.Join(rc.Recipients, ", "))
	if len(atts) > 0 {
		summary += " with " + plural(len(atts), "attachment")
	}
	return tool.Success(summary, map[string]any{
		"message_id": "<" + rc.MessageID + ">", "from": acct.from, "recipients": rc.Recipients,
		"attachments": names, "size": rc.Size,
	}), nil
}

// readAttachments reads each confined workspace file, within the caps.
func readAttachments(root string, paths []string) ([]smtp.Attachment, error) {
	if len(paths) > MaxAttachments {
		return nil, tool.Errorf(tool.CodeInvalidInput, "%d attachments; at most %d", len(paths), MaxAttachments)
	}
	var out []smtp.Attachment
	total := int64(0)
	for _, rel := range paths {
		p, err := workspace.Confine(root, rel)
		if err != nil {
			return nil, err
		}
		f, err := os.Open(p.Abs)
		if err != nil {
			if os.IsNotExist(err) {
				return nil, tool.PathErrorf(tool.CodeNotFound, p.Rel, "no such file to attach")
			}
			return nil, tool.PathErrorf(tool.CodeIO, p.Rel, "open: %v", err)
		}
		fi, err := f.Stat()
		if err == nil && !fi.Mode().IsRegular() {
			f.Close()
			if fi.IsDir() {
				return nil, tool.PathErrorf(tool.CodeIsDirectory, p.Rel, "a directory cannot be attached; archive it first (choir.exec: tar czf x.tgz dir)")
			}
			return nil, tool.PathErrorf(tool.CodeIO, p.Rel, "not a regular file")
		}
		left := MaxAttachmentBytes - total
		data, err := io.ReadAll(io.LimitReader(f, left+1))
		f.Close()
		if err != nil {
			return nil, tool.PathErrorf(tool.CodeIO, p.Rel, "read: %v", err)
		}
		if int64(len(data)) > left {
			return nil, tool.PathErrorf(tool.CodeTooLarge, p.Rel, "the attachments pass %d MB together; send fewer or smaller files, "+
				"or share a link instead", MaxAttachmentBytes>>20)
		}
		total += int64(len(data))
		out = append(out, smtp.Attachment{Name: path.Base(p.Rel), Data: data})
	}
	return out, nil
}
