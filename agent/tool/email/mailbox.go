package email

import (
	"context"
	"fmt"
	"strings"

	"choir/agent/egress"
	"choir/agent/tool"
	"choir/internal/imap"
)

// MaxMessageBytes bounds one received message: a bigger one is listed
// with its envelope and size, its body left on the server.
const MaxMessageBytes = 10 << 20

// open logs in to the account's IMAP server and opens mailbox, read-only
// unless write.
func open(ctx context.Context, acct *account, mailbox string, write bool) (*imap.Client, imap.Mailbox, error) {
	if mailbox == "" {
		mailbox = "INBOX"
	}
	c, err := imap.Dial(ctx, imap.Config{
		Host: acct.IMAPHost, Port: acct.IMAPPort, Username: acct.user, Password: acct.password,
		RootCAs: acct.roots, MaxLiteral: MaxMessageBytes + 64<<10, Dial: egress.DialContext,
	})
	if err != nil {
		return nil, imap.Mailbox{}, serverError(fmt.Sprintf("connecting to %s:%d", acct.IMAPHost, acct.IMAPPort), err)
	}
	mb, err := c.Select(ctx, mailbox, !write)
	if err != nil {
		c.Logout(ctx)
		if e, ok := err.(*imap.Error); ok && e.Status == "NO" {
			return nil, imap.Mailbox{}, tool.Errorf(tool.CodeNotFound, "mailbox %q cannot be opened: %s (INBOX always exists)", mailbox, e.Text)
		}
		return nil, imap.Mailbox{}, serverError("opening mailbox "+mailbox, err)
	}
	return c, mb, nil
}

// addrs renders addresses for the model.
func addrs(list []imap.Address) []string {
	out := make([]string, len(list))
	for i, a := range list {
		out[i] = clean(a.String())
	}
	return out
}

// newest returns the last n of uids (the server lists them ascending).
func newest(uids []uint32, n int) []uint32 {
	if len(uids) > n {
		return uids[len(uids)-n:]
	}
	return uids
}

// firstAddr is the first address, or "".
func firstAddr(list []imap.Address) string {
	if len(list) == 0 {
		return ""
	}
	return clean(list[0].String())
}

func quoteSubject(s string) string {
	if strings.TrimSpace(s) == "" {
		return "(no subject)"
	}
	return fmt.Sprintf("%q", s)
}
