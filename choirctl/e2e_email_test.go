package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net"
	"net/http"
	"net/mail"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"choir/testkit"
	"choir/testkit/dockertest"
	"choir/testkit/mailtest"
)

// emailModel answers "send|receive|check <JSON arguments>" with that
// choir.email call (callerModel).
func emailModel() *callerModel {
	return &callerModel{call: func(text string) (string, string, bool) {
		verb, args, _ := strings.Cut(text, " ")
		return "choir_email_" + verb, args, verb == "send" || verb == "receive" || verb == "check"
	}}
}

// TestEmailEndToEnd: an agent in a real container whose model calls
// choir.email.send, .check and .receive against a real aiosmtpd and a real
// Dovecot listening on the bridge (STARTTLS, a certificate signed by a
// private CA given as the account's ca_pem): the message arrives with its
// attachment from the workspace, the user is told what was sent, how much
// mail is waiting and what it says, and marked-seen mail is no longer new.
// The account's password never reaches a log.
func TestEmailEndToEnd(t *testing.T) {
	dc := dockertest.Engine(t)
	bridge := dockertest.BridgeIP(t)
	cert := mailtest.NewCert(t, bridge)
	dovecot := mailtest.StartDovecot(t, bridge, cert)
	smtpd := mailtest.StartSMTP(t, bridge, cert)
	dovecot.Deliver(t, "From: Zoë <zoe@example.com>\nTo: alice@choir.test\nSubject: Lunch on Friday?\n"+
		"Content-Type: text/plain; charset=utf-8\n\nShall we meet at noon at the café?\n")
	dovecot.Deliver(t, "From: ops@example.com\nTo: alice@choir.test\nSubject: Disk almost full\n\nThe disk of build-3 is 95% full.\n")

	home := filepath.Join(t.TempDir(), "h")
	ctlRun(t, home, "", "init")
	env := backends(t, home)
	l, err := net.Listen("tcp", net.JoinHostPort(bridge, "0"))
	if err != nil {
		t.Fatal(err)
	}
	model := &http.Server{Handler: emailModel()}
	go model.Serve(l)
	t.Cleanup(func() { model.Close() })

	workspace := testkit.Workspace(t)
	os.WriteFile(filepath.Join(workspace, "report.txt"), []byte("weekly figures: 42\n"), 0o644)
	path := filepath.Join(home, "config.json")
	data, _ := os.ReadFile(path)
	var cfg map[string]any
	json.Unmarshal(data, &cfg)
	cfg["global_repo"] = map[string]any{"url": "/nonexistent/global.git"}
	cfg["models"] = map[string]any{"m": map[string]any{"provider": "test", "model": "email", "endpoint": "http://" + l.Addr().String() + "/v1", "secret": "llm-key"}}
	cfg["git_identities"] = map[string]any{"dev": map[string]any{"name": "Dev", "email": "dev@choir.local", "secret": "git-token"}}
	cfg["gateways"] = map[string]any{"console": map[string]any{"type": "console"}}
	cfg["workspaces"] = map[string]any{"main": map[string]any{"path": workspace}}
	cfg["dms"] = map[string]any{"dm1": map[string]any{"gateway": "console", "admin": true}}
	cfg["email_accounts"] = map[string]any{"mail": map[string]any{
		"smtp_host": bridge, "smtp_port": smtpd.Port, "imap_host": bridge, "imap_port": dovecot.IMAPPort,
		"sharing": "exclusive", "secret": "mail-creds", "address": "agent@choir.test", "ca_pem": string(cert.PEM),
	}}
	cfg["agents"] = map[string]any{"agent-1": map[string]any{"defaults": map[string]any{
		"workspace": "main", "llm": "m", "git_identity": "dev", "dm": "dm1", "email": "mail"}}}
	out, _ := json.MarshalIndent(cfg, "", "  ")
	os.WriteFile(path, out, 0o644)
	for name, value := range map[string]string{"llm-key": apiSecret, "git-token": "ghp-email-Token-3Qv",
		"mail-creds": mailtest.User + ":" + mailtest.Password} {
		if _, stderr, code := ctlRun(t, home, "", "secret", "set", name, value); code != 0 {
			t.Fatalf("secret set %s = %d %s", name, code, stderr)
		}
	}
	dockertest.AgentImage(t, dc, "agent-1", "em1")
	d := startChoird(t, home, env)
	waitReady(t, home, d)
	if out, stderr, code := ctlRun(t, home, "", "agent", "start", "agent-1", "--dm=dm1"); code != 0 {
		t.Fatalf("agent start = %d %q %q\nchoird: %s", code, out, stderr, d.stderr.String())
	}
	// ask returns the tool result the model saw, which its reply quotes.
	ask := func(msg string) map[string]any {
		t.Helper()
		out, stderr, code := ctlRun(t, home, msg, "chat", "agent-1", "--once", "--timeout", "3m")
		if code != 0 {
			data, _ := os.ReadFile(filepath.Join(home, "logs", "agent-1.log"))
			t.Fatalf("agent-1 did not answer %q: %d %q %q\nagent log tail:\n%s", msg, code, out, stderr, data[max(0, len(data)-3000):])
		}
		i := strings.Index(out, "result: {")
		var res map[string]any
		if i < 0 || json.NewDecoder(strings.NewReader(out[i+len("result: "):])).Decode(&res) != nil {
			t.Fatalf("reply to %q = %q; want the tool's result", msg, out)
		}
		return res
	}

	res := ask(`send {"to":["Bob <bob@example.com>"],"subject":"Weekly report – été","body":"Hi Bob,\nthe report is attached.\n","attachments":["report.txt"]}`)
	if res["status"] != "success" || res["summary"] != "sent \"Weekly report – été\" to bob@example.com with 1 attachment" {
		t.Errorf("send result = %v; want the user told what was sent", res)
	}
	got := smtpd.WaitMessages(t, 1)[0]
	if got.MailFrom != "agent@choir.test" || strings.Join(got.RcptTos, ",") != "bob@example.com" || !got.TLS || got.Login != mailtest.User {
		t.Errorf("the SMTP server saw from=%q to=%v tls=%v login=%q", got.MailFrom, got.RcptTos, got.TLS, got.Login)
	}
	if subject, att := readSent(t, got.Data); subject != "Weekly report – été" || att != "report.txt=weekly figures: 42\n" {
		t.Errorf("sent message: subject %q, attachment %q", subject, att)
	}
	if res := ask(`send {"to":["bob@example.com"],"subject":"x","body":"y","attachments":["../../etc/passwd"]}`); res["status"] != "error" ||
		!strings.Contains(fmt.Sprint(res["summary"]), "leaves the workspace") {
		t.Errorf("send of ../../etc/passwd = %v; want a refusal", res)
	}

	res = ask(`check {}`)
	if res["summary"] != `2 unseen of 2 messages in INBOX; newest: "Disk almost full" from ops@example.com; "Lunch on Friday?" from Zoë <zoe@example.com>` {
		t.Errorf("check result = %v", res)
	}
	res = ask(`receive {"limit":5,"mark_seen":true}`)
	if res["summary"] != "2 of 2 unseen messages in INBOX, 2 marked seen" {
		t.Errorf("receive result = %v", res)
	}
	var texts []string
	for _, m := range res["messages"].([]any) {
		texts = append(texts, fmt.Sprint(m.(map[string]any)["text"]))
	}
	if strings.Join(texts, "|") != "The disk of build-3 is 95% full.\n|Shall we meet at noon at the café?\n" {
		t.Errorf("received texts = %q", texts)
	}
	if res := ask(`check {}`); res["summary"] != "0 unseen of 2 messages in INBOX" {
		t.Errorf("check after receive = %v; want nothing new", res["summary"])
	}
	if len(smtpd.Messages(t)) != 1 {
		t.Errorf("the SMTP server holds %d messages; want the one sent", len(smtpd.Messages(t)))
	}

	if err := d.stop(t); err != nil {
		t.Errorf("choird stop = %v\n%s", err, d.stderr.String())
	}
	assertNoSecrets(t, filepath.Join(home, "logs"), d.stderr.String())
	filepath.Walk(filepath.Join(home, "logs"), func(p string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			if b, _ := os.ReadFile(p); bytes.Contains(b, []byte(mailtest.Password)) {
				t.Errorf("%s holds the email password", p)
			}
		}
		return nil
	})
}

// readSent returns a sent message's decoded subject and its one attachment
// as "name=content".
func readSent(t *testing.T, raw []byte) (subject, attachment string) {
	t.Helper()
	m, err := mail.ReadMessage(bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("the SMTP server got an unreadable message: %v", err)
	}
	subject, _ = new(mime.WordDecoder).DecodeHeader(m.Header.Get("Subject"))
	_, params, _ := mime.ParseMediaType(m.Header.Get("Content-Type"))
	mr := multipart.NewReader(m.Body, params["boundary"])
	for p, err := mr.NextPart(); err == nil; p, err = mr.NextPart() {
		if p.FileName() != "" {
			b, _ := io.ReadAll(p)
			dec, _ := base64.StdEncoding.DecodeString(strings.ReplaceAll(string(b), "\r\n", ""))
			attachment = p.FileName() + "=" + string(dec)
		}
	}
	return subject, attachment
}
