package email

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"mime/multipart"
	"net/mail"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"choir/agent/tool"
	"choir/internal/config"
	"choir/testkit/mailtest"
)

type servers struct {
	dovecot *mailtest.Dovecot
	smtp    *mailtest.SMTP
	account config.EmailAccount
}

func startServers(t *testing.T) *servers {
	t.Helper()
	cert := mailtest.NewCert(t)
	d := mailtest.StartDovecot(t, "", cert)
	s := mailtest.StartSMTP(t, "", cert)
	return &servers{dovecot: d, smtp: s, account: config.EmailAccount{
		SMTPHost: "127.0.0.1", SMTPPort: s.Port, IMAPHost: "127.0.0.1", IMAPPort: d.IMAPPort, // STARTTLS: only port 993 means implicit TLS
		Sharing: config.SharingExclusive, Secret: "mail", Address: "agent@choir.test", CAPEM: string(cert.PEM),
	}}
}

func dyn(a *config.EmailAccount) func() config.Dynamic {
	return func() config.Dynamic { return config.Dynamic{Email: a} }
}

func env(t *testing.T) tool.Env {
	return tool.Env{Workspace: t.TempDir(), Secrets: map[string]string{tool.SecretEmail: mailtest.User + ":" + mailtest.Password}}
}

func run(t *testing.T, tl tool.Tool, e tool.Env, input string) (map[string]any, error) {
	t.Helper()
	res, err := tl.Execute(context.Background(), json.RawMessage(input), e)
	if err != nil {
		return nil, err
	}
	raw, _ := json.Marshal(res)
	var out map[string]any
	json.Unmarshal(raw, &out)
	return out, nil
}

func code(err error) string {
	var te *tool.Error
	if errors.As(err, &te) {
		return te.Code
	}
	return fmt.Sprintf("not a tool error: %v", err)
}

func TestSendDeliversWithAttachments(t *testing.T) {
	s := startServers(t)
	e := env(t)
	os.MkdirAll(filepath.Join(e.Workspace, "out"), 0o755)
	os.WriteFile(filepath.Join(e.Workspace, "out", "rapport été.csv"), []byte("a,b\n1,2\n"), 0o644)
	os.WriteFile(filepath.Join(e.Workspace, "chart.png"), []byte("\x89PNG\r\n\x1a\n\x00\x00binary"), 0o644)
	out, err := run(t, NewSend(dyn(&s.account)), e, `{"to":["Bob <bob@example.com>"],"cc":["carol@example.com"],
		"subject":"Résumé 📎","body":"Hello Bob,\nfiles attached.\n","attachments":["out/rapport été.csv","chart.png"]}`)
	if err != nil {
		t.Fatalf("send = %v", err)
	}
	if out["summary"] != `sent "Résumé 📎" to bob@example.com, carol@example.com with 2 attachments` {
		t.Errorf("summary = %q", out["summary"])
	}
	got := s.smtp.WaitMessages(t, 1)[0]
	if got.MailFrom != "agent@choir.test" || !got.TLS || got.Login != mailtest.User {
		t.Errorf("server saw from=%q tls=%v login=%q", got.MailFrom, got.TLS, got.Login)
	}
	m, err := mail.ReadMessage(strings.NewReader(string(got.Data)))
	if err != nil {
		t.Fatal(err)
	}
	if subj, _ := new(mime.WordDecoder).DecodeHeader(m.Header.Get("Subject")); subj != "Résumé 📎" {
		t.Errorf("Subject = %q", subj)
	}
	_, params, _ := mime.ParseMediaType(m.Header.Get("Content-Type"))
	mr := multipart.NewReader(m.Body, params["boundary"])
	var names []string
	for p, err := mr.NextPart(); err == nil; p, err = mr.NextPart() {
		if p.FileName() != "" {
			names = append(names, p.FileName())
		}
	}
	if strings.Join(names, "|") != "rapport été.csv|chart.png" {
		t.Errorf("attachments = %q", names)
	}
	if out["message_id"] != m.Header.Get("Message-Id") {
		t.Errorf("message_id = %q; header %q", out["message_id"], m.Header.Get("Message-Id"))
	}
}

func TestSendRefusals(t *testing.T) {
	acct := config.EmailAccount{SMTPHost: "127.0.0.1", SMTPPort: 1, IMAPHost: "127.0.0.1", IMAPPort: 1,
		Sharing: config.SharingExclusive, Secret: "mail", Address: "agent@choir.test"}
	noAddr := acct
	noAddr.Address = ""
	badCA := acct
	badCA.CAPEM = "junk"
	e := env(t)
	os.WriteFile(filepath.Join(e.Workspace, "big.bin"), make([]byte, MaxAttachmentBytes+1), 0o644)
	os.Mkdir(filepath.Join(e.Workspace, "dir"), 0o755)
	os.Symlink("/etc/passwd", filepath.Join(e.Workspace, "passwd"))
	ok := `"to":["bob@example.com"],"subject":"s","body":"b"`
	tests := []struct {
		name  string
		acct  *config.EmailAccount
		env   tool.Env
		input string
		code  string
		msg   string
	}{
		{"no account", nil, e, "{" + ok + "}", CodeNotConfigured, "no email account is bound"},
		{"no secret", &acct, tool.Env{Workspace: e.Workspace}, "{" + ok + "}", tool.CodeSecretUnavailable, "choirctl secret set mail"},
		{"secret without colon", &acct, tool.Env{Workspace: e.Workspace, Secrets: map[string]string{"email": "alice"}}, "{" + ok + "}", tool.CodeSecretUnavailable, `not "user:password"`},
		{"no from address", &noAddr, e, "{" + ok + "}", CodeNotConfigured, "email_accounts.<name>.address"},
		{"bad ca_pem", &badCA, e, "{" + ok + "}", CodeNotConfigured, "ca_pem"},
		{"path leaves the workspace", &acct, e, `{` + ok + `,"attachments":["../etc/passwd"]}`, tool.CodePathRefused, "leaves the workspace"},
		{"absolute path", &acct, e, `{` + ok + `,"attachments":["/etc/passwd"]}`, tool.CodePathRefused, "absolute"},
		{"symlink out", &acct, e, `{` + ok + `,"attachments":["passwd"]}`, tool.CodePathRefused, ""},
		{"missing file", &acct, e, `{` + ok + `,"attachments":["nope.txt"]}`, tool.CodeNotFound, "no such file"},
		{"directory", &acct, e, `{` + ok + `,"attachments":["dir"]}`, tool.CodeIsDirectory, "archive it first"},
		{"too large", &acct, e, `{` + ok + `,"attachments":["big.bin"]}`, tool.CodeTooLarge, "15 MB"},
		{"header injection", &acct, e, `{"to":["bob@example.com"],"subject":"a\r\nBcc: x@evil.com","body":"b"}`, tool.CodeInvalidInput, "line break"},
		{"bad recipient", &acct, e, `{"to":["bob at example"],"subject":"s","body":"b"}`, tool.CodeInvalidInput, "bob at example"},
		{"no recipient", &acct, e, `{"to":[],"subject":"s","body":"b"}`, tool.CodeInvalidInput, "at least one recipient"},
		{"too many recipients", &acct, e, `{"to":[` + strings.Repeat(`"a@b.c",`, 50) + `"a@b.c"],"subject":"s","body":"b"}`, tool.CodeInvalidInput, "at most 50"},
		{"eleven attachments", &acct, e, `{` + ok + `,"attachments":["a","b","c","d","e","f","g","h","i","j","k"]}`, tool.CodeInvalidInput, "at most 10"},
		{"server down", &acct, e, "{" + ok + "}", CodeServer, "nothing was sent"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := run(t, NewSend(dyn(tt.acct)), tt.env, tt.input)
			if code(err) != tt.code || !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("send = %v; want %s with %q", err, tt.code, tt.msg)
			}
		})
	}
}

func TestSendLocks(t *testing.T) {
	locks, err := NewSend(nil).Locks(json.RawMessage(`{"to":["a@b.c"],"subject":"","body":"","attachments":["a.txt","./a.txt",".choirtmp/send/x.png"]}`))
	if err != nil || fmt.Sprint(locks) != "[{file:a.txt S} {choirtmp S}]" {
		t.Errorf("Locks = %v, %v", locks, err)
	}
	if locks, _ := NewSend(nil).Locks(json.RawMessage(`{"to":["a@b.c"],"subject":"","body":""}`)); len(locks) != 0 {
		t.Errorf("Locks without attachments = %v; want none (§9.5)", locks)
	}
	if _, err := NewSend(nil).Locks(json.RawMessage(`{"to":["a@b.c"],"subject":"","body":"","attachments":["../x"]}`)); code(err) != tool.CodePathRefused {
		t.Errorf("Locks of ../x = %v; want path_refused", err)
	}
	for in, want := range map[string]string{`{}`: "[{ext:email S}]", `{"mark_seen":true}`: "[{ext:email X}]"} {
		if locks, _ := NewReceive(nil).Locks(json.RawMessage(in)); fmt.Sprint(locks) != want {
			t.Errorf("receive Locks(%s) = %v; want %s", in, locks, want)
		}
	}
}

const multipartMail = `From: =?utf-8?Q?Zo=C3=AB?= <zoe@example.com>
To: alice@choir.test
Subject: Invoice =?utf-8?B?4oKs?=
Date: Tue, 24 Nov 2026 08:00:00 +0000
MIME-Version: 1.0
Content-Type: multipart/mixed; boundary="b1"

--b1
Content-Type: multipart/alternative; boundary="b2"

--b2
Content-Type: text/plain; charset=utf-8
Content-Transfer-Encoding: quoted-printable

Bonjour, voici la facture =E2=82=AC.
--b2
Content-Type: text/html; charset=utf-8

<p>ignored</p>
--b2--
--b1
Content-Type: application/pdf
Content-Disposition: attachment; filename*=utf-8''facture%20%C3%A9t%C3%A9.pdf
Content-Transfer-Encoding: base64

JVBERi0xLjQK
--b1--
`

func TestReceiveAndCheck(t *testing.T) {
	s := startServers(t)
	s.dovecot.Deliver(t, multipartMail)
	s.dovecot.Deliver(t, "From: bob@example.com\nSubject: html only\nContent-Type: text/html\n\n<html><head><style>x{}</style></head><body><p>Hi &amp; bye</p><script>evil()</script></body></html>\n")
	s.dovecot.Deliver(t, "From: carol@example.com\nSubject: latest\nContent-Type: text/plain; charset=iso-8859-1\nContent-Transfer-Encoding: base64\n\n"+
		"Q2Fm6SBsYXRpbi0x\n") // "Café latin-1"
	e := env(t)
	check, recv := NewCheck(dyn(&s.account)), NewReceive(dyn(&s.account))

	out, err := run(t, check, e, `{"newest":2}`)
	if err != nil {
		t.Fatalf("check = %v", err)
	}
	if out["summary"] != `3 unseen of 3 messages in INBOX; newest: "latest" from carol@example.com; "html only" from bob@example.com` {
		t.Errorf("check summary = %q", out["summary"])
	}

	out, err = run(t, recv, e, `{"limit":2,"max_body_chars":100}`)
	if err != nil {
		t.Fatalf("receive = %v", err)
	}
	msgs := out["messages"].([]any)
	if out["summary"] != "2 of 3 unseen messages in INBOX" || len(msgs) != 2 || out["more"] != true {
		t.Fatalf("receive = %v", out)
	}
	first, second := msgs[0].(map[string]any), msgs[1].(map[string]any)
	if first["subject"] != "latest" || first["text"] != "Café latin-1" {
		t.Errorf("newest = %v", first)
	}
	if second["text"] != "Hi & bye" || second["text_from_html"] != true {
		t.Errorf("html message = %v", second)
	}

	// Marking seen: the rest, oldest included; afterwards none are unseen.
	out, err = run(t, recv, e, `{"limit":20,"mark_seen":true}`)
	if err != nil {
		t.Fatalf("receive mark_seen = %v", err)
	}
	msgs = out["messages"].([]any)
	oldest := msgs[2].(map[string]any)
	if oldest["subject"] != "Invoice €" || oldest["from"].([]any)[0] != "Zoë <zoe@example.com>" ||
		oldest["text"] != "Bonjour, voici la facture €." {
		t.Errorf("oldest = %v", oldest)
	}
	if atts := oldest["attachments"].([]any); len(atts) != 1 || atts[0].(map[string]any)["name"] != "facture été.pdf" {
		t.Errorf("attachments = %v", oldest["attachments"])
	}
	if out, _ := run(t, check, e, `{}`); out["unseen"] != float64(0) || out["total"] != float64(3) {
		t.Errorf("check after mark_seen = %v", out)
	}
	if out, _ := run(t, recv, e, `{}`); out["summary"] != "no unseen messages in INBOX" {
		t.Errorf("receive after mark_seen = %v", out["summary"])
	}
	if out, _ := run(t, recv, e, `{"unseen":false,"since":"2000-01-01","limit":1}`); out["summary"] != "1 of 3 messages in INBOX" {
		t.Errorf("receive since 2000 = %v", out["summary"])
	}

	shared := s.account
	shared.Sharing = config.SharingShared
	if _, err := run(t, NewReceive(dyn(&shared)), e, `{"mark_seen":true}`); code(err) != tool.CodeInvalidInput || !strings.Contains(err.Error(), "shared with other agents") {
		t.Errorf("mark_seen on a shared account = %v", err)
	}
	if _, err := run(t, check, e, `{"mailbox":"Nope"}`); code(err) != tool.CodeNotFound {
		t.Errorf("check of a missing mailbox = %v", err)
	}
	wrong := e
	wrong.Secrets = map[string]string{tool.SecretEmail: mailtest.User + ":wrong"}
	if _, err := run(t, check, wrong, `{}`); code(err) != CodeServer || !strings.Contains(err.Error(), "password of the email account is wrong") {
		t.Errorf("check with a wrong password = %v", err)
	}
	noCA := s.account
	noCA.CAPEM = ""
	if _, err := run(t, NewCheck(dyn(&noCA)), e, `{}`); code(err) != CodeServer || !strings.Contains(err.Error(), "unknown authority") {
		t.Errorf("check without the server's CA = %v", err)
	}
}

func TestReceiveLeavesAnOversizedBodyOnTheServer(t *testing.T) {
	s := startServers(t)
	s.dovecot.Deliver(t, "From: big@example.com\nSubject: huge\n\n"+strings.Repeat("0123456789abcdef\n", (MaxMessageBytes/17)+1000))
	out, err := run(t, NewReceive(dyn(&s.account)), env(t), `{}`)
	if err != nil {
		t.Fatalf("receive = %v", err)
	}
	m := out["messages"].([]any)[0].(map[string]any)
	if m["subject"] != "huge" || m["text"] != "" || !strings.Contains(fmt.Sprint(m["body_omitted"]), "over the 10 MB") {
		t.Errorf("oversized message = %v", m)
	}
	// Marking seen skips what the model could not read.
	out, err = run(t, NewReceive(dyn(&s.account)), env(t), `{"mark_seen":true}`)
	if err != nil || out["marked_seen"] != float64(0) || out["summary"] != "1 of 1 unseen messages in INBOX" {
		t.Errorf("receive mark_seen of an oversized message = %v, %v; want it left unseen", out, err)
	}
}
