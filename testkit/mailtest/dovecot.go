package mailtest

import (
	"fmt"
	"net"
	"net/textproto"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Dovecot is a running Dovecot with one user (User, Password).
type Dovecot struct {
	Host string
	// IMAPPort speaks IMAP with STARTTLS; IMAPSPort with implicit TLS.
	IMAPPort, IMAPSPort int
	// LMTPPort takes mail for User (Deliver).
	LMTPPort int
	Cert     *Cert
	// Dir holds the config, the log (dovecot.log) and the mail.
	Dir  string
	proc *process
}

// StartDovecot starts Dovecot listening on host (127.0.0.1 when empty)
// with cert, and stops it when the test ends (showing its log if the test
// failed).
func StartDovecot(t testing.TB, host string, cert *Cert) *Dovecot {
	t.Helper()
	d, err := RunDovecot(host, cert)
	check(t, err)
	t.Cleanup(func() {
		if t.Failed() {
			out, _ := os.ReadFile(filepath.Join(d.Dir, "dovecot.log"))
			t.Logf("dovecot.log:\n%s", out)
		}
		d.Stop()
	})
	return d
}

// RunDovecot starts Dovecot listening on host (127.0.0.1 when empty) with
// cert, in a new directory under /tmp; Stop ends it and removes the
// directory.
func RunDovecot(host string, cert *Cert) (*Dovecot, error) {
	bin, err := find("dovecot", "dovecot-imapd dovecot-lmtpd")
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat("/usr/lib/dovecot/lmtp"); err != nil {
		return nil, &MissingError{What: "dovecot's lmtp", Install: "dovecot-lmtpd"}
	}
	if host == "" {
		host = "127.0.0.1"
	}
	// A short directory: Dovecot refuses a long base_dir ("File name too long").
	dir, err := os.MkdirTemp("/tmp", "dv")
	if err != nil {
		return nil, err
	}
	d := &Dovecot{Host: host, Cert: cert, Dir: dir}
	if err := d.start(bin); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return d, nil
}

// Stop ends Dovecot and removes its directory.
func (d *Dovecot) Stop() {
	if d.proc != nil {
		d.proc.stop()
	}
	os.RemoveAll(d.Dir)
}

func (d *Dovecot) start(bin string) error {
	dir, host := d.Dir, d.Host
	os.Chmod(dir, 0o755)
	for _, p := range []*int{&d.IMAPPort, &d.IMAPSPort, &d.LMTPPort} {
		port, err := freePort(host)
		if err != nil {
			return err
		}
		*p = port
	}
	// Mail belongs to an unprivileged uid: nobody when we are root, else us.
	uid, gid, login, internal := os.Getuid(), os.Getgid(), "", ""
	if uid == 0 {
		nobody, err := user.Lookup("nobody")
		if err != nil {
			return fmt.Errorf("no user nobody for Dovecot's mail: %v", err)
		}
		fmt.Sscan(nobody.Uid, &uid)
		fmt.Sscan(nobody.Gid, &gid)
		login, internal = "dovenull", "dovecot"
	} else {
		me, err := user.Current()
		if err != nil {
			return err
		}
		login, internal = me.Username, me.Username
	}
	mail := filepath.Join(dir, "mail", User)
	if err := os.MkdirAll(mail, 0o755); err != nil {
		return err
	}
	os.Chown(filepath.Join(dir, "mail"), uid, gid)
	os.Chown(mail, uid, gid)
	users := fmt.Sprintf("%s:{PLAIN}%s:%d:%d::%s::\n", User, Password, uid, gid, mail)
	if err := os.WriteFile(filepath.Join(dir, "users"), []byte(users), 0o644); err != nil {
		return err
	}
	conf := fmt.Sprintf(`base_dir = %[1]s/run
state_dir = %[1]s/state
log_path = %[1]s/dovecot.log
listen = %[2]s
protocols = imap lmtp
ssl = yes
ssl_cert = <%[3]s
ssl_key = <%[4]s
disable_plaintext_auth = yes
auth_mechanisms = plain login
default_login_user = %[5]s
default_internal_user = %[6]s
first_valid_uid = 1
passdb {
  driver = passwd-file
  args = scheme=PLAIN username_format=%%n %[1]s/users
}
userdb {
  driver = passwd-file
  args = username_format=%%n %[1]s/users
}
mail_location = maildir:~/Maildir
service anvil {
  chroot =
}
service imap-login {
  chroot =
  inet_listener imap {
    address = %[2]s
    port = %[7]d
  }
  inet_listener imaps {
    address = %[2]s
    port = %[8]d
    ssl = yes
  }
}
service lmtp {
  inet_listener lmtp {
    address = %[2]s
    port = %[9]d
  }
}
`, dir, host, d.Cert.CertFile, d.Cert.KeyFile, login, internal, d.IMAPPort, d.IMAPSPort, d.LMTPPort)
	confFile := filepath.Join(dir, "dovecot.conf")
	if err := os.WriteFile(confFile, []byte(conf), 0o644); err != nil {
		return err
	}
	p, err := start(exec.Command(bin, "-F", "-c", confFile), filepath.Join(dir, "stderr.log"))
	if err != nil {
		return err
	}
	d.proc = p
	return p.waitFor("dovecot", func() bool {
		return greets(hostPort(host, d.IMAPPort), "* OK") && greets(hostPort(host, d.LMTPPort), "220")
	})
}

// Deliver puts one raw message (CRLF or LF line ends) into User's INBOX
// over LMTP.
func (d *Dovecot) Deliver(t testing.TB, raw string) {
	t.Helper()
	if err := d.Put(raw); err != nil {
		t.Fatalf("deliver over LMTP: %v", err)
	}
}

// Put is Deliver for programs.
func (d *Dovecot) Put(raw string) error {
	nc, err := net.DialTimeout("tcp", hostPort(d.Host, d.LMTPPort), 5*time.Second)
	if err != nil {
		return err
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(30 * time.Second))
	c := textproto.NewConn(nc)
	step := func(code int, format string, args ...any) error {
		if format != "" {
			if err := c.PrintfLine(format, args...); err != nil {
				return err
			}
		}
		_, _, err := c.ReadResponse(code)
		return err
	}
	if err := step(220, ""); err != nil {
		return err
	}
	for _, s := range []string{"LHLO mailtest", "MAIL FROM:<sender@choir.test>", "RCPT TO:<" + User + ">"} {
		if err := step(250, "%s", s); err != nil {
			return fmt.Errorf("%s: %w", s, err)
		}
	}
	if err := step(354, "DATA"); err != nil {
		return err
	}
	w := c.DotWriter()
	w.Write([]byte(strings.ReplaceAll(strings.ReplaceAll(raw, "\r\n", "\n"), "\n", "\r\n")))
	if err := w.Close(); err != nil {
		return err
	}
	if err := step(250, ""); err != nil { // one reply per recipient
		return fmt.Errorf("after DATA: %w", err)
	}
	return step(221, "QUIT")
}
