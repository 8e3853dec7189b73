package imap

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"time"
)

// TLSMode says how the connection is encrypted. There is no plain mode.
type TLSMode string

const (
	// Implicit starts TLS at connect (IMAPS, port 993).
	Implicit TLSMode = "implicit"
	// StartTLS upgrades with STARTTLS before authenticating and refuses a
	// server that does not offer it.
	StartTLS TLSMode = "starttls"
)

// Config says where and as whom to connect.
type Config struct {
	Host string
	Port int
	// TLS defaults to Implicit on port 993 and StartTLS elsewhere.
	TLS                TLSMode
	Username, Password string
	// RootCAs verifies the server's certificate instead of the system
	// roots (a self-hosted server's private CA).
	RootCAs *x509.CertPool
	// Timeout bounds each command, the connection and the login (default
	// 30 s); a context deadline that comes earlier wins.
	Timeout time.Duration
	// MaxLiteral bounds one literal, e.g. one message's body (default
	// 25 MiB).
	MaxLiteral int64
	// Dial makes the connection (nil: a net.Dialer), e.g. through a
	// tunnel; TLS runs over what it returns.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
}

// Mode returns the TLS mode in effect.
func (c Config) Mode() TLSMode {
	if c.TLS != "" {
		return c.TLS
	}
	if c.Port == 993 {
		return Implicit
	}
	return StartTLS
}

// Error is a command the server refused (NO, BAD), a BYE, or a step that
// failed.
type Error struct {
	// Command is the command's name (LOGIN, UID FETCH), never its arguments.
	Command string
	// Status is NO, BAD or BYE; empty for a failure without a response.
	Status string
	// Code is the response code, e.g. AUTHENTICATIONFAILED.
	Code string
	Text string
	// Timeout says the server did not answer in time.
	Timeout bool
	err     error
}

func (e *Error) Error() string {
	msg := "imap " + e.Command + ": "
	switch {
	case e.Timeout:
		return msg + "the server did not answer in time; check the host and port"
	case e.Status != "":
		msg += e.Status
		if e.Code != "" {
			msg += " [" + e.Code + "]"
		}
		msg += " " + e.Text
	default:
		msg += e.Text
	}
	if e.Command == "LOGIN" || e.Command == "AUTHENTICATE" {
		if e.Status == "NO" {
			msg += " (the user name or password of the email account is wrong)"
		}
	}
	return msg
}

func (e *Error) Unwrap() error { return e.err }

// Client is one authenticated IMAP connection. It is not safe for
// concurrent use: IMAP commands on one connection are sequential here.
type Client struct {
	conn    net.Conn
	p       *parser
	w       *bufio.Writer
	tag     int
	caps    map[string]bool
	timeout time.Duration
	tls     bool
	broken  error
	bye     string
}

// Dial connects, secures the connection and logs in.
func Dial(ctx context.Context, cfg Config) (*Client, error) {
	if cfg.Host == "" || cfg.Port <= 0 || cfg.Port > 65535 {
		return nil, &Error{Command: "connect", Text: fmt.Sprintf("bad server address %q port %d", cfg.Host, cfg.Port)}
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 30 * time.Second
	}
	if cfg.MaxLiteral <= 0 {
		cfg.MaxLiteral = 25 << 20
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	dial := cfg.Dial
	if dial == nil {
		var d net.Dialer
		dial = d.DialContext
	}
	conn, err := dial(ctx, "tcp", net.JoinHostPort(cfg.Host, strconv.Itoa(cfg.Port)))
	if err != nil {
		return nil, ioError("connect", err)
	}
	tlsConf := &tls.Config{ServerName: cfg.Host, RootCAs: cfg.RootCAs, MinVersion: tls.VersionTLS12}
	c := &Client{conn: conn, timeout: cfg.Timeout}
	mode := cfg.Mode()
	switch mode {
	case Implicit:
		if err := c.handshake(ctx, tlsConf); err != nil {
			conn.Close()
			return nil, err
		}
	case StartTLS:
		c.setConn(conn)
	default:
		conn.Close()
		return nil, &Error{Command: "connect", Text: fmt.Sprintf("unknown TLS mode %q; want implicit or starttls", mode)}
	}
	c.p.maxLiteral = cfg.MaxLiteral
	if err := c.login(ctx, cfg, tlsConf); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

func (c *Client) setConn(conn net.Conn) {
	c.conn = conn
	limit := int64(25 << 20)
	if c.p != nil {
		limit = c.p.maxLiteral
	}
	c.p = &parser{r: bufio.NewReaderSize(conn, 64<<10), maxLiteral: limit}
	c.w = bufio.NewWriter(conn)
}

func (c *Client) handshake(ctx context.Context, conf *tls.Config) error {
	tc := tls.Client(c.conn, conf)
	if err := tc.HandshakeContext(ctx); err != nil {
		return tlsError(err)
	}
	c.setConn(tc)
	c.tls = true
	return nil
}

func (c *Client) login(ctx context.Context, cfg Config, tlsConf *tls.Config) error {
	release := c.deadline(ctx)
	greet, err := c.p.readResponse()
	release()
	var pe *ProtocolError
	if errors.As(err, &pe) {
		c.fail("greeting", err)
		return &Error{Command: "greeting", Text: "the server did not greet with * OK; is this an IMAP port? (" + pe.Msg + ")", err: err}
	}
	if err != nil {
		return c.fail("greeting", err)
	}
	switch {
	case greet.Kind != "*" || (greet.Status != "OK" && greet.Status != "PREAUTH" && greet.Status != "BYE"):
		return &Error{Command: "greeting", Text: "the server did not greet with * OK; is this an IMAP port?"}
	case greet.Status == "BYE":
		return &Error{Command: "greeting", Status: "BYE", Text: greet.Text}
	}
	if greet.Status == "PREAUTH" && !c.tls {
		return &Error{Command: "greeting", Text: "the server pre-authenticated an unencrypted connection; refusing to use it"}
	}
	c.capsFromCode(greet.Code)
	if c.caps == nil {
		if err := c.capability(ctx); err != nil {
			return err
		}
	}
	if !c.tls {
		if !c.caps["STARTTLS"] {
			return &Error{Command: "STARTTLS", Text: "the server does not offer STARTTLS; refusing to send the password " +
				"over an unencrypted connection (use port 993 for implicit TLS, or a server with STARTTLS)"}
		}
		if _, err := c.run(ctx, "STARTTLS", "STARTTLS", nil); err != nil {
			return err
		}
		if c.p.r.Buffered() > 0 { // bytes sent before the handshake could be injected
			return &Error{Command: "STARTTLS", Text: "the server sent data before the TLS handshake; refusing it"}
		}
		if err := c.handshake(ctx, tlsConf); err != nil {
			return err
		}
		c.caps = nil
		if err := c.capability(ctx); err != nil {
			return err
		}
	}
	if greet.Status == "PREAUTH" {
		return nil
	}
	return c.authenticate(ctx, cfg.Username, cfg.Password)
}

// capsFromCode reads a CAPABILITY response code.
func (c *Client) capsFromCode(code string) {
	f := strings.Fields(code)
	if len(f) > 0 && strings.EqualFold(f[0], "CAPABILITY") {
		c.caps = map[string]bool{}
		for _, s := range f[1:] {
			c.caps[strings.ToUpper(s)] = true
		}
	}
}

func (c *Client) capability(ctx context.Context) error {
	untagged, err := c.run(ctx, "CAPABILITY", "CAPABILITY", nil)
	if err != nil {
		return err
	}
	c.caps = map[string]bool{}
	for _, r := range untagged {
		if len(r.Fields) > 0 && strings.EqualFold(fmt.Sprint(r.Fields[0]), "CAPABILITY") {
			for _, v := range r.Fields[1:] {
				if s, ok := str(v); ok {
					c.caps[strings.ToUpper(s)] = true
				}
			}
		}
	}
	return nil
}

// Has reports whether the server announced capability cap.
func (c *Client) Has(cap string) bool { return c.caps[strings.ToUpper(cap)] }

// deadline sets the connection's deadline for one exchange and makes ctx's
// cancellation end it; the returned func undoes the latter.
func (c *Client) deadline(ctx context.Context) func() {
	d := time.Now().Add(c.timeout)
	if cd, ok := ctx.Deadline(); ok && cd.Before(d) {
		d = cd
	}
	c.conn.SetDeadline(d)
	stop := context.AfterFunc(ctx, func() { c.conn.SetDeadline(time.Unix(1, 0)) })
	return func() { stop() }
}

// arg is one command argument: written as an atom, a quoted string or a
// synchronising literal, whichever it needs.
type arg interface{}

// astring is a string argument sent quoted, or as a literal when it holds
// bytes a quoted string cannot.
type astring string

// run sends "tag name args" and reads until the tagged response; it
// returns the untagged responses. cont answers continuation requests of
// the command itself (AUTHENTICATE); literals of astring arguments are
// handled here.
func (c *Client) run(ctx context.Context, name, line string, cont func(text string) (string, error), args ...astring) ([]*response, error) {
	if c.broken != nil {
		return nil, &Error{Command: name, Text: "the connection is unusable after an earlier error: " + c.broken.Error()}
	}
	release := c.deadline(ctx)
	defer release()
	c.tag++
	tag := fmt.Sprintf("C%03d", c.tag)
	var untagged []*response
	// Parts of the line up to each literal, then the literal's bytes.
	c.w.WriteString(tag + " " + line)
	for _, a := range args {
		c.w.WriteByte(' ')
		if quotable(string(a)) {
			c.w.WriteString(quote(string(a)))
			continue
		}
		fmt.Fprintf(c.w, "{%d}\r\n", len(a))
		if err := c.w.Flush(); err != nil {
			return nil, c.fail(name, err)
		}
		for {
			r, err := c.p.readResponse()
			if err != nil {
				return nil, c.fail(name, err)
			}
			if r.Kind == "+" {
				break
			}
			if r.Kind == tag {
				return nil, c.tagged(name, r)
			}
			untagged = append(untagged, r)
		}
		c.w.WriteString(string(a))
	}
	c.w.WriteString("\r\n")
	if err := c.w.Flush(); err != nil {
		return nil, c.fail(name, err)
	}
	for {
		r, err := c.p.readResponse()
		if err != nil {
			return nil, c.fail(name, err)
		}
		switch {
		case r.Kind == tag:
			return untagged, c.tagged(name, r)
		case r.Kind == "+":
			if cont == nil {
				c.broken = errors.New("unexpected continuation request")
				return nil, &Error{Command: name, Text: "the server asked for a continuation the command has none of"}
			}
			answer, err := cont(r.Text)
			if err != nil {
				c.w.WriteString("*\r\n") // cancel the exchange
				c.w.Flush()
				c.broken = err // its tagged answer is still unread
				return nil, err
			}
			c.w.WriteString(answer + "\r\n")
			if err := c.w.Flush(); err != nil {
				return nil, c.fail(name, err)
			}
		case r.Kind == "*" && r.Status == "BYE":
			c.bye = r.Text
		case r.Kind == "*":
			untagged = append(untagged, r)
		default:
			c.broken = fmt.Errorf("response with unknown tag %q", r.Kind)
			return nil, &Error{Command: name, Text: c.broken.Error()}
		}
	}
}

// tagged turns the tagged response into nil or an *Error.
func (c *Client) tagged(name string, r *response) error {
	if r.Status == "OK" {
		return nil
	}
	code, _, _ := strings.Cut(r.Code, " ")
	return &Error{Command: name, Status: r.Status, Code: code, Text: r.Text}
}

// fail marks the connection broken and explains err.
func (c *Client) fail(name string, err error) error {
	c.broken = err
	c.conn.Close()
	var tl *TooLargeError
	var pe *ProtocolError
	switch {
	case errors.As(err, &tl), errors.As(err, &pe):
		return &Error{Command: name, Text: err.Error(), err: err}
	case c.bye != "" && (errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed)):
		return &Error{Command: name, Status: "BYE", Text: c.bye, err: err}
	}
	return ioError(name, err)
}

func ioError(name string, err error) *Error {
	e := &Error{Command: name, Text: err.Error(), err: err}
	var ne net.Error
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()):
		e.Timeout = true
	case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF):
		e.Text = "the server closed the connection"
	}
	return e
}

func tlsError(err error) *Error {
	e := ioError("TLS", err)
	var ue x509.UnknownAuthorityError
	var he x509.HostnameError
	switch {
	case errors.As(err, &ue):
		e.Text = "the server's certificate is signed by an unknown authority; " +
			"for a self-hosted server give its CA in the email account's ca_pem"
	case errors.As(err, &he):
		e.Text = "the server's certificate does not name " + he.Host + "; set imap_host to a name the certificate has"
	}
	return e
}

// quotable reports whether s can be sent as a quoted string: 7-bit, no
// NUL, CR or LF.
func quotable(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == 0 || s[i] == '\r' || s[i] == '\n' || s[i] >= 0x80 {
			return false
		}
	}
	return true
}

func quote(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

// Logout ends the session politely and closes the connection.
func (c *Client) Logout(ctx context.Context) error {
	defer c.Close()
	if c.broken != nil {
		return nil
	}
	_, err := c.run(ctx, "LOGOUT", "LOGOUT", nil)
	return err
}

// Close closes the connection.
func (c *Client) Close() error { return c.conn.Close() }
