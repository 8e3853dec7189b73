package imap

import (
	"bufio"
	"errors"
	"reflect"
	"strings"
	"testing"
)

func parse(s string, max int64) (*response, error) {
	p := &parser{r: bufio.NewReader(strings.NewReader(s)), maxLiteral: max}
	return p.readResponse()
}

func TestParseResponses(t *testing.T) {
	tests := []struct {
		in   string
		want response
	}{
		{"* OK [UIDVALIDITY 3857529045] UIDs valid\r\n", response{Kind: "*", Status: "OK", Code: "UIDVALIDITY 3857529045", Text: "UIDs valid"}},
		{"C001 NO [AUTHENTICATIONFAILED] Authentication failed.\r\n", response{Kind: "C001", Status: "NO", Code: "AUTHENTICATIONFAILED", Text: "Authentication failed."}},
		{"C002 BAD\r\n", response{Kind: "C002", Status: "BAD"}},
		{"* BYE server shutting down (really)\r\n", response{Kind: "*", Status: "BYE", Text: "server shutting down (really)"}},
		{"+ \r\n", response{Kind: "+"}},
		{"+ ready for \"literal\"\r\n", response{Kind: "+", Text: `ready for "literal"`}},
		{"* 23 EXISTS\r\n", response{Kind: "*", Fields: []any{"23", "EXISTS"}}},
		{"* SEARCH\r\n", response{Kind: "*", Fields: []any{"SEARCH"}}},
		{"* SEARCH 2 84 882\r\n", response{Kind: "*", Fields: []any{"SEARCH", "2", "84", "882"}}},
		{"* FLAGS (\\Answered \\Flagged \\Seen $Junk)\r\n", response{Kind: "*", Fields: []any{"FLAGS", List{`\Answered`, `\Flagged`, `\Seen`, "$Junk"}}}},
		{"* 1 FETCH (UID 7 FLAGS ())\r\n", response{Kind: "*", Fields: []any{"1", "FETCH", List{"UID", "7", "FLAGS", List(nil)}}}},
		{"* 1 FETCH (X \"a \\\"q\\\" \\\\ b\" Y NIL Z nil)\r\n", response{Kind: "*", Fields: []any{"1", "FETCH", List{"X", Quoted(`a "q" \ b`), "Y", nil, "Z", nil}}}},
		{"* 1 FETCH (A ((1 (2 (3))) NIL) B \"\")\r\n", response{Kind: "*", Fields: []any{"1", "FETCH", List{"A", List{List{"1", List{"2", List{"3"}}}, nil}, "B", Quoted("")}}}},
		{"* 1 FETCH (BODY[] {5}\r\nab\r\nc UID 9)\r\n", response{Kind: "*", Fields: []any{"1", "FETCH", List{"BODY[]", Literal("ab\r\nc"), "UID", "9"}}}},
		{"* 1 FETCH (BODY[HEADER.FIELDS (SUBJECT)] {0}\r\n)\r\n", response{Kind: "*", Fields: []any{"1", "FETCH", List{"BODY[HEADER.FIELDS (SUBJECT)]", Literal{}}}}},
		{"* 1 FETCH (ENVELOPE (NIL {3}\r\n(x) NIL NIL NIL NIL NIL NIL NIL NIL))\r\n", response{Kind: "*", Fields: []any{"1", "FETCH", List{"ENVELOPE", List{nil, Literal("(x)"), nil, nil, nil, nil, nil, nil, nil, nil}}}}},
		{"* 1 FETCH (UID 1)\n", response{Kind: "*", Fields: []any{"1", "FETCH", List{"UID", "1"}}}},
	}
	for _, tt := range tests {
		got, err := parse(tt.in, 100)
		if err != nil {
			t.Errorf("parse(%q) = %v", tt.in, err)
			continue
		}
		if !reflect.DeepEqual(*got, tt.want) {
			t.Errorf("parse(%q) = %#v\nwant %#v", tt.in, *got, tt.want)
		}
	}
}

// Hostile and broken responses end in an error, never a hang or a panic.
func TestParseRefusals(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"literal over the cap", "* 1 FETCH (BODY[] {52428800}\r\n", "52428800 bytes, over the 100-byte limit"},
		{"literal length overflows", "* 1 FETCH (BODY[] {99999999999999999999999}\r\n", "bad literal length"},
		{"negative literal", "* 1 FETCH (BODY[] {-1}\r\n", "bad literal length"},
		{"literal cut short", "* 1 FETCH (BODY[] {50}\r\nabc", "unexpected EOF"},
		{"unclosed list", "* 1 FETCH (UID 1\r\n", "not closed"},
		{"line break in quoted", "* 1 FETCH (X \"ab\r\n", "line break inside a quoted string"},
		{"too deep", "* 1 FETCH " + strings.Repeat("(", 40) + "\r\n", "nested deeper"},
		{"endless line", "* 1 FETCH (X " + strings.Repeat("a", MaxLine+10), "longer than"},
		{"bad tagged status", "C001 MAYBE\r\n", "want OK, NO or BAD"},
		{"eof mid line", "* 1 FE", "unexpected EOF"},
		{"no tag", " OK\r\n", "without a tag"},
		{"stray paren", "* 1 FETCH )\r\n", "unexpected"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parse(tt.in, 100)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("parse = %v; want an error with %q", err, tt.want)
			}
		})
	}
	_, err := parse("* 1 FETCH (BODY[] {52428800}\r\n", 100)
	var tl *TooLargeError
	if !errors.As(err, &tl) || tl.Size != 52428800 {
		t.Errorf("over-cap literal = %v; want *TooLargeError", err)
	}
}

func FuzzParse(f *testing.F) {
	f.Add("* 1 FETCH (UID 7 ENVELOPE (\"d\" {3}\r\nabc ((NIL NIL \"a\" \"b\")) NIL NIL NIL NIL NIL NIL NIL))\r\n")
	f.Add("* OK [CAPABILITY IMAP4rev1] hi\r\n")
	f.Fuzz(func(t *testing.T, s string) {
		r, err := parse(s, 1<<10)
		if err == nil && r.Kind == "*" && len(r.Fields) == 3 {
			if l, ok := r.Fields[2].(List); ok {
				parseFetch(l)
			}
		}
	})
}
