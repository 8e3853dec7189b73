package pgtest

// The few pieces of the Postgres wire protocol (version 3.0) that the relay
// and the readiness probe need. Only the store speaks SQL through pgx; this
// harness reads message frames and runs the odd simple query itself.

import (
	"bufio"
	"bytes"
	"context"
	"crypto/md5"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"time"
)

// Request codes a client sends in place of a protocol version.
const (
	protocol30     = 196608   // 3.0
	codeSSLRequest = 80877103 // "SSL, please"
	codeGSSENC     = 80877104 // "GSS encryption, please"
	codeCancel     = 80877102 // cancel a running query
)

// maxMessage bounds a frame's length so that garbage (a server that answers
// with text, such as PGlite's "Too many connections") is not taken for a
// huge message.
const maxMessage = 1 << 30

// readMessage reads one type-tagged message: a type byte, a big-endian int32
// length that counts itself, and the body.
func readMessage(r *bufio.Reader) (typ byte, body []byte, err error) {
	var head [5]byte
	if _, err := io.ReadFull(r, head[:]); err != nil {
		return 0, nil, err
	}
	n := int(binary.BigEndian.Uint32(head[1:]))
	if n < 4 || n > maxMessage {
		return 0, nil, fmt.Errorf("malformed message %q with length %d", head[0], n)
	}
	body = make([]byte, n-4)
	if _, err := io.ReadFull(r, body); err != nil {
		return 0, nil, err
	}
	return head[0], body, nil
}

// appendMessage appends a type-tagged message to b.
func appendMessage(b []byte, typ byte, body []byte) []byte {
	b = append(b, typ)
	b = binary.BigEndian.AppendUint32(b, uint32(len(body)+4))
	return append(b, body...)
}

// query is the body of a simple Query message.
func query(sql string) []byte { return append([]byte(sql), 0) }

// readUntagged reads a message without a type byte: the first one a client
// sends (a startup message, or an SSL, GSS or cancel request).
func readUntagged(r *bufio.Reader) (code uint32, msg []byte, err error) {
	var head [8]byte
	if _, err := io.ReadFull(r, head[:]); err != nil {
		return 0, nil, err
	}
	n := int(binary.BigEndian.Uint32(head[:4]))
	if n < 8 || n > 1<<16 {
		return 0, nil, fmt.Errorf("malformed startup message with length %d", n)
	}
	msg = make([]byte, n)
	copy(msg, head[:])
	if _, err := io.ReadFull(r, msg[8:]); err != nil {
		return 0, nil, err
	}
	return binary.BigEndian.Uint32(head[4:]), msg, nil
}

// startupMessage builds a protocol 3.0 startup message.
func startupMessage(params ...string) []byte {
	b := []byte{0, 0, 0, 0}
	b = binary.BigEndian.AppendUint32(b, protocol30)
	for _, p := range params {
		b = append(append(b, p...), 0)
	}
	b = append(b, 0)
	binary.BigEndian.PutUint32(b, uint32(len(b)))
	return b
}

// serverError is an ErrorResponse from the server.
type serverError struct{ Severity, Code, Message string }

func (e *serverError) Error() string {
	return fmt.Sprintf("%s: %s (SQLSTATE %s)", e.Severity, e.Message, e.Code)
}

func parseError(body []byte) *serverError {
	e := &serverError{}
	for _, f := range bytes.Split(body, []byte{0}) {
		if len(f) < 1 {
			continue
		}
		switch f[0] {
		case 'S':
			e.Severity = string(f[1:])
		case 'C':
			e.Code = string(f[1:])
		case 'M':
			e.Message = string(f[1:])
		}
	}
	return e
}

// errorMessage builds an ErrorResponse message, which is how the relay tells
// a client (pgx) why it got no connection.
func errorMessage(severity, code, msg string) []byte {
	var body []byte
	for _, f := range []struct {
		tag byte
		val string
	}{{'S', severity}, {'V', severity}, {'C', code}, {'M', msg}} {
		body = append(append(append(body, f.tag), f.val...), 0)
	}
	return appendMessage(nil, 'E', append(body, 0))
}

// client is a minimal Postgres client: startup with trust, cleartext or MD5
// authentication (PGlite asks for MD5), and simple queries whose values come
// back as text.
type client struct {
	conn net.Conn
	r    *bufio.Reader
}

// dial connects and authenticates as user postgres, giving up at ctx's
// deadline.
func dial(ctx context.Context, addr string) (*client, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	if dl, ok := ctx.Deadline(); ok {
		conn.SetDeadline(dl)
	}
	c := &client{conn: conn, r: bufio.NewReader(conn)}
	if _, err := conn.Write(startupMessage("user", "postgres", "database", "postgres")); err != nil {
		conn.Close()
		return nil, err
	}
	for {
		typ, body, err := readMessage(c.r)
		if err != nil {
			conn.Close()
			return nil, fmt.Errorf("startup: %w", err)
		}
		switch typ {
		case 'R':
			switch method := binary.BigEndian.Uint32(body); method {
			case 0: // AuthenticationOk
			case 3, 5: // cleartext or MD5 password (PGlite asks for MD5 and takes any)
				pw := "postgres"
				if method == 5 && len(body) >= 8 {
					pw = md5Password("postgres", "postgres", body[4:8])
				}
				if _, err := conn.Write(appendMessage(nil, 'p', query(pw))); err != nil {
					conn.Close()
					return nil, err
				}
			default:
				conn.Close()
				return nil, fmt.Errorf("startup: authentication method %d is not supported by pgtest's probe", method)
			}
		case 'E':
			conn.Close()
			return nil, parseError(body)
		case 'Z':
			return c, nil
		}
	}
}

// md5Password is the answer to AuthenticationMD5Password.
func md5Password(user, password string, salt []byte) string {
	inner := md5.Sum([]byte(password + user))
	outer := md5.Sum(append([]byte(hex.EncodeToString(inner[:])), salt...))
	return "md5" + hex.EncodeToString(outer[:])
}

// query runs one simple query and returns its rows as text (NULL as "").
func (c *client) query(sql string) ([][]string, error) {
	if _, err := c.conn.Write(appendMessage(nil, 'Q', query(sql))); err != nil {
		return nil, err
	}
	var rows [][]string
	var qerr error
	for {
		typ, body, err := readMessage(c.r)
		if err != nil {
			return nil, err
		}
		switch typ {
		case 'D':
			rows = append(rows, parseDataRow(body))
		case 'E':
			if qerr == nil {
				qerr = parseError(body)
			}
		case 'Z':
			return rows, qerr
		}
	}
}

func parseDataRow(body []byte) []string {
	if len(body) < 2 {
		return nil
	}
	n := int(binary.BigEndian.Uint16(body))
	body = body[2:]
	row := make([]string, 0, n)
	for i := 0; i < n && len(body) >= 4; i++ {
		size := int32(binary.BigEndian.Uint32(body))
		body = body[4:]
		if size < 0 {
			row = append(row, "")
			continue
		}
		if int(size) > len(body) {
			break
		}
		row = append(row, string(body[:size]))
		body = body[size:]
	}
	return row
}

// close says goodbye (Terminate) and closes the connection.
func (c *client) close() error {
	c.conn.SetWriteDeadline(time.Now().Add(time.Second))
	c.conn.Write(appendMessage(nil, 'X', nil))
	return c.conn.Close()
}

// probe reports whether a Postgres server at addr completes a startup and
// answers SELECT 1.
func probe(ctx context.Context, addr string) error {
	c, err := dial(ctx, addr)
	if err != nil {
		return err
	}
	defer c.close()
	rows, err := c.query("SELECT 1")
	if err != nil {
		return err
	}
	if len(rows) != 1 || len(rows[0]) != 1 || strings.TrimSpace(rows[0][0]) != "1" {
		return errors.New("SELECT 1 answered " + fmt.Sprint(rows))
	}
	return nil
}
