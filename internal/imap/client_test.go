package imap

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"choir/testkit/linetest"
)

func dial(t *testing.T, srv *linetest.Server, cfg Config) *Client {
	t.Helper()
	c, err := Dial(context.Background(), cfg)
	if err != nil {
		t.Fatalf("Dial = %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestSelectSearchFetchStore(t *testing.T) {
	srv, pool := serve(t, true, func(s *session) {
		greetAndLogin(s)
		tag := tagOf(s.Expect(`C002 SELECT "INBOX"`))
		s.Send(`* FLAGS (\Answered \Flagged \Deleted \Seen \Draft)`,
			`* OK [PERMANENTFLAGS (\Answered \Flagged \Deleted \Seen \Draft \*)] Flags permitted.`,
			"* 3 EXISTS", "* 0 RECENT",
			"* OK [UIDVALIDITY 1700000000] UIDs valid", "* OK [UIDNEXT 12] Predicted next UID",
			tag+" OK [READ-WRITE] Select completed.")
		tag = tagOf(s.Expect("C003 UID SEARCH UNSEEN SINCE 1-Nov-2026"))
		s.Send("* SEARCH 9 11", tag+" OK Search completed.")
		tag = tagOf(s.Expect("C004 UID FETCH 9,11 (UID FLAGS RFC822.SIZE ENVELOPE BODY.PEEK[])"))
		body := "Subject: hi\r\n\r\nhello\r\n"
		s.Send(
			// An unsolicited flag update: no UID, not a message of ours.
			`* 2 FETCH (FLAGS (\Seen))`,
			// The envelope's subject arrives as a literal; an encoded
			// word; a group address; NIL cc.
			fmt.Sprintf(`* 3 FETCH (UID 11 FLAGS () RFC822.SIZE 4200 ENVELOPE ("Wed, 25 Nov 2026 09:00:00 +0000" {%d}`, len("=?utf-8?B?Q2Fmw6kg4piV?= (1)")),
			`=?utf-8?B?Q2Fmw6kg4piV?= (1) (("=?utf-8?Q?Zo=C3=AB?=" NIL "zoe" "example.com")) NIL NIL (("Undisclosed" NIL NIL NIL)("Bob" NIL "bob" "example.com")(NIL NIL "x" NIL)) NIL NIL NIL "<id11@example.com>") BODY[] {`+fmt.Sprint(len(body))+`}`,
			body+")",
			`* 1 FETCH (UID 9 FLAGS (\Flagged) RFC822.SIZE 10 ENVELOPE (NIL NIL NIL NIL NIL NIL NIL NIL NIL NIL) BODY[] NIL)`,
			tag+" OK Fetch completed.")
		tag = tagOf(s.Expect(`C005 UID STORE 9,11 +FLAGS.SILENT (\Seen)`))
		s.Send(tag + " OK Store completed.")
		tag = tagOf(s.Expect("C006 LOGOUT"))
		s.Send("* BYE Logging out", tag+" OK Logout completed.")
	})
	c := dial(t, srv, config(srv, pool))
	ctx := context.Background()
	mb, err := c.Select(ctx, "INBOX", false)
	if err != nil || mb.Exists != 3 || mb.UIDValidity != 1700000000 || mb.UIDNext != 12 {
		t.Fatalf("Select = %+v, %v", mb, err)
	}
	uids, err := c.Search(ctx, Criteria{Unseen: true, Since: time.Date(2026, 11, 1, 15, 0, 0, 0, time.UTC)})
	if err != nil || fmt.Sprint(uids) != "[9 11]" {
		t.Fatalf("Search = %v, %v", uids, err)
	}
	msgs, err := c.Fetch(ctx, uids, true)
	if err != nil || len(msgs) != 2 {
		t.Fatalf("Fetch = %+v, %v", msgs, err)
	}
	m := msgs[1]
	if m.UID != 11 || m.Subject != "Café ☕ (1)" || m.Size != 4200 || m.MessageID != "<id11@example.com>" ||
		m.Date.IsZero() || string(m.Body) != "Subject: hi\r\n\r\nhello\r\n" || m.Seen() {
		t.Errorf("message 11 = %+v", m)
	}
	if len(m.From) != 1 || m.From[0].String() != "Zoë <zoe@example.com>" {
		t.Errorf("From = %v", m.From)
	}
	if len(m.To) != 1 || m.To[0].Address != "bob@example.com" {
		t.Errorf("To = %v; want the group flattened to bob", m.To)
	}
	if msgs[0].UID != 9 || msgs[0].Subject != "" || msgs[0].Body == nil || fmt.Sprint(msgs[0].Flags) != `[\Flagged]` {
		t.Errorf("message 9 = %+v", msgs[0])
	}
	if err := c.MarkSeen(ctx, uids); err != nil {
		t.Fatalf("MarkSeen = %v", err)
	}
	if err := c.Logout(ctx); err != nil {
		t.Fatalf("Logout = %v", err)
	}
}

func TestLoginQuotesAndLiterals(t *testing.T) {
	tests := []struct {
		name, pass string
		script     func(s *session)
	}{
		{"quote and backslash", `p"a\ss`, func(s *session) {
			s.Expect(`C001 LOGIN "alice" "p\"a\\ss"`)
		}},
		{"utf-8 as a literal", "pässwörd", func(s *session) {
			s.Expect(`C001 LOGIN "alice" {10}`)
			s.Send("+ go ahead")
			if l := s.Recv(); l != "pässwörd" {
				s.T.Errorf("literal = %q", l)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, pool := serve(t, true, func(s *session) {
				s.Send("* OK [CAPABILITY IMAP4rev1] hi")
				tt.script(s)
				s.Send("C001 OK done")
			})
			cfg := config(srv, pool)
			cfg.Password = tt.pass
			dial(t, srv, cfg)
		})
	}
}

func TestAuthenticatePlain(t *testing.T) {
	ir := base64.StdEncoding.EncodeToString([]byte("\x00alice\x00s3cret"))
	t.Run("with continuation", func(t *testing.T) {
		srv, pool := serve(t, true, func(s *session) {
			s.Send("* OK [CAPABILITY IMAP4rev1 AUTH=PLAIN] hi")
			s.Expect("C001 AUTHENTICATE PLAIN")
			s.Send("+ ")
			if l := s.Recv(); l != ir {
				s.T.Errorf("PLAIN response = %q", l)
			}
			s.Send("C001 OK [CAPABILITY IMAP4rev1] logged in")
		})
		dial(t, srv, config(srv, pool))
	})
	t.Run("SASL-IR", func(t *testing.T) {
		srv, pool := serve(t, true, func(s *session) {
			s.Send("* OK hi")
			s.Expect("C001 CAPABILITY")
			s.Send("* CAPABILITY IMAP4rev1 SASL-IR AUTH=PLAIN LOGINDISABLED", "C001 OK")
			s.Expect("C002 AUTHENTICATE PLAIN " + ir)
			s.Send("C002 OK done")
		})
		dial(t, srv, config(srv, pool))
	})
}

func TestStartTLS(t *testing.T) {
	srv, pool := serve(t, false, func(s *session) {
		s.Send("* OK [CAPABILITY IMAP4rev1 STARTTLS LOGINDISABLED] hi")
		s.Expect("C001 STARTTLS")
		s.Send("C001 OK begin TLS")
		s.StartTLS()
		s.Expect("C002 CAPABILITY")
		s.Send("* CAPABILITY IMAP4rev1 AUTH=PLAIN SASL-IR", "C002 OK")
		s.Expect("C003 AUTHENTICATE PLAIN ")
		s.Send("C003 OK done")
	})
	cfg := config(srv, pool)
	cfg.TLS = StartTLS
	dial(t, srv, cfg)
}

// Plain-text bytes sent with the STARTTLS answer (an injection a
// man-in-the-middle could make, CVE-2011-0411's kind) are refused, not
// read as if they came over TLS.
func TestStartTLSInjectionRefused(t *testing.T) {
	srv, pool := serve(t, false, func(s *session) {
		s.Send("* OK [CAPABILITY IMAP4rev1 STARTTLS] hi")
		s.Expect("C001 STARTTLS")
		s.Conn.Write([]byte("C001 OK begin TLS\r\n* CAPABILITY IMAP4rev1 AUTH=PLAIN\r\n"))
		s.Recv()
	})
	cfg := config(srv, pool)
	cfg.TLS = StartTLS
	_, err := Dial(context.Background(), cfg)
	if err == nil || !strings.Contains(err.Error(), "sent data before the TLS handshake") {
		t.Fatalf("Dial with injected bytes after STARTTLS = %v; want a refusal", err)
	}
}

// A server that offers no STARTTLS never sees the password.
func TestRefusesPlainTextLogin(t *testing.T) {
	srv, pool := serve(t, false, func(s *session) {
		s.Send("* OK [CAPABILITY IMAP4rev1 AUTH=PLAIN] hi")
		for l := s.Recv(); l != ""; l = s.Recv() {
			s.Send(tagOf(l) + " OK")
		}
	})
	cfg := config(srv, pool)
	cfg.TLS = StartTLS
	_, err := Dial(context.Background(), cfg)
	if err == nil || !strings.Contains(err.Error(), "unencrypted") {
		t.Fatalf("Dial without STARTTLS = %v; want a refusal", err)
	}
	srv.Wait()
	for _, l := range srv.Lines() {
		if strings.Contains(l, "LOGIN") || strings.Contains(l, "AUTHENTICATE") || strings.Contains(l, "s3cret") {
			t.Errorf("client sent %q over an unencrypted link", l)
		}
	}
}

func TestCommandErrors(t *testing.T) {
	tests := []struct {
		name   string
		script func(s *session)
		call   func(c *Client) error
		want   []string
		status string
	}{
		{"login refused", func(s *session) {
			s.Send("* OK [CAPABILITY IMAP4rev1] hi")
			s.Recv()
			s.Send("C001 NO [AUTHENTICATIONFAILED] Authentication failed.")
		}, nil, []string{"LOGIN: NO [AUTHENTICATIONFAILED]", "password of the email account is wrong"}, "NO"},
		{"select BAD", func(s *session) {
			greetAndLogin(s)
			s.Recv()
			s.Send("C002 BAD Error in IMAP command SELECT: bad mailbox")
		}, func(c *Client) error { _, err := c.Select(context.Background(), "x", false); return err },
			[]string{"SELECT: BAD Error in IMAP command"}, "BAD"},
		{"mailbox missing", func(s *session) {
			greetAndLogin(s)
			s.Recv()
			s.Send("C002 NO [NONEXISTENT] Mailbox doesn't exist: Nope")
		}, func(c *Client) error { _, err := c.Select(context.Background(), "Nope", true); return err },
			[]string{"EXAMINE: NO [NONEXISTENT] Mailbox doesn't exist"}, "NO"},
		{"BYE mid command", func(s *session) {
			greetAndLogin(s)
			s.Recv()
			s.Send("* BYE Server shutting down.")
		}, func(c *Client) error { _, err := c.Search(context.Background(), Criteria{Unseen: true}); return err },
			[]string{"UID SEARCH: BYE Server shutting down."}, "BYE"},
		{"BYE at greeting", func(s *session) {
			s.Send("* BYE Too many connections")
		}, nil, []string{"greeting: BYE Too many connections"}, "BYE"},
		{"not IMAP", func(s *session) {
			s.Send("220 smtp.example.com ESMTP")
		}, nil, []string{"is this an IMAP port?"}, ""},
		{"search answers garbage", func(s *session) {
			greetAndLogin(s)
			s.Recv()
			s.Send("* SEARCH 1 two", "C002 OK")
		}, func(c *Client) error { _, err := c.Search(context.Background(), Criteria{}); return err },
			[]string{`answered "two" where a UID belongs`}, ""},
		{"unknown tag", func(s *session) {
			greetAndLogin(s)
			s.Recv()
			s.Send("Z999 OK what")
		}, func(c *Client) error { _, err := c.Search(context.Background(), Criteria{}); return err },
			[]string{`unknown tag "Z999"`}, ""},
		{"unasked continuation", func(s *session) {
			greetAndLogin(s)
			s.Recv()
			s.Send("+ more please")
		}, func(c *Client) error { _, err := c.Search(context.Background(), Criteria{}); return err },
			[]string{"continuation"}, ""},
		{"envelope of the wrong shape", func(s *session) {
			greetAndLogin(s)
			s.Recv()
			s.Send(`* 1 FETCH (UID 1 ENVELOPE ("d" "s"))`, "C002 OK")
		}, func(c *Client) error { _, err := c.Fetch(context.Background(), []uint32{1}, false); return err },
			[]string{"ENVELOPE has 2 fields; want 10"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, pool := serve(t, true, tt.script)
			c, err := Dial(context.Background(), config(srv, pool))
			if err == nil {
				defer c.Close()
				if tt.call == nil {
					t.Fatal("Dial succeeded; want an error")
				}
				err = tt.call(c)
			}
			var e *Error
			if !errors.As(err, &e) || e.Status != tt.status {
				t.Fatalf("error = %#v; want an *Error with status %q", err, tt.status)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "s3cret") {
				t.Errorf("error %q shows the password", err)
			}
		})
	}
}

// A 50 MB message is refused at its literal's header: the client closes
// the connection instead of reading it, and later calls say why.
func TestOversizedLiteralIsRefusedUnread(t *testing.T) {
	const size = 50 << 20
	sent := make(chan int, 1)
	srv, pool := serve(t, true, func(s *session) {
		greetAndLogin(s)
		s.Recv()
		s.Send(fmt.Sprintf("* 1 FETCH (UID 1 RFC822.SIZE %d BODY[] {%d}", size, size))
		chunk := make([]byte, 64<<10)
		n := 0
		for n < size {
			k, err := s.Conn.Write(chunk)
			n += k
			if err != nil {
				break
			}
		}
		sent <- n
	})
	cfg := config(srv, pool)
	cfg.MaxLiteral = 1 << 20
	c := dial(t, srv, cfg)
	_, err := c.Fetch(context.Background(), []uint32{1}, true)
	var tl *TooLargeError
	if !errors.As(err, &tl) || !strings.Contains(err.Error(), "52428800 bytes, over the 1048576-byte limit") {
		t.Fatalf("Fetch of a 50 MB message = %v; want a *TooLargeError", err)
	}
	if n := <-sent; n >= size {
		t.Errorf("the server wrote all %d bytes; the client should have closed the connection", n)
	}
	if _, err := c.Search(context.Background(), Criteria{}); err == nil || !strings.Contains(err.Error(), "unusable") {
		t.Errorf("Search after the refusal = %v; want the connection reported unusable", err)
	}
}

func TestSilentServerTimesOut(t *testing.T) {
	release := make(chan struct{})
	srv, pool := serve(t, true, func(s *session) {
		greetAndLogin(s)
		s.Recv()
		<-release
	})
	defer close(release)
	cfg := config(srv, pool)
	c := dial(t, srv, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err := c.Search(ctx, Criteria{Unseen: true})
	var e *Error
	if !errors.As(err, &e) || !e.Timeout || !strings.Contains(err.Error(), "did not answer in time") {
		t.Fatalf("Search on a silent server = %v; want a timeout", err)
	}
}

func TestSilentGreetingTimesOut(t *testing.T) {
	release := make(chan struct{})
	srv, pool := serve(t, true, func(s *session) { <-release })
	defer close(release)
	cfg := config(srv, pool)
	cfg.Timeout = 200 * time.Millisecond
	_, err := Dial(context.Background(), cfg)
	var e *Error
	if !errors.As(err, &e) || !e.Timeout {
		t.Fatalf("Dial to a silent server = %v; want a timeout", err)
	}
}

func TestUntrustedCertificate(t *testing.T) {
	srv, _ := serve(t, true, func(s *session) { s.Recv() })
	_, err := Dial(context.Background(), config(srv, nil))
	if err == nil || !strings.Contains(err.Error(), "unknown authority") {
		t.Fatalf("Dial to a self-signed server without its CA = %v", err)
	}
}
