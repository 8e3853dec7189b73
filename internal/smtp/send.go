package smtp

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/smtp"
	"net/textproto"
	"os"
	"strconv"
	"strings"
	"time"
)

// TLSMode says how the session is encrypted. There is no plain mode.
type TLSMode string

const (
	// Implicit starts TLS at connect (SMTPS, port 465).
	Implicit TLSMode = "implicit"
	// StartTLS upgrades the connection with STARTTLS before AUTH and
	// refuses a server that does not offer it (submission, port 587).
	StartTLS TLSMode = "starttls"
)

// Config says where and as whom to send.
type Config struct {
	Host string
	Port int
	// TLS defaults to Implicit on port 465 and StartTLS elsewhere.
	TLS TLSMode
	// Username and Password authenticate with AUTH PLAIN or LOGIN.
	Username, Password string
	// RootCAs verifies the server's certificate instead of the system
	// roots (a self-hosted server's private CA); nil means system roots.
	RootCAs *x509.CertPool
	// LocalName is sent in EHLO; default "localhost".
	LocalName string
	// Timeout bounds the whole session (default 60 s); a context deadline
	// that comes earlier wins.
	Timeout time.Duration
	// Dial makes the connection (nil: a net.Dialer), e.g. through a
	// tunnel; TLS runs over what it returns.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
}

// Mode returns the TLS mode in effect.
func (c Config) Mode() TLSMode {
	if c.TLS != "" {
		return c.TLS
	}
	if c.Port == 465 {
		return Implicit
	}
	return StartTLS
}

// Error is a reply the server refused, or a step that failed.
type Error struct {
	// Stage is where it failed: connect, tls, greeting, ehlo, starttls,
	// auth, mail, rcpt, data, quit.
	Stage string
	// Code is the server's reply code, 0 when no reply was involved.
	Code int
	// Message is the server's text or what the client saw.
	Message string
	// Recipient names the refused address at stage rcpt.
	Recipient string
	// Timeout says the server did not answer in time.
	Timeout bool
	err     error
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("smtp " + e.Stage)
	if e.Recipient != "" {
		b.WriteString(" <" + e.Recipient + ">")
	}
	b.WriteString(": ")
	if e.Code != 0 {
		b.WriteString(strconv.Itoa(e.Code) + " ")
	}
	b.WriteString(e.Message)
	if hint := e.hint(); hint != "" {
		b.WriteString(" (" + hint + ")")
	}
	return b.String()
}

func (e *Error) Unwrap() error { return e.err }

func (e *Error) hint() string {
	switch {
	case e.Timeout:
		return "the server did not answer in time; check the host and port"
	case e.Stage == "auth" && e.Code == 535:
		return "the user name or password of the email account is wrong"
	case e.Stage == "auth" && e.Code == 0:
		return ""
	case e.Stage == "rcpt" && e.Code >= 500:
		return "the server refused this recipient"
	case e.Code == 421 || (e.Code >= 450 && e.Code < 500):
		return "a temporary failure; try again later"
	}
	return ""
}

// Receipt says what the server accepted.
type Receipt struct {
	MessageID  string
	Recipients []string
	Size       int
}

// Send sends msg as cfg.Username over an encrypted, authenticated session.
func Send(ctx context.Context, cfg Config, msg *Message) (Receipt, error) {
	if msg.MessageID == "" {
		if a, err := parseAddress(msg.From); err == nil {
			msg.MessageID = newMessageID(a.Address)
		}
	}
	data, err := msg.Bytes()
	if err != nil {
		return Receipt{}, err
	}
	rcpts, _ := msg.Recipients()
	from, _ := parseAddress(msg.From)
	if cfg.Host == "" || cfg.Port <= 0 || cfg.Port > 65535 {
		return Receipt{}, &Error{Stage: "connect", Message: fmt.Sprintf("bad server address %q port %d", cfg.Host, cfg.Port)}
	}
	timeout := cfg.Timeout
	if timeout <= 0 {
		timeout = 60 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	deadline, _ := ctx.Deadline()

	addr := net.JoinHostPort(cfg.Host, strconv.Itoa(cfg.Port))
	dial := cfg.Dial
	if dial == nil {
		var d net.Dialer
		dial = d.DialContext
	}
	conn, err := dial(ctx, "tcp", addr)
	if err != nil {
		return Receipt{}, netError("connect", err)
	}
	defer conn.Close()
	conn.SetDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()

	tlsConf := &tls.Config{ServerName: cfg.Host, RootCAs: cfg.RootCAs, MinVersion: tls.VersionTLS12}
	mode := cfg.Mode()
	if mode == Implicit {
		tc := tls.Client(conn, tlsConf)
		if err := tc.HandshakeContext(ctx); err != nil {
			return Receipt{}, tlsError(err)
		}
		conn = tc
	} else if mode != StartTLS {
		return Receipt{}, &Error{Stage: "connect", Message: fmt.Sprintf("unknown TLS mode %q; want implicit or starttls", mode)}
	}
	c, err := smtp.NewClient(conn, cfg.Host)
	if err != nil {
		return Receipt{}, replyError("greeting", err)
	}
	defer c.Close()
	local := cfg.LocalName
	if local == "" {
		local = "localhost"
	}
	if err := c.Hello(local); err != nil {
		return Receipt{}, replyError("ehlo", err)
	}
	if mode == StartTLS {
		if ok, _ := c.Extension("STARTTLS"); !ok {
			return Receipt{}, &Error{Stage: "starttls", Message: "the server does not offer STARTTLS; " +
				"refusing to send the password over an unencrypted connection (use port 465 for implicit TLS, or a server with STARTTLS)"}
		}
		if err := c.StartTLS(tlsConf); err != nil {
			var te *textproto.Error
			if errors.As(err, &te) {
				return Receipt{}, replyError("starttls", err)
			}
			return Receipt{}, tlsError(err)
		}
	}
	if cfg.Username != "" {
		ok, mechs := c.Extension("AUTH")
		if !ok {
			return Receipt{}, &Error{Stage: "auth", Message: "the server does not offer AUTH; it cannot take the account's password"}
		}
		var a smtp.Auth
		switch {
		case hasMech(mechs, "PLAIN"):
			a = smtp.PlainAuth("", cfg.Username, cfg.Password, cfg.Host)
		case hasMech(mechs, "LOGIN"):
			a = LoginAuth(cfg.Username, cfg.Password)
		default:
			return Receipt{}, &Error{Stage: "auth", Message: fmt.Sprintf("the server offers AUTH %s; choir speaks PLAIN and LOGIN", mechs)}
		}
		if err := c.Auth(a); err != nil {
			return Receipt{}, replyError("auth", err)
		}
	}
	if err := c.Mail(from.Address); err != nil {
		return Receipt{}, replyError("mail", err)
	}
	for _, r := range rcpts {
		if err := c.Rcpt(r); err != nil {
			e := replyError("rcpt", err)
			e.Recipient = r
			return Receipt{}, e
		}
	}
	w, err := c.Data()
	if err != nil {
		return Receipt{}, replyError("data", err)
	}
	if _, err := w.Write(data); err != nil {
		return Receipt{}, replyError("data", err)
	}
	if err := w.Close(); err != nil {
		return Receipt{}, replyError("data", err)
	}
	c.Quit() // the message is accepted; a failed QUIT changes nothing
	return Receipt{MessageID: msg.MessageID, Recipients: rcpts, Size: len(data)}, nil
}

func hasMech(list, m string) bool {
	for _, f := range strings.Fields(list) {
		if strings.EqualFold(f, m) {
			return true
		}
	}
	return false
}

// replyError turns what net/smtp returned at stage into an *Error.
func replyError(stage string, err error) *Error {
	var te *textproto.Error
	if errors.As(err, &te) {
		return &Error{Stage: stage, Code: te.Code, Message: te.Msg, err: err}
	}
	return netError(stage, err)
}

func netError(stage string, err error) *Error {
	e := &Error{Stage: stage, Message: err.Error(), err: err}
	var ne net.Error
	if errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
		e.Timeout = true
		e.Message = "timed out"
	}
	return e
}

func tlsError(err error) *Error {
	e := netError("tls", err)
	var ue x509.UnknownAuthorityError
	var he x509.HostnameError
	switch {
	case errors.As(err, &ue):
		e.Message = "the server's certificate is signed by an unknown authority; " +
			"for a self-hosted server give its CA in the email account's ca_pem"
	case errors.As(err, &he):
		e.Message = "the server's certificate does not name " + he.Host + "; set smtp_host to a name the certificate has"
	}
	return e
}

// loginAuth is AUTH LOGIN (draft-murchison-sasl-login): the user name and
// password, each asked for by a 334 challenge.
type loginAuth struct{ user, pass string }

// LoginAuth returns the LOGIN mechanism. Like smtp.PlainAuth it refuses to
// run over a connection that is not TLS.
func LoginAuth(user, pass string) smtp.Auth { return &loginAuth{user, pass} }

func (a *loginAuth) Start(server *smtp.ServerInfo) (string, []byte, error) {
	if !server.TLS {
		return "", nil, errors.New("refusing AUTH LOGIN over an unencrypted connection")
	}
	return "LOGIN", nil, nil
}

func (a *loginAuth) Next(fromServer []byte, more bool) ([]byte, error) {
	if !more {
		return nil, nil
	}
	switch p := strings.ToLower(strings.TrimSpace(string(fromServer))); {
	case strings.HasPrefix(p, "username"), strings.HasPrefix(p, "user name"):
		return []byte(a.user), nil
	case strings.HasPrefix(p, "password"):
		return []byte(a.pass), nil
	}
	return nil, fmt.Errorf("unexpected AUTH LOGIN challenge %q", fromServer)
}
