package redact

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"log/slog"
	"net/url"
	"strings"
	"sync"
	"testing"
)

const (
	llmKey = "sk-or-v1-9f8e7d6c5b4a3210fedcba"
	gitTok = "ghp_Zx81Qw72Er63Ty54"
	quoted = `pa"ss<w>&rd\x`
)

func testRedactor() *Redactor {
	return New(map[string]string{"llm-key": llmKey, "git-dev-token": gitTok, "email-creds": quoted, "short": "abc"})
}

func jsonInner(s string) string {
	b, _ := json.Marshal(s)
	return string(b[1 : len(b)-1])
}

func TestStringReplacesEachFormByItsMarker(t *testing.T) {
	r := testRedactor()
	basic := base64.StdEncoding.EncodeToString([]byte("alice:" + gitTok))
	cases := []struct {
		name, in, want string
	}{
		{"raw", "key=" + llmKey + ".", "key=[secret:llm-key]."},
		{"two secrets", llmKey + " and " + gitTok, "[secret:llm-key] and [secret:git-dev-token]"},
		{"JSON-escaped", `{"v":"` + jsonInner(quoted) + `"}`, `{"v":"[secret:email-creds]"}`},
		{"JSON-escaped twice", jsonInner(`{"v":"` + jsonInner(quoted) + `"}`), jsonInner(`{"v":"`) + "[secret:email-creds]" + jsonInner(`"}`)},
		{"URL query", "?p=" + url.QueryEscape(quoted), "?p=[secret:email-creds]"},
		{"hex", "dump " + hex.EncodeToString([]byte(llmKey)) + " end", "dump [secret:llm-key] end"},
		{"folded over lines", "key: " + llmKey[:10] + "\n" + llmKey[10:20] + "\r\n" + llmKey[20:], "key: [secret:llm-key]"},
		{"split by an escaped newline", `"` + llmKey[:12] + `\n` + llmKey[12:] + `"`, `"[secret:llm-key]"`},
		{"split by an indented line break", llmKey[:12] + "  \n\t   " + llmKey[12:] + "!", "[secret:llm-key]!"},
		{"split by a doubly escaped newline", llmKey[:5] + `\\n` + llmKey[5:], "[secret:llm-key]"},
		{"unchanged", "nothing to see here\nat all", "nothing to see here\nat all"},
		{"too short to redact", "abc abc", "abc abc"},
		{"a prefix alone stays", llmKey[:10], llmKey[:10]},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := r.String(c.in); got != c.want {
				t.Errorf("String(%q) = %q; want %q", c.in, got, c.want)
			}
		})
	}
	// HTTP Basic credentials: the base64 core of the token is gone.
	if got := r.String("Authorization: Basic " + basic); strings.Contains(got, base64Core(base64.StdEncoding, gitTok, len("alice:")%3)) {
		t.Errorf("String(Basic header) = %q; still holds the token's base64", got)
	} else if !strings.Contains(got, "[secret:git-dev-token]") {
		t.Errorf("String(Basic header) = %q; want the marker", got)
	}
}

func TestBase64AtEveryAlignment(t *testing.T) {
	r := New(map[string]string{"k": llmKey})
	for pad := 0; pad < 3; pad++ {
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding, base64.RawStdEncoding} {
			text := enc.EncodeToString([]byte(strings.Repeat("x", pad) + llmKey + "tail"))
			got := r.String(text)
			if !strings.Contains(got, "[secret:k]") {
				t.Errorf("pad %d: String(%q) = %q; want the marker", pad, text, got)
			}
		}
	}
}

func TestOverlappingSecretsAreBothNamed(t *testing.T) {
	r := New(map[string]string{"a": "abcdefgh", "b": "efghijkl"})
	if got, want := r.String("<abcdefghijkl>"), "<[secret:a][secret:b]>"; got != want {
		t.Errorf("String = %q; want %q (no part of either left)", got, want)
	}
}

func TestSetFollowsRefreshesAndKeepsRetiredValues(t *testing.T) {
	var r Redactor
	if got := r.String(llmKey); got != llmKey {
		t.Errorf("zero Redactor changed %q to %q", llmKey, got)
	}
	r.Set(map[string]string{"llm-key": llmKey})
	r.Set(map[string]string{"llm-key": "sk-rotated-0123456789"})
	got := r.String(llmKey + " " + "sk-rotated-0123456789")
	if want := "[secret:llm-key] [secret:llm-key]"; got != want {
		t.Errorf("after a rotation String = %q; want %q (old and new value)", got, want)
	}
	if r.Len() != 2 {
		t.Errorf("Len = %d; want 2", r.Len())
	}
}

func TestBytesAndJSONReturnTheInputWhenClean(t *testing.T) {
	r := testRedactor()
	in := []byte(`{"a":"clean"}`)
	if out := r.Bytes(in); &out[0] != &in[0] {
		t.Error("Bytes copied a clean input")
	}
	if out := r.JSON(in); &out[0] != &in[0] {
		t.Error("JSON copied a clean input")
	}
	if r.ContainsBytes(in) || !r.Contains("x"+gitTok) {
		t.Error("Contains is wrong")
	}
}

func TestJSONRedactsStringsAndNamesAndStaysValid(t *testing.T) {
	r := testRedactor()
	in := []byte(`{"z":[1.50,"` + llmKey + `",{"` + gitTok + `":"` + jsonInner(quoted) + `"}],"` + gitTok + `x":true}`)
	out := r.JSON(in)
	if !json.Valid(out) {
		t.Fatalf("JSON(%s) = %s; not valid JSON", in, out)
	}
	want := `{"[secret:git-dev-token]x":true,"z":[1.50,"[secret:llm-key]",{"[secret:git-dev-token]":"[secret:email-creds]"}]}`
	if string(out) != want {
		t.Errorf("JSON = %s; want %s", out, want)
	}
	if got := string(r.JSON([]byte(`not json ` + llmKey))); got != "not json [secret:llm-key]" {
		t.Errorf("JSON(not JSON) = %q", got)
	}
	dup := r.JSON([]byte(`{"` + llmKey + `":1,"[secret:llm-key]":2}`))
	var m map[string]int
	if err := json.Unmarshal(dup, &m); err != nil || len(m) != 2 {
		t.Errorf("JSON with colliding names = %s; want both members kept", dup)
	}
}

type creds struct{ User, Token string }

type stringer struct{}

func (stringer) String() string { return "tok " + gitTok }

func TestHandlerRedactsEveryPartOfARecord(t *testing.T) {
	var r Redactor
	var buf bytes.Buffer
	log := r.Logger(slog.New(slog.NewJSONHandler(&buf, nil)))
	early := log.With("preset", "k="+llmKey).WithGroup("g") // before the secret is known
	r.Set(map[string]string{"llm-key": llmKey, "git-dev-token": gitTok})
	early.Info("msg "+llmKey,
		"err", errors.New("auth failed for "+gitTok),
		"struct", creds{"bob", gitTok},
		"str", stringer{},
		"raw", json.RawMessage(`{"k":"`+llmKey+`"}`),
		"bytes", []byte(gitTok),
		slog.Group("grp", "inner", llmKey),
		llmKey, 1,
	)
	out := buf.String()
	if strings.Contains(out, llmKey) || strings.Contains(out, gitTok) {
		t.Errorf("log line holds a secret: %s", out)
	}
	for _, want := range []string{`"msg [secret:llm-key]"`, `"preset":"k=[secret:llm-key]"`, `"err":"auth failed for [secret:git-dev-token]"`,
		`"Token":"[secret:git-dev-token]"`, `"inner":"[secret:llm-key]"`, `"[secret:llm-key]":1`} {
		if !strings.Contains(out, want) {
			t.Errorf("log line lacks %s: %s", want, out)
		}
	}
	if !json.Valid(bytes.TrimSpace(buf.Bytes())) {
		t.Errorf("log line is not JSON: %s", out)
	}
}

func TestWriterRedactsEachWrite(t *testing.T) {
	r := testRedactor()
	var buf bytes.Buffer
	w := r.Writer(&buf)
	n, err := w.Write([]byte("a " + llmKey + "\n"))
	if err != nil || n != len("a "+llmKey+"\n") || buf.String() != "a [secret:llm-key]\n" {
		t.Errorf("Write = %d, %v, wrote %q", n, err, buf.String())
	}
}

func TestConcurrentSetAndScan(t *testing.T) {
	var r Redactor
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range 200 {
				if i == 0 {
					r.Set(map[string]string{"k": llmKey, "n": strings.Repeat("z", j%7+4)})
				}
				_ = r.String("x " + llmKey)
			}
		}()
	}
	wg.Wait()
	if got := r.String(llmKey); got != "[secret:k]" {
		t.Errorf("String after concurrent Sets = %q", got)
	}
}

// benchText is 1 MiB of tool output with no secret in it.
func benchText() []byte {
	line := "drwxr-xr-x  2 agent agent 4096 Jan  1 12:00 some/path/to/a/file_name.go   \n"
	return []byte(strings.Repeat(line, (1<<20)/len(line)+1)[:1<<20])
}

func benchRedactor(n int) *Redactor {
	s := map[string]string{}
	for i := range n {
		s["secret-"+string(rune('a'+i))] = hex.EncodeToString([]byte{byte(i), 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19})
	}
	return New(s)
}

func BenchmarkBytesClean1MiB10Secrets(b *testing.B) {
	r, text := benchRedactor(10), benchText()
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	for b.Loop() {
		r.Bytes(text)
	}
}

func BenchmarkBytesClean1MiB1Secret(b *testing.B) {
	r, text := benchRedactor(1), benchText()
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	for b.Loop() {
		r.Bytes(text)
	}
}

func BenchmarkBytes1MiB10SecretsWithLeaks(b *testing.B) {
	r, text := benchRedactor(10), benchText()
	v := hex.EncodeToString([]byte{3, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19})
	for i := 0; i+len(v) < len(text); i += 64 << 10 {
		copy(text[i:], v)
	}
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	for b.Loop() {
		r.Bytes(text)
	}
}

func BenchmarkJSONCleanEvent(b *testing.B) {
	r := benchRedactor(10)
	ev := []byte(`{"id":"call-17","output":{"status":"success","summary":"read 40 lines","content":"` + jsonInner(string(benchText()[:4096])) + `"},"status":"success","tool":"choir.fs.read"}`)
	b.SetBytes(int64(len(ev)))
	b.ReportAllocs()
	for b.Loop() {
		r.JSON(ev)
	}
}

func BenchmarkSet10Secrets(b *testing.B) {
	s := map[string]string{}
	for i := range 10 {
		s["secret-"+string(rune('a'+i))] = strings.Repeat(string(rune('A'+i)), 40)
	}
	b.ReportAllocs()
	for b.Loop() {
		New(s)
	}
}
