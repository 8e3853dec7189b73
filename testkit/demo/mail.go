package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"

	"choir/testkit/dockertest"
	"choir/testkit/mailtest"
)

// demoMail is the demo's own mail on the Docker bridge: Dovecot holding
// the agent's mailbox and an SMTP server that keeps what the agent sends,
// both with a certificate the demo makes (given to the agent as the
// account's ca_pem).
type demoMail struct {
	dovecot *mailtest.Dovecot
	smtp    *mailtest.SMTP
	cert    *mailtest.Cert
}

const demoWelcomeMail = `From: Choir <hello@choir.test>
To: demo@choir.test
Subject: Welcome to the demo's mailbox
Content-Type: text/plain; charset=utf-8

This message waits in the agent's mailbox on your machine (Dovecot on the
Docker bridge). Ask the agent to "read mail", or to "mail bob@example.com:
hello"; nothing leaves this machine.
`

// mailServers starts the mail servers, or says why the demo goes without
// email (Debian's dovecot-imapd, dovecot-lmtpd, python3-aiosmtpd missing).
func (d *demo) mailServers(ctx context.Context) error {
	ip, err := dockertest.BridgeAddr()
	if err != nil {
		return err
	}
	dir := filepath.Join(d.work, "mail")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	m := &demoMail{}
	if m.cert, err = mailtest.MakeCert(dir, ip); err == nil {
		if m.dovecot, err = mailtest.RunDovecot(ip, m.cert); err == nil {
			if m.smtp, err = mailtest.RunSMTP(dir, ip, m.cert, false); err != nil {
				m.dovecot.Stop()
			}
		}
	}
	var missing *mailtest.MissingError
	if errors.As(err, &missing) {
		d.say("email: skipped, %v", err)
		return nil
	}
	if err != nil {
		return err
	}
	d.mail = m
	if err := m.dovecot.Put(demoWelcomeMail); err != nil {
		return err
	}
	d.say("email: a mailbox (IMAP %s:%d) and an SMTP server (%s:%d) on the Docker bridge, for this demo only",
		ip, m.dovecot.IMAPPort, ip, m.smtp.Port)
	return nil
}

// addMail binds the demo's mail account to the agent.
func (d *demo) addMail(cfg, defaults map[string]any, secrets map[string]string) {
	if d.mail == nil {
		return
	}
	cfg["email_accounts"] = map[string]any{"demo-mail": map[string]any{
		"smtp_host": d.mail.smtp.Host, "smtp_port": d.mail.smtp.Port,
		"imap_host": d.mail.dovecot.Host, "imap_port": d.mail.dovecot.IMAPPort,
		"sharing": "exclusive", "secret": "demo-mail", "address": "demo@choir.test", "ca_pem": string(d.mail.cert.PEM),
	}}
	defaults["email"] = "demo-mail"
	secrets["demo-mail"] = mailtest.User + ":" + mailtest.Password
}

// stopMail stops the mail servers.
func (d *demo) stopMail() {
	if d.mail != nil {
		d.mail.smtp.Stop()
		d.mail.dovecot.Stop()
	}
}
