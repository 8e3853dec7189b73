package imap_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"choir/internal/imap"
	"choir/testkit/mailtest"
)

func realConfig(d *mailtest.Dovecot, port int, mode imap.TLSMode) imap.Config {
	return imap.Config{Host: "127.0.0.1", Port: port, TLS: mode, Username: mailtest.User,
		Password: mailtest.Password, RootCAs: d.Cert.Pool, Timeout: 20 * time.Second}
}

// Against a real Dovecot, over both TLS modes: search, fetch, mark seen.
func TestRealDovecot(t *testing.T) {
	d := mailtest.StartDovecot(t, "", mailtest.NewCert(t))
	d.Deliver(t, "From: =?utf-8?Q?Zo=C3=AB?= <zoe@example.com>\nTo: alice@choir.test\nSubject: =?utf-8?B?Q2Fmw6kg4piV?=\n"+
		"Date: Tue, 24 Nov 2026 08:00:00 +0000\nMessage-ID: <one@example.com>\n\nfirst\n")
	d.Deliver(t, "From: bob@example.com\nSubject: second \"quoted\" (paren)\nMessage-ID: <two@example.com>\n\nsecond\n")
	ctx := context.Background()
	for _, tt := range []struct {
		name string
		port int
		mode imap.TLSMode
	}{{"starttls", d.IMAPPort, imap.StartTLS}, {"implicit", d.IMAPSPort, imap.Implicit}} {
		t.Run(tt.name, func(t *testing.T) {
			c, err := imap.Dial(ctx, realConfig(d, tt.port, tt.mode))
			if err != nil {
				t.Fatalf("Dial = %v", err)
			}
			defer c.Logout(ctx)
			mb, err := c.Select(ctx, "INBOX", true)
			if err != nil || mb.Exists != 2 || mb.UIDValidity == 0 {
				t.Fatalf("EXAMINE INBOX = %+v, %v", mb, err)
			}
			uids, err := c.Search(ctx, imap.Criteria{Unseen: true, Since: time.Now().AddDate(0, 0, -1)})
			if err != nil || len(uids) != 2 {
				t.Fatalf("Search = %v, %v; want 2 unseen", uids, err)
			}
			msgs, err := c.Fetch(ctx, uids, true)
			if err != nil || len(msgs) != 2 {
				t.Fatalf("Fetch = %v, %v", msgs, err)
			}
			if m := msgs[0]; m.Subject != "Café ☕" || m.From[0].String() != "Zoë <zoe@example.com>" ||
				m.MessageID != "<one@example.com>" || !strings.Contains(string(m.Body), "first") || m.Size != int64(len(m.Body)) || m.Seen() {
				t.Errorf("message 1 = %+v", m)
			}
			if m := msgs[1]; m.Subject != `second "quoted" (paren)` {
				t.Errorf("message 2 subject = %q", m.Subject)
			}
		})
	}
	// Mark the first seen; a new session sees one unseen left.
	c, err := imap.Dial(ctx, realConfig(d, d.IMAPSPort, imap.Implicit))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Select(ctx, "INBOX", false); err != nil {
		t.Fatal(err)
	}
	uids, _ := c.Search(ctx, imap.Criteria{Unseen: true})
	if err := c.MarkSeen(ctx, uids[:1]); err != nil {
		t.Fatalf("MarkSeen = %v", err)
	}
	c.Logout(ctx)
	c, err = imap.Dial(ctx, realConfig(d, d.IMAPSPort, imap.Implicit))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Logout(ctx)
	c.Select(ctx, "INBOX", true)
	left, err := c.Search(ctx, imap.Criteria{Unseen: true})
	if err != nil || fmt.Sprint(left) != fmt.Sprint(uids[1:]) {
		t.Errorf("unseen after marking %v = %v, %v; want %v", uids[:1], left, err, uids[1:])
	}
}

func TestRealDovecotRefusals(t *testing.T) {
	d := mailtest.StartDovecot(t, "", mailtest.NewCert(t))
	ctx := context.Background()
	cfg := realConfig(d, d.IMAPSPort, imap.Implicit)
	cfg.Password = "wrong"
	_, err := imap.Dial(ctx, cfg)
	var e *imap.Error
	if !errors.As(err, &e) || e.Status != "NO" || !strings.Contains(err.Error(), "password of the email account is wrong") {
		t.Errorf("Dial with a wrong password = %v", err)
	}
	c, err := imap.Dial(ctx, realConfig(d, d.IMAPSPort, imap.Implicit))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Logout(ctx)
	if _, err := c.Select(ctx, "No/Such", true); !errors.As(err, &e) || e.Status != "NO" {
		t.Errorf("EXAMINE of a missing mailbox = %v; want NO", err)
	}
}

// A message over MaxLiteral is refused with a clear error.
func TestRealDovecotOversizedMessage(t *testing.T) {
	d := mailtest.StartDovecot(t, "", mailtest.NewCert(t))
	d.Deliver(t, "Subject: big\n\n"+strings.Repeat("0123456789abcdef\n", 1<<14))
	ctx := context.Background()
	cfg := realConfig(d, d.IMAPSPort, imap.Implicit)
	cfg.MaxLiteral = 64 << 10
	c, err := imap.Dial(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Select(ctx, "INBOX", true)
	uids, _ := c.Search(ctx, imap.Criteria{})
	msgs, err := c.Fetch(ctx, uids, false)
	if err != nil || len(msgs) != 1 || msgs[0].Size < 256<<10 {
		t.Fatalf("Fetch without body = %+v, %v", msgs, err)
	}
	var tl *imap.TooLargeError
	if _, err := c.Fetch(ctx, uids, true); !errors.As(err, &tl) || tl.Limit != 64<<10 {
		t.Errorf("Fetch of a 272 KiB body under a 64 KiB cap = %v; want *TooLargeError", err)
	}
}
