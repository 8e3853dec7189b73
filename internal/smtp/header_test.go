package smtp

import (
	"encoding/base64"
	"io"
	"mime"
	"mime/multipart"
	"net/mail"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// encodedWord matches one RFC 2047 encoded-word as header.go writes it.
var encodedWord = regexp.MustCompile(`=\?utf-8\?b\?([A-Za-z0-9+/=]*)\?=`)

// checkHeaderLines fails unless every line of the message's headers and
// its parts' headers keeps to 76 characters (RFC 2047 §2), each encoded-word
// to 75 and holds whole UTF-8 characters of a valid text, and every byte is
// 7-bit.
func checkHeaderLines(t *testing.T, raw []byte, validUTF8 bool) {
	t.Helper()
	for _, l := range strings.Split(string(raw), "\r\n") {
		if len(l) > softMax {
			t.Errorf("line of %d characters; want at most %d: %q", len(l), softMax, l)
		}
		for i := 0; i < len(l); i++ {
			if l[i] >= 0x80 {
				t.Errorf("raw 8-bit byte in %q; every header and part must be 7-bit", l)
				break
			}
		}
		for _, m := range encodedWord.FindAllStringSubmatch(l, -1) {
			if len(m[0]) > wordMax {
				t.Errorf("encoded-word of %d characters; want at most %d: %q", len(m[0]), wordMax, m[0])
			}
			b, err := base64.StdEncoding.DecodeString(m[1])
			if err != nil {
				t.Errorf("encoded-word %q: %v", m[0], err)
			}
			if validUTF8 && !utf8.Valid(b) {
				t.Errorf("encoded-word %q splits a UTF-8 sequence: %q", m[0], b)
			}
		}
	}
}

// readBack parses raw and returns its decoded subject, its To addresses and
// its attachments' file names.
func readBack(t *testing.T, raw []byte) (subject string, to []*mail.Address, files []string) {
	t.Helper()
	m, err := mail.ReadMessage(strings.NewReader(string(raw)))
	if err != nil {
		t.Fatalf("unreadable message: %v\n%s", err, raw)
	}
	subject, err = new(mime.WordDecoder).DecodeHeader(m.Header.Get("Subject"))
	if err != nil {
		t.Errorf("Subject: %v", err)
	}
	to, err = m.Header.AddressList("To")
	if err != nil {
		t.Errorf("To: %v\n%s", err, raw)
	}
	mt, params, _ := mime.ParseMediaType(m.Header.Get("Content-Type"))
	if mt != "multipart/mixed" {
		return subject, to, nil
	}
	mr := multipart.NewReader(m.Body, params["boundary"])
	for {
		p, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("part: %v\n%s", err, raw)
		}
		if name := p.FileName(); name != "" {
			files = append(files, name)
		}
	}
	return subject, to, files
}

func TestMessageFoldsLongHeaders(t *testing.T) {
	for _, tc := range []struct {
		name    string
		subject string
		to      []string
		files   []string
	}{
		{
			// FuzzMessage's find (testdata/fuzz/FuzzMessage/614bca0084108993):
			// a display name of 271 bytes, not valid UTF-8, came out as one
			// To line of 999 characters, one past RFC 5322's limit.
			name: "fuzz 614bca0084108993", subject: "0",
			to: []string{(&mail.Address{Name: "0" + strings.Repeat("\xe3", 270), Address: "b@example.com"}).String()},
		},
		{
			name: "long UTF-8 subject", subject: strings.Repeat("Données trimestrielles 📈 — ", 60),
			to: []string{"bob@example.com"},
		},
		{
			name: "long ASCII subject", subject: strings.Repeat("quarterly report ", 80) + "end",
			to: []string{"bob@example.com"},
		},
		{
			name: "ASCII words too long for a line", subject: "see https://example.com/" + strings.Repeat("x", 1500),
			to: []string{"bob@example.com"},
		},
		{
			name: "spacing, tabs and a literal encoded-word kept", subject: "  two  spaces\tand a tab =?utf-8?q?x?= ",
			to: []string{"bob@example.com"},
		},
		{
			name: "long display names and many recipients", subject: "hi",
			to: []string{
				(&mail.Address{Name: strings.Repeat("Zoë Ærø ", 100), Address: "zoe@example.com"}).String(),
				(&mail.Address{Name: strings.Repeat("O'Brien, Ann ", 100), Address: "ann@example.com"}).String(),
				(&mail.Address{Name: strings.Repeat("x", 500), Address: "x@example.com"}).String(),
				"Ann Example <ann2@example.com>", "bob@example.com", `"Dr. Who" <who@example.com>`,
			},
		},
		{
			name: "long file names", subject: "files", to: []string{"bob@example.com"},
			files: []string{strings.Repeat("données ", 100) + ".csv", strings.Repeat("report", 100) + ".pdf", "a \"quoted\" name.txt", "a.txt"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			msg := &Message{From: "Zoë Ærø <zoe@example.com>", To: tc.to, Subject: tc.subject, Date: time.Date(2026, 11, 25, 9, 0, 0, 0, time.UTC)}
			for _, f := range tc.files {
				msg.Attachments = append(msg.Attachments, Attachment{Name: f, Data: []byte("x")})
			}
			raw, err := msg.Bytes()
			if err != nil {
				t.Fatalf("Bytes() = %v", err)
			}
			valid := utf8.ValidString(tc.subject)
			for _, s := range tc.to {
				a, _ := mail.ParseAddress(s)
				valid = valid && utf8.ValidString(a.Name)
			}
			checkHeaderLines(t, raw, valid)
			subject, to, files := readBack(t, raw)
			if subject != tc.subject {
				t.Errorf("Subject reads back as %q; want %q", subject, tc.subject)
			}
			if len(to) != len(tc.to) {
				t.Fatalf("To reads back as %d addresses; want %d", len(to), len(tc.to))
			}
			for i, s := range tc.to {
				want, _ := mail.ParseAddress(s)
				if *to[i] != *want {
					t.Errorf("To[%d] reads back as %q <%s>; want %q <%s>", i, to[i].Name, to[i].Address, want.Name, want.Address)
				}
			}
			if strings.Join(files, "|") != strings.Join(tc.files, "|") {
				t.Errorf("file names read back as %q; want %q", files, tc.files)
			}
		})
	}
}

// An address is never split. One that does not fit on a header line is
// refused, naming the header; one that fits but passes 76 characters gets a
// line of its own.
func TestMessageLongAddresses(t *testing.T) {
	long := func(n int) string { return strings.Repeat("a", n) + "@example.com" }
	for _, tc := range []struct {
		name    string
		to, cc  []string
		wantErr string
	}{
		{name: "to too long", to: []string{"bob@example.com", "Ann <" + long(1000) + ">"}, wantErr: "too long for the To header"},
		{name: "cc too long", to: []string{"bob@example.com"}, cc: []string{long(990)}, wantErr: "too long for the Cc header"},
		{name: "long but fits", to: []string{"Ann <ann@example.com>", "Zoë <" + long(900) + ">", "bob@example.com"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			msg := &Message{From: "a@example.com", To: tc.to, Cc: tc.cc, Subject: "hi"}
			raw, err := msg.Bytes()
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Bytes() = %v; want an error saying %q", err, tc.wantErr)
				}
				if len(err.Error()) > 300 {
					t.Errorf("error of %d characters; want the address cut short: %v", len(err.Error()), err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Bytes() = %v", err)
			}
			for _, l := range strings.Split(string(raw), "\r\n") {
				if len(l) > softMax && (len(l) > lineMax || !strings.HasPrefix(l, " <aaaa") || !strings.HasSuffix(l, ">,")) {
					t.Errorf("line of %d characters that is not an address alone: %.100q", len(l), l)
				}
			}
			_, to, _ := readBack(t, raw)
			if len(to) != 3 || to[1].Name != "Zoë" || to[1].Address != long(900) {
				t.Errorf("To reads back as %v", to)
			}
		})
	}
}

func TestMessageRefusesALongMessageID(t *testing.T) {
	msg := &Message{From: "a@example.com", To: []string{"b@example.com"}, MessageID: strings.Repeat("x", 1000) + "@example.com"}
	if _, err := msg.Bytes(); err == nil || !strings.Contains(err.Error(), "message id is too long") {
		t.Errorf("Bytes() with a message id of 1012 characters = %v; want a refusal", err)
	}
}
