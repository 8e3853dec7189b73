package smtp

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	"net/mail"
	"net/textproto"
	"path"
	"strings"
	"time"
)

// Message is one email to send. From, To, Cc are addresses in RFC 5322 form
// ("a@example.com" or "Ann Example <a@example.com>"); display names and the
// subject may hold any UTF-8 and are written as RFC 2047 encoded-words.
type Message struct {
	From    string
	To      []string
	Cc      []string
	Subject string
	// Text is the plain-text body (UTF-8), sent quoted-printable.
	Text        string
	Attachments []Attachment
	// Date defaults to now; MessageID defaults to a random id at the
	// sender's domain. MessageID is given without angle brackets.
	Date      time.Time
	MessageID string
}

// Attachment is one file sent with a message, base64-encoded. ContentType
// defaults to the type of the name's extension, else
// application/octet-stream.
type Attachment struct {
	Name        string
	ContentType string
	Data        []byte
}

// Recipients returns the envelope recipients (To and Cc), as bare
// addresses.
func (m *Message) Recipients() ([]string, error) {
	var out []string
	for _, list := range [][]string{m.To, m.Cc} {
		for _, s := range list {
			a, err := parseAddress(s)
			if err != nil {
				return nil, err
			}
			out = append(out, a.Address)
		}
	}
	if len(out) == 0 {
		return nil, errors.New("no recipient: give at least one To address")
	}
	return out, nil
}

// parseAddress parses one address, refusing line breaks (header injection).
func parseAddress(s string) (*mail.Address, error) {
	if strings.ContainsAny(s, "\r\n\x00") {
		return nil, fmt.Errorf("address %q contains a line break or NUL", s)
	}
	a, err := mail.ParseAddress(s)
	if err != nil {
		return nil, fmt.Errorf("address %q: %v; want a@example.com or \"Name <a@example.com>\"", s, err)
	}
	return a, nil
}

// Bytes renders the message in RFC 5322 form with CRLF line ends: headers
// (From, To, Cc, Subject, Date, Message-ID, MIME-Version), then a
// text/plain body, or a multipart/mixed body when there are attachments.
func (m *Message) Bytes() ([]byte, error) {
	from, err := parseAddress(m.From)
	if err != nil {
		return nil, fmt.Errorf("from: %w", err)
	}
	if _, err := m.Recipients(); err != nil {
		return nil, err
	}
	if strings.ContainsAny(m.Subject, "\r\n\x00") {
		return nil, errors.New("subject contains a line break or NUL; give it on one line")
	}
	date := m.Date
	if date.IsZero() {
		date = time.Now()
	}
	id := m.MessageID
	if id == "" {
		id = newMessageID(from.Address)
	} else if strings.IndexFunc(id, func(r rune) bool { return r <= ' ' || r > '~' || r == '<' || r == '>' }) >= 0 || !strings.Contains(id, "@") {
		return nil, fmt.Errorf("message id %q: want left@right in printable ASCII, without angle brackets or spaces", id)
	}

	var b bytes.Buffer
	header := func(k, v string) { fmt.Fprintf(&b, "%s: %s\r\n", k, v) }
	f := newField("From")
	if err := f.address(from, false); err != nil {
		return nil, fmt.Errorf("from: %w", err)
	}
	b.WriteString(f.String())
	for _, h := range []struct {
		name string
		list []string
	}{{"To", m.To}, {"Cc", m.Cc}} {
		if len(h.list) == 0 {
			continue
		}
		f, err := addressList(h.name, h.list)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", strings.ToLower(h.name), err)
		}
		b.WriteString(f.String())
	}
	f = newField("Subject")
	f.text(m.Subject)
	b.WriteString(f.String())
	header("Date", date.Format(time.RFC1123Z))
	f = newField("Message-ID")
	if err := f.word("<" + id + ">"); err != nil {
		return nil, fmt.Errorf("message id is too long: %w", err)
	}
	b.WriteString(f.String())
	header("MIME-Version", "1.0")

	if len(m.Attachments) == 0 {
		header("Content-Type", "text/plain; charset=utf-8")
		header("Content-Transfer-Encoding", "quoted-printable")
		b.WriteString("\r\n")
		return b.Bytes(), writeQP(&b, m.Text)
	}
	mw := multipart.NewWriter(&b)
	f = newField("Content-Type")
	if err := f.mediaType("multipart/mixed", map[string]string{"boundary": mw.Boundary()}); err != nil {
		return nil, err
	}
	b.WriteString(f.String())
	b.WriteString("\r\n")
	text, err := mw.CreatePart(textproto.MIMEHeader{
		"Content-Type":              {"text/plain; charset=utf-8"},
		"Content-Transfer-Encoding": {"quoted-printable"},
	})
	if err != nil {
		return nil, err
	}
	if err := writeQP(text, m.Text); err != nil {
		return nil, err
	}
	for _, a := range m.Attachments {
		if err := writeAttachment(mw, a); err != nil {
			return nil, err
		}
	}
	if err := mw.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// addressList renders addresses for a header, one per folded line.
func addressList(name string, list []string) (*field, error) {
	f := newField(name)
	for i, s := range list {
		a, err := parseAddress(s)
		if err != nil {
			return nil, err
		}
		if i > 0 {
			f.fold()
		}
		if err := f.address(a, i < len(list)-1); err != nil {
			return nil, err
		}
	}
	return f, nil
}

// writeQP writes text quoted-printable with CRLF line ends.
func writeQP(w interface{ Write([]byte) (int, error) }, text string) error {
	text = strings.ReplaceAll(text, "\r\n", "\n")
	text = strings.ReplaceAll(text, "\n", "\r\n")
	qp := quotedprintable.NewWriter(w)
	if _, err := qp.Write([]byte(text)); err != nil {
		return err
	}
	return qp.Close()
}

// writeAttachment adds one base64 part, in lines of 76 characters.
func writeAttachment(mw *multipart.Writer, a Attachment) error {
	name := path.Base(strings.ReplaceAll(a.Name, "\\", "/"))
	if name == "" || name == "." || name == "/" || strings.ContainsAny(name, "\r\n\x00") {
		return fmt.Errorf("attachment name %q: want a file name", a.Name)
	}
	ct := a.ContentType
	if ct == "" {
		ct = mime.TypeByExtension(path.Ext(name))
	}
	if ct == "" {
		ct = "application/octet-stream"
	}
	t, params, err := mime.ParseMediaType(ct)
	if err != nil {
		return fmt.Errorf("attachment %q: content type %q: %v", name, ct, err)
	}
	ctype := newField("Content-Type")
	if err := ctype.mediaType(t, params); err != nil {
		return fmt.Errorf("attachment %q: content type: %w", name, err)
	}
	disp := newField("Content-Disposition")
	if err := disp.mediaType("attachment", map[string]string{"filename": name}); err != nil {
		return fmt.Errorf("attachment %q: %w", name, err)
	}
	// CreatePart writes each value after "Name: " as it is, folds included.
	part, err := mw.CreatePart(textproto.MIMEHeader{
		"Content-Type":              {ctype.value()},
		"Content-Disposition":       {disp.value()},
		"Content-Transfer-Encoding": {"base64"},
	})
	if err != nil {
		return err
	}
	enc := base64.StdEncoding.EncodeToString(a.Data)
	for len(enc) > 76 {
		if _, err := fmt.Fprintf(part, "%s\r\n", enc[:76]); err != nil {
			return err
		}
		enc = enc[76:]
	}
	_, err = fmt.Fprintf(part, "%s\r\n", enc)
	return err
}

// newMessageID returns a random id at the domain of addr.
func newMessageID(addr string) string {
	var r [16]byte
	rand.Read(r[:])
	domain := "choir.local"
	if i := strings.LastIndexByte(addr, '@'); i >= 0 && i+1 < len(addr) && len(addr)-i-1 <= 253 { // a longer one is no DNS name
		domain = addr[i+1:]
	}
	return hex.EncodeToString(r[:]) + "@" + domain
}
