package imap

import (
	"bufio"
	"bytes"
	"fmt"
	"strings"
	"testing"
)

// BenchmarkParseFetch parses one FETCH response with an envelope and a
// 1 MiB body literal.
func BenchmarkParseFetch(b *testing.B) {
	body := strings.Repeat("0123456789abcdef\r\n", (1<<20)/18)
	resp := []byte(fmt.Sprintf("* 1 FETCH (UID 7 FLAGS (\\Seen) RFC822.SIZE %d ENVELOPE (\"Tue, 24 Nov 2026 08:00:00 +0000\" "+
		"\"subject\" ((\"Zoe\" NIL \"zoe\" \"example.com\")) NIL NIL ((NIL NIL \"a\" \"b.c\")) NIL NIL NIL \"<id@x>\") BODY[] {%d}\r\n%s)\r\n",
		len(body), len(body), body))
	b.SetBytes(int64(len(resp)))
	for b.Loop() {
		p := &parser{r: bufio.NewReader(bytes.NewReader(resp)), maxLiteral: 2 << 20}
		r, err := p.readResponse()
		if err != nil {
			b.Fatal(err)
		}
		if _, err := parseFetch(r.Fields[2].(List)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkParseEnvelopes parses 100 FETCH responses of envelopes only.
func BenchmarkParseEnvelopes(b *testing.B) {
	var buf bytes.Buffer
	for i := 1; i <= 100; i++ {
		fmt.Fprintf(&buf, "* %d FETCH (UID %d FLAGS () RFC822.SIZE 4242 ENVELOPE (\"Tue, 24 Nov 2026 08:00:00 +0000\" "+
			"\"=?utf-8?Q?Caf=C3=A9?= %d\" ((\"Zoe\" NIL \"zoe\" \"example.com\")) NIL NIL ((NIL NIL \"a\" \"b.c\")) NIL NIL NIL \"<id%d@x>\"))\r\n", i, i, i, i)
	}
	data := buf.Bytes()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		p := &parser{r: bufio.NewReader(bytes.NewReader(data)), maxLiteral: 1 << 20}
		for range 100 {
			r, err := p.readResponse()
			if err != nil {
				b.Fatal(err)
			}
			if _, err := parseFetch(r.Fields[2].(List)); err != nil {
				b.Fatal(err)
			}
		}
	}
}
