package smtp_test

import (
	"context"
	"errors"
	"mime"
	"net/mail"
	"strings"
	"testing"
	"time"

	"choir/internal/smtp"
	"choir/testkit/mailtest"
)

// Against a real aiosmtpd with STARTTLS and AUTH required: the message
// arrives whole, over TLS, authenticated as the account's user.
func TestSendToRealServer(t *testing.T) {
	cert := mailtest.NewCert(t)
	srv := mailtest.StartSMTP(t, "", cert)
	cfg := smtp.Config{Host: "127.0.0.1", Port: srv.Port, Username: mailtest.User, Password: mailtest.Password, RootCAs: cert.Pool}
	msg := &smtp.Message{
		From: "Choir Agent <agent@choir.test>", To: []string{"bob@example.com"}, Cc: []string{"carol@example.com"},
		Subject: "Überblick: état du projet", Text: "Hello Bob,\n.\nA line with a lone dot above.\n",
		Attachments: []smtp.Attachment{{Name: "notes.txt", Data: []byte("n1\nn2\n")}},
	}
	rc, err := smtp.Send(context.Background(), cfg, msg)
	if err != nil {
		t.Fatalf("Send = %v", err)
	}
	got := srv.WaitMessages(t, 1)[0]
	if !got.TLS || got.Login != mailtest.User || got.AuthMechanism != "PLAIN" {
		t.Errorf("server saw tls=%v login=%q mechanism=%q; want TLS, %s, PLAIN", got.TLS, got.Login, got.AuthMechanism, mailtest.User)
	}
	if got.MailFrom != "agent@choir.test" || strings.Join(got.RcptTos, ",") != "bob@example.com,carol@example.com" {
		t.Errorf("envelope = %s -> %v", got.MailFrom, got.RcptTos)
	}
	m, err := mail.ReadMessage(strings.NewReader(string(got.Data)))
	if err != nil {
		t.Fatal(err)
	}
	if s, _ := new(mime.WordDecoder).DecodeHeader(m.Header.Get("Subject")); s != msg.Subject {
		t.Errorf("Subject = %q", s)
	}
	if m.Header.Get("Message-Id") != "<"+rc.MessageID+">" {
		t.Errorf("Message-ID = %q; want <%s>", m.Header.Get("Message-Id"), rc.MessageID)
	}
	if !strings.Contains(string(got.Data), "\r\n.\r\nA line") && !strings.Contains(string(got.Data), "=2E") {
		t.Errorf("the lone dot did not survive:\n%s", got.Data)
	}
}

func TestRealServerRefusesWrongPassword(t *testing.T) {
	cert := mailtest.NewCert(t)
	srv := mailtest.StartSMTP(t, "", cert)
	cfg := smtp.Config{Host: "127.0.0.1", Port: srv.Port, Username: mailtest.User, Password: "wrong", RootCAs: cert.Pool}
	_, err := smtp.Send(context.Background(), cfg, &smtp.Message{From: "a@choir.test", To: []string{"b@example.com"}, Text: "x"})
	var se *smtp.Error
	if !errors.As(err, &se) || se.Stage != "auth" || se.Code != 535 {
		t.Fatalf("Send with a wrong password = %v; want a 535 at auth", err)
	}
	if len(srv.Messages(t)) != 0 {
		t.Error("the server accepted a message after a failed AUTH")
	}
}

// Implicit TLS (SMTPS) against a real aiosmtpd.
func TestSendToRealSMTPS(t *testing.T) {
	cert := mailtest.NewCert(t)
	srv := mailtest.StartSMTPS(t, "", cert)
	cfg := smtp.Config{Host: "127.0.0.1", Port: srv.Port, TLS: smtp.Implicit, Username: mailtest.User, Password: mailtest.Password, RootCAs: cert.Pool}
	if _, err := smtp.Send(context.Background(), cfg, &smtp.Message{From: "a@choir.test", To: []string{"b@example.com"}, Subject: "s", Text: "x"}); err != nil {
		t.Fatalf("Send over SMTPS = %v", err)
	}
	if got := srv.WaitMessages(t, 1)[0]; !got.TLS || got.Login != mailtest.User {
		t.Errorf("server saw tls=%v login=%q", got.TLS, got.Login)
	}
	// A STARTTLS client on an SMTPS port (both wait for the other) ends at
	// its deadline instead of hanging.
	cfg.TLS, cfg.Timeout = smtp.StartTLS, 2*time.Second
	_, err := smtp.Send(context.Background(), cfg, &smtp.Message{From: "a@choir.test", To: []string{"b@example.com"}, Text: "x"})
	var se *smtp.Error
	if !errors.As(err, &se) || !se.Timeout || se.Stage != "greeting" {
		t.Errorf("STARTTLS on an SMTPS port = %v; want a timeout at the greeting", err)
	}
}
