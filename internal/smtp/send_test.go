package smtp

import (
	"context"
	"encoding/base64"
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"net/mail"
	"path"
	"sort"
	"strings"
	"testing"
	"time"
)

func testMessage() *Message {
	return &Message{
		From: "Alice <alice@example.com>", To: []string{"bob@example.com"},
		Subject: "hello", Text: "hi Bob\n",
	}
}

// submission plays a STARTTLS submission server offering mechs, up to and
// including the auth step, which auth plays; it returns the DATA body.
func submission(mechs string, auth func(s *session) bool) func(s *session) string {
	return func(s *session) string {
		s.Send("220 fake ESMTP")
		s.Expect("EHLO")
		s.Send("250-fake", "250-STARTTLS", "250 8BITMIME")
		s.Expect("STARTTLS")
		s.Send("220 go ahead")
		s.StartTLS()
		s.Expect("EHLO")
		s.Send("250-fake", "250 AUTH "+mechs)
		if !auth(s) {
			return ""
		}
		s.Expect("MAIL FROM:<alice@example.com>")
		s.Send("250 ok")
		for {
			l := s.Recv()
			if strings.HasPrefix(l, "RCPT") {
				s.Send("250 ok")
				continue
			}
			if l != "DATA" {
				s.T.Errorf("client sent %q; want RCPT or DATA", l)
				return ""
			}
			break
		}
		s.Send("354 go")
		body := data(s)
		s.Send("250 queued")
		s.Expect("QUIT")
		s.Send("221 bye")
		return body
	}
}

func TestSendStartTLSAuthPlain(t *testing.T) {
	var body string
	script := submission("PLAIN LOGIN", func(s *session) bool {
		l := s.Expect("AUTH PLAIN ")
		raw, _ := base64.StdEncoding.DecodeString(strings.TrimPrefix(l, "AUTH PLAIN "))
		if string(raw) != "\x00alice\x00s3cret" {
			s.T.Errorf("AUTH PLAIN carried %q", raw)
		}
		s.Send("235 ok")
		return true
	})
	srv, pool := serve(t, false, func(s *session) { body = script(s) })
	msg := testMessage()
	msg.Cc = []string{"Carol <carol@example.com>"}
	rc, err := Send(context.Background(), config(srv, pool), msg)
	if err != nil {
		t.Fatalf("Send = %v", err)
	}
	srv.Wait()
	if len(rc.Recipients) != 2 || rc.Recipients[1] != "carol@example.com" {
		t.Errorf("Recipients = %v; want bob and carol", rc.Recipients)
	}
	m, err := mail.ReadMessage(strings.NewReader(body))
	if err != nil {
		t.Fatalf("server got an unreadable message: %v\n%s", err, body)
	}
	if got := m.Header.Get("Message-ID"); got != "<"+rc.MessageID+">" {
		t.Errorf("Message-ID = %q; want <%s>", got, rc.MessageID)
	}
	if m.Header.Get("Cc") != `Carol <carol@example.com>` {
		t.Errorf("Cc = %q", m.Header.Get("Cc"))
	}
}

func TestSendAuthLoginWhenPlainIsNotOffered(t *testing.T) {
	script := submission("LOGIN", func(s *session) bool {
		s.Expect("AUTH LOGIN")
		s.Send("334 " + base64.StdEncoding.EncodeToString([]byte("Username:")))
		if u, _ := base64.StdEncoding.DecodeString(s.Recv()); string(u) != "alice" {
			s.T.Errorf("LOGIN user = %q", u)
		}
		s.Send("334 " + base64.StdEncoding.EncodeToString([]byte("Password:")))
		if p, _ := base64.StdEncoding.DecodeString(s.Recv()); string(p) != "s3cret" {
			s.T.Errorf("LOGIN password = %q", p)
		}
		s.Send("235 ok")
		return true
	})
	srv, pool := serve(t, false, func(s *session) { script(s) })
	if _, err := Send(context.Background(), config(srv, pool), testMessage()); err != nil {
		t.Fatalf("Send = %v", err)
	}
}

func TestSendImplicitTLS(t *testing.T) {
	srv, pool := serve(t, true, func(s *session) {
		s.Send("220 fake ESMTP")
		s.Expect("EHLO")
		s.Send("250-fake", "250 AUTH PLAIN")
		s.Expect("AUTH PLAIN")
		s.Send("235 ok")
		s.Expect("MAIL FROM")
		s.Send("250 ok")
		s.Expect("RCPT TO:<bob@example.com>")
		s.Send("250 ok")
		s.Expect("DATA")
		s.Send("354 go")
		data(s)
		s.Send("250 queued")
		s.Expect("QUIT")
		s.Send("221 bye")
	})
	cfg := config(srv, pool)
	cfg.TLS = Implicit
	if _, err := Send(context.Background(), cfg, testMessage()); err != nil {
		t.Fatalf("Send over implicit TLS = %v", err)
	}
}

// A server that offers no STARTTLS never sees AUTH: the password stays home.
func TestSendRefusesServerWithoutStartTLS(t *testing.T) {
	srv, pool := serve(t, false, func(s *session) {
		s.Send("220 fake ESMTP")
		s.Expect("EHLO")
		s.Send("250-fake", "250 AUTH PLAIN LOGIN")
		for s.Recv() != "" {
			s.Send("250 ok")
		}
	})
	_, err := Send(context.Background(), config(srv, pool), testMessage())
	var se *Error
	if !errors.As(err, &se) || se.Stage != "starttls" || !strings.Contains(err.Error(), "unencrypted") {
		t.Fatalf("Send to a server without STARTTLS = %v; want a starttls refusal", err)
	}
	srv.Wait()
	for _, l := range srv.Lines() {
		if strings.HasPrefix(l, "AUTH") || strings.Contains(l, base64.StdEncoding.EncodeToString([]byte("\x00alice\x00s3cret"))) {
			t.Errorf("client sent %q over an unencrypted link", l)
		}
	}
}

func TestSendRefusals(t *testing.T) {
	tests := []struct {
		name      string
		script    func(s *session)
		stage     string
		code      int
		recipient string
		hint      string
	}{
		{"wrong password", func(s *session) {
			submission("PLAIN", func(s *session) bool { s.Recv(); s.Send("535 5.7.8 bad credentials"); return false })(s)
			s.Recv()
		}, "auth", 535, "", "password"},
		{"recipient refused", func(s *session) {
			submission("PLAIN", func(s *session) bool { s.Recv(); s.Send("235 ok"); return false })(s)
			s.Expect("MAIL")
			s.Send("250 ok")
			s.Expect("RCPT")
			s.Send("550 5.1.1 no such user")
			s.Recv()
		}, "rcpt", 550, "bob@example.com", "refused this recipient"},
		{"greeting refused", func(s *session) { s.Send("554 go away"); s.Recv() }, "greeting", 554, "", ""},
		{"no auth offered", func(s *session) {
			s.Send("220 fake")
			s.Expect("EHLO")
			s.Send("250-fake", "250 STARTTLS")
			s.Expect("STARTTLS")
			s.Send("220 go")
			s.StartTLS()
			s.Expect("EHLO")
			s.Send("250 fake")
			s.Recv()
		}, "auth", 0, "", ""},
		{"unknown mechanisms only", func(s *session) {
			submission("CRAM-MD5 XOAUTH2", func(s *session) bool { return false })(s)
			s.Recv()
		}, "auth", 0, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, pool := serve(t, false, tt.script)
			_, err := Send(context.Background(), config(srv, pool), testMessage())
			var se *Error
			if !errors.As(err, &se) || se.Stage != tt.stage || se.Code != tt.code || se.Recipient != tt.recipient {
				t.Fatalf("Send = %#v; want stage %s code %d recipient %q", err, tt.stage, tt.code, tt.recipient)
			}
			if !strings.Contains(err.Error(), tt.hint) {
				t.Errorf("error %q lacks %q", err, tt.hint)
			}
		})
	}
}

func TestSendTimesOutOnASilentServer(t *testing.T) {
	release := make(chan struct{})
	srv, pool := serve(t, false, func(s *session) { <-release })
	defer close(release)
	cfg := config(srv, pool)
	cfg.Timeout = 200 * time.Millisecond
	_, err := Send(context.Background(), cfg, testMessage())
	var se *Error
	if !errors.As(err, &se) || !se.Timeout || !strings.Contains(err.Error(), "did not answer in time") {
		t.Fatalf("Send to a silent server = %v; want a timeout error", err)
	}
}

func TestSendRefusesAnUntrustedCertificate(t *testing.T) {
	srv, _ := serve(t, true, func(s *session) { s.Recv() })
	cfg := config(srv, nil)
	cfg.TLS = Implicit
	_, err := Send(context.Background(), cfg, testMessage())
	if err == nil || !strings.Contains(err.Error(), "unknown authority") || !strings.Contains(err.Error(), "ca_pem") {
		t.Fatalf("Send to a self-signed server without its CA = %v; want an unknown-authority error naming ca_pem", err)
	}
}

func TestMessageMIME(t *testing.T) {
	msg := &Message{
		From: "Zoë Ærø <zoe@example.com>", To: []string{"bob@example.com", "Ann <ann@example.com>"},
		Subject: "Rapport trimestriel — données 📈 " + strings.Repeat("long ", 20),
		Text:    "Bonjour,\nvoici le café ☕ et une ligne très longue " + strings.Repeat("x", 200) + "\n.\n",
		Attachments: []Attachment{
			{Name: "report.pdf", Data: []byte("%PDF-1.4 \x00\x01\x02 binary")},
			{Name: "données.csv", Data: []byte("a,b\n1,2\n")},
		},
		Date: time.Date(2026, 11, 25, 9, 0, 0, 0, time.UTC),
	}
	raw, err := msg.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(raw), "\r\n") {
		if len(l) > 998 {
			t.Errorf("line of %d bytes; RFC 5322 allows 998", len(l))
		}
		for i := 0; i < len(l); i++ {
			if l[i] >= 0x80 {
				t.Fatalf("raw 8-bit byte in %q; every header and part must be 7-bit", l)
			}
		}
	}
	m, err := mail.ReadMessage(strings.NewReader(string(raw)))
	if err != nil {
		t.Fatal(err)
	}
	dec := new(mime.WordDecoder)
	if s, _ := dec.DecodeHeader(m.Header.Get("Subject")); s != msg.Subject {
		t.Errorf("Subject decodes to %q; want %q", s, msg.Subject)
	}
	if from, _ := m.Header.AddressList("From"); len(from) != 1 || from[0].Name != "Zoë Ærø" {
		t.Errorf("From = %v", from)
	}
	if to, _ := m.Header.AddressList("To"); len(to) != 2 {
		t.Errorf("To = %v", to)
	}
	if d, _ := m.Header.Date(); !d.Equal(msg.Date) {
		t.Errorf("Date = %v", d)
	}
	mt, params, _ := mime.ParseMediaType(m.Header.Get("Content-Type"))
	if mt != "multipart/mixed" {
		t.Fatalf("Content-Type = %q", mt)
	}
	mr := multipart.NewReader(m.Body, params["boundary"])
	var parts []string
	for {
		p, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(p) // decodes quoted-printable itself
		if name := p.FileName(); name != "" {
			d, err := base64.StdEncoding.DecodeString(strings.ReplaceAll(string(b), "\r\n", ""))
			if err != nil {
				t.Fatalf("attachment %s: %v", name, err)
			}
			parts = append(parts, name+"="+string(d))
		} else {
			parts = append(parts, "text="+string(b))
		}
	}
	want := []string{
		"text=" + strings.ReplaceAll(msg.Text, "\n", "\r\n"),
		"report.pdf=" + string(msg.Attachments[0].Data),
		"données.csv=" + string(msg.Attachments[1].Data),
	}
	if strings.Join(parts, "|") != strings.Join(want, "|") {
		t.Errorf("parts = %q\nwant %q", parts, want)
	}
}

func TestMessageRefusesHeaderInjection(t *testing.T) {
	for _, m := range []*Message{
		{From: "a@example.com", To: []string{"b@example.com"}, Subject: "hi\r\nBcc: evil@example.com"},
		{From: "a@example.com", To: []string{"b@example.com\r\nBcc: evil@example.com"}},
		{From: "a@example.com\nX: y", To: []string{"b@example.com"}},
		{From: "a@example.com", To: []string{"not an address"}},
		{From: "a@example.com"},
		{From: "a@example.com", To: []string{"b@example.com"}, Attachments: []Attachment{{Name: "a\r\nb.txt"}}},
		{From: "a@example.com", To: []string{"b@example.com"}, MessageID: "x>\r\nBcc: e@x"},
	} {
		if raw, err := m.Bytes(); err == nil {
			t.Errorf("Bytes(%+v) = %q; want a refusal", m, raw)
		}
	}
}

// Whatever the model puts in a subject, a name or the text, the message
// either is refused or has exactly the headers Bytes writes, folded into
// lines of at most 76 characters: nothing can inject a Bcc or a second
// body, and the subject, the name and the file name read back as given.
func FuzzMessage(f *testing.F) {
	f.Add("hello", "Zoë", "a.txt", "text\r\n.\r\n")
	f.Add("a\r\nBcc: x@evil.com", "x\"y", "b\r\n.pdf", "\x00")
	f.Add(strings.Repeat("données ", 200), "0"+strings.Repeat("\xe3", 270), strings.Repeat("é", 400)+".txt", "")
	f.Fuzz(func(t *testing.T, subject, name, file, text string) {
		m := &Message{
			From: "a@example.com", To: []string{(&mail.Address{Name: name, Address: "b@example.com"}).String()},
			Subject: subject, Text: text, Attachments: []Attachment{{Name: file, Data: []byte(text)}},
		}
		raw, err := m.Bytes()
		if err != nil {
			return
		}
		msg, err := mail.ReadMessage(strings.NewReader(string(raw)))
		if err != nil {
			t.Fatalf("unreadable message: %v\n%q", err, raw)
		}
		var keys []string
		for k := range msg.Header {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		if got := strings.Join(keys, ","); got != "Content-Type,Date,From,Message-Id,Mime-Version,Subject,To" {
			t.Fatalf("headers %s\n%q", got, raw)
		}
		// No address here is long, so every line, headers, quoted-printable
		// and base64 alike, keeps to 76 characters.
		for _, l := range strings.Split(string(raw), "\r\n") {
			if len(l) > softMax || strings.ContainsAny(l, "\r\n") {
				t.Fatalf("bad line %q", l)
			}
		}
		if got, _ := new(mime.WordDecoder).DecodeHeader(msg.Header.Get("Subject")); got != subject {
			t.Fatalf("Subject reads back as %q; want %q\n%q", got, subject, raw)
		}
		want, _ := mail.ParseAddress(m.To[0])
		if to, err := msg.Header.AddressList("To"); err != nil || len(to) != 1 || *to[0] != *want {
			t.Fatalf("To reads back as %v, %v; want %v\n%q", to, err, want, raw)
		}
		_, params, _ := mime.ParseMediaType(msg.Header.Get("Content-Type"))
		mr := multipart.NewReader(msg.Body, params["boundary"])
		mr.NextPart() // the text
		p, err := mr.NextPart()
		if err != nil {
			t.Fatalf("no attachment part: %v\n%q", err, raw)
		}
		if got, want := p.FileName(), path.Base(strings.ReplaceAll(file, "\\", "/")); got != want {
			t.Fatalf("file name reads back as %q; want %q\n%q", got, want, raw)
		}
	})
}
