package email

import (
	"bytes"
	"encoding/base64"
	"html"
	"io"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	"net/mail"
	"net/textproto"
	"regexp"
	"strings"
	"unicode/utf8"
)

// Bounds of reading one message's MIME tree.
const (
	maxParts     = 200
	maxPartDepth = 10
)

// attachmentInfo names one attachment of a received message.
type attachmentInfo struct {
	Name        string `json:"name"`
	ContentType string `json:"content_type"`
	Size        int64  `json:"size"`
}

// body is what the model is shown of a message: its text and the names of
// its attachments.
type body struct {
	Text string
	// FromHTML says the text was taken from an HTML part (no plain part).
	FromHTML    bool
	Attachments []attachmentInfo
}

// parseBody reads a raw RFC 5322 message. It never fails: what it cannot
// read becomes a note in the text.
func parseBody(raw []byte) body {
	m, err := mail.ReadMessage(bytes.NewReader(raw))
	if err != nil {
		return body{Text: clean("(the message could not be read: " + err.Error() + ")")}
	}
	w := &walker{}
	w.part(textproto.MIMEHeader(m.Header), m.Body, 0)
	b := body{Text: w.plain, Attachments: w.atts}
	if b.Text == "" && w.html != "" {
		b.Text, b.FromHTML = htmlToText(w.html), true
	}
	b.Text = clean(b.Text)
	for i := range b.Attachments {
		b.Attachments[i].Name = clean(b.Attachments[i].Name)
	}
	return b
}

type walker struct {
	plain, html string
	atts        []attachmentInfo
	parts       int
}

func (w *walker) part(h textproto.MIMEHeader, r io.Reader, depth int) {
	w.parts++
	if w.parts > maxParts || depth > maxPartDepth {
		return
	}
	ct, params, err := mime.ParseMediaType(h.Get("Content-Type"))
	if err != nil || ct == "" {
		ct, params = "text/plain", map[string]string{"charset": "us-ascii"}
	}
	if strings.HasPrefix(ct, "multipart/") && params["boundary"] != "" {
		mr := multipart.NewReader(r, params["boundary"])
		for {
			p, err := mr.NextRawPart()
			if err != nil {
				return
			}
			w.part(p.Header, p, depth+1)
		}
	}
	disp, dparams, _ := mime.ParseMediaType(h.Get("Content-Disposition"))
	name := dparams["filename"]
	if name == "" {
		name = params["name"]
	}
	name = decodeWords(name)
	data := decodeTransfer(h.Get("Content-Transfer-Encoding"), r)
	isText := ct == "text/plain" || ct == "text/html"
	if disp == "attachment" || name != "" || !isText {
		if ct == "message/rfc822" && name == "" {
			name = "forwarded message"
		}
		n, _ := io.Copy(io.Discard, data)
		if name == "" {
			name = "(unnamed)"
		}
		w.atts = append(w.atts, attachmentInfo{Name: name, ContentType: ct, Size: n})
		return
	}
	b, _ := io.ReadAll(io.LimitReader(data, 4<<20))
	text := strings.ReplaceAll(toUTF8(b, params["charset"]), "\r\n", "\n")
	switch {
	case ct == "text/plain" && w.plain == "":
		w.plain = text
	case ct == "text/html" && w.html == "":
		w.html = text
	}
}

func decodeTransfer(cte string, r io.Reader) io.Reader {
	switch strings.ToLower(strings.TrimSpace(cte)) {
	case "base64":
		return base64.NewDecoder(base64.StdEncoding, &spaceless{r: r})
	case "quoted-printable":
		return quotedprintable.NewReader(r)
	}
	return r
}

// spaceless drops the spaces and tabs some senders put in base64 lines
// (the decoder itself skips CR and LF).
type spaceless struct{ r io.Reader }

func (s *spaceless) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	k := 0
	for _, c := range p[:n] {
		if c != ' ' && c != '\t' {
			p[k] = c
			k++
		}
	}
	return k, err
}

// toUTF8 converts text of a charset: UTF-8 and ASCII as they are, Latin-1
// and Windows-1252 byte by byte; other bytes that are not UTF-8 become U+FFFD.
func toUTF8(b []byte, charset string) string {
	switch strings.ToLower(charset) {
	case "iso-8859-1", "latin1", "iso-8859-15", "windows-1252", "cp1252":
		if !utf8.Valid(b) {
			r := make([]rune, len(b))
			for i, c := range b {
				r[i] = rune(c)
			}
			return string(r)
		}
	}
	return strings.ToValidUTF8(string(b), "\uFFFD")
}

var wordDecoder = &mime.WordDecoder{}

func decodeWords(s string) string {
	if d, err := wordDecoder.DecodeHeader(s); err == nil {
		return d
	}
	return s
}

var (
	scriptRE = regexp.MustCompile(`(?is)<(script|style|head)[^>]*>.*?</(script|style|head)\s*>`)
	breakRE  = regexp.MustCompile(`(?i)<(br|/p|/div|/tr|/h[1-6]|/li)\s*/?>`)
	tagRE    = regexp.MustCompile(`(?s)<[^>]*>`)
	blankRE  = regexp.MustCompile(`\n[ \t]*(\n[ \t]*)+`)
)

// htmlToText is a rough reading of an HTML body: no scripts or styles,
// line breaks at block ends, no tags, entities decoded.
func htmlToText(s string) string {
	s = scriptRE.ReplaceAllString(s, "")
	s = breakRE.ReplaceAllString(s, "\n")
	s = tagRE.ReplaceAllString(s, "")
	s = html.UnescapeString(s)
	s = blankRE.ReplaceAllString(s, "\n\n")
	return strings.TrimSpace(s)
}

// clean drops control characters but tab and newline (a NUL, a terminal
// escape) from text a sender wrote, and makes it valid UTF-8.
func clean(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	return strings.Map(func(r rune) rune {
		if (r < ' ' && r != '\n' && r != '\t') || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return -1
		}
		return r
	}, s)
}

// truncate cuts text to max runes, reporting whether it did.
func truncate(s string, max int) (string, bool) {
	if utf8.RuneCountInString(s) <= max {
		return s, false
	}
	i := 0
	for n := 0; n < max; n++ {
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
	}
	return s[:i], true
}
