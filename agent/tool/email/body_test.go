package email

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestParseBody(t *testing.T) {
	tests := []struct {
		name, raw, text, atts string
	}{
		{"plain", "Subject: x\n\nhello\n", "hello\n", "[]"},
		{"no content type, 8-bit junk", "Subject: x\n\nbad \xff byte\n", "bad \uFFFD byte\n", "[]"},
		{"multipart alternative prefers plain", multipartMail, "Bonjour, voici la facture €.", "[{facture été.pdf application/pdf 9}]"},
		{"attachment name in encoded words", "Content-Type: multipart/mixed; boundary=b\n\n--b\nContent-Type: text/plain\n\nt\n--b\n" +
			"Content-Type: image/png; name=\"=?utf-8?B?w6kucG5n?=\"\nContent-Transfer-Encoding: base64\n\niVBO Rw==\n--b--\n", "t", "[{é.png image/png 4}]"},
		{"forwarded message", "Content-Type: multipart/mixed; boundary=b\n\n--b\nContent-Type: message/rfc822\n\nSubject: inner\n\nx\n--b--\n", "", "[{forwarded message message/rfc822 19}]"},
		{"broken boundary", "Content-Type: multipart/mixed; boundary=b\n\nno parts at all\n", "", "[]"},
		{"nested too deep", nested(30), "", "[]"},
		{"nested within bounds", nested(5), "x", "[]"},
		{"unreadable header", "no header here", "(the message could not be read", "[]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := parseBody([]byte(strings.ReplaceAll(tt.raw, "\n", "\r\n")))
			text := strings.ReplaceAll(b.Text, "\r\n", "\n")
			if !strings.HasPrefix(text, tt.text) || (tt.text == "" && text != "") {
				t.Errorf("text = %q; want %q", text, tt.text)
			}
			var atts []string
			for _, a := range b.Attachments {
				atts = append(atts, fmt.Sprintf("{%s %s %d}", a.Name, a.ContentType, a.Size))
			}
			if got := "[" + strings.Join(atts, " ") + "]"; got != tt.atts {
				t.Errorf("attachments = %s; want %s", got, tt.atts)
			}
		})
	}
}

// nested returns a message with n levels of multipart around a text part.
func nested(n int) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "Content-Type: multipart/mixed; boundary=b%d\n\n--b%d\n", i, i)
	}
	b.WriteString("Content-Type: text/plain\n\nx\n")
	for i := n - 1; i >= 0; i-- {
		fmt.Fprintf(&b, "--b%d--\n", i)
	}
	return b.String()
}

func TestTruncate(t *testing.T) {
	if s, cut := truncate("héllo wörld", 5); s != "héllo" || !cut {
		t.Errorf("truncate = %q %v", s, cut)
	}
	if s, cut := truncate("ok", 5); s != "ok" || cut {
		t.Errorf("truncate = %q %v", s, cut)
	}
}

// Whatever a sender writes, parseBody returns valid UTF-8 without control
// characters but tab and newline, and never panics.
func FuzzParseBody(f *testing.F) {
	f.Add([]byte(multipartMail))
	f.Add([]byte(nested(3)))
	f.Add([]byte("Content-Type: text/html\r\n\r\n<p>a &amp; b</p>"))
	f.Fuzz(func(t *testing.T, raw []byte) {
		b := parseBody(raw)
		for _, s := range append([]string{b.Text}, names(b.Attachments)...) {
			if !utf8.ValidString(s) {
				t.Fatalf("invalid UTF-8: %q", s)
			}
			for _, r := range s {
				if r < ' ' && r != '\n' && r != '\t' {
					t.Fatalf("control character %U in %q", r, s)
				}
			}
		}
	})
}

func names(atts []attachmentInfo) []string {
	var out []string
	for _, a := range atts {
		out = append(out, a.Name)
	}
	return out
}
