package jsonlimit

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"unicode/utf8"
)

func TestCheck(t *testing.T) {
	deep := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	for _, tc := range []struct {
		name string
		in   string
		max  int
		want error // nil: accepted
		at   string
	}{
		{"plain object", `{"a":[1,2,{"b":"c"}],"d":null}`, 0, nil, ""},
		{"64 levels", deep(64), 0, nil, ""},
		{"65 levels", deep(65), 0, ErrTooDeep, "line 1:65 (byte 64)"},
		{"limit of 2", `{"a":{"b":{}}}`, 2, ErrTooDeep, "line 1:11 (byte 10)"},
		{"brackets inside strings do not count", `["` + strings.Repeat("[{", 100) + `"]`, 0, nil, ""},
		{"escaped quote keeps the string open", `["\"` + strings.Repeat("[", 100) + `"]`, 0, nil, ""},
		{"escaped backslash closes nothing early", `["\\", ` + deep(70) + `]`, 0, ErrTooDeep, "line 1:71 (byte 70)"},
		{"closing brackets lower the depth", strings.Repeat(deep(60), 10), 0, nil, ""},
		{"multi-byte text", `{"é":"日本語 🎵"}`, 0, nil, ""},
		{"a valid surrogate pair", `"\ud83c\udfb5"`, 0, nil, ""},
		{"upper-case hex pair", `"\uD83C\uDFB5"`, 0, nil, ""},
		{"a literal backslash-u is no escape", `"\\ud800"`, 0, nil, ""},
		{"invalid byte in a string", "{\"a\":\"x\xffy\"}", 0, ErrInvalidUTF8, "line 1:8 (byte 7)"},
		{"invalid byte on a later line", "{\n  \"a\": \"é\xc3\"\n}", 0, ErrInvalidUTF8, "line 2:10 (byte 12)"},
		{"invalid byte outside strings", "[1,\xfe]", 0, ErrInvalidUTF8, "line 1:4 (byte 3)"},
		{"overlong encoding of NUL", "\"\xc0\x80\"", 0, ErrInvalidUTF8, "byte 1"},
		{"UTF-8-encoded surrogate", "\"\xed\xa0\x80\"", 0, ErrInvalidUTF8, "byte 1"},
		{"truncated sequence at the end", "\"\xe6\x97", 0, ErrInvalidUTF8, "byte 1"},
		{"lone high surrogate escape", `{"k":"a\ud800b"}`, 0, ErrInvalidUTF8, "line 1:8 (byte 7)"},
		{"high surrogate then a non-surrogate", `"\ud800\u0041"`, 0, ErrInvalidUTF8, "byte 1"},
		{"lone low surrogate escape", `"\udc00"`, 0, ErrInvalidUTF8, "byte 1"},
		{"high surrogate at the very end", `"\ud800`, 0, ErrInvalidUTF8, "byte 1"},
		{"invalid byte after a backslash", "\"\\\xff\"", 0, ErrInvalidUTF8, "byte 2"},
		{"a malformed escape is the decoder's", `"\u12"`, 0, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Check([]byte(tc.in), Limits{MaxDepth: tc.max})
			if tc.want == nil {
				if err != nil {
					t.Fatalf("Check(%q) = %v; want nil", tc.in, err)
				}
				return
			}
			var e *Error
			if !errors.Is(err, tc.want) || !errors.As(err, &e) {
				t.Fatalf("Check(%q) = %v; want %v", tc.in, err, tc.want)
			}
			if !strings.Contains(err.Error(), tc.at) {
				t.Errorf("Check(%q) = %q; want it to say where: %q", tc.in, err, tc.at)
			}
			if tc.want == ErrTooDeep {
				if want := "limit of"; !strings.Contains(err.Error(), want) {
					t.Errorf("Check(%q) = %q; want the limit named", tc.in, err)
				}
			}
		})
	}
}

func TestSizeLimit(t *testing.T) {
	doc := []byte(`{"a":"` + strings.Repeat("x", 2000) + `"}`)
	if err := Check(doc, Limits{MaxBytes: int64(len(doc))}); err != nil {
		t.Fatalf("Check at exactly the limit = %v; want nil", err)
	}
	err := Check(doc, Limits{MaxBytes: 1 << 10})
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "2008 bytes, over the limit of 1 KiB (1024 bytes)") {
		t.Fatalf("Check over the limit = %v; want ErrTooLarge naming size and limit", err)
	}
	// ReadAll stops one byte past the limit instead of reading everything.
	r := &countingReader{r: bytes.NewReader(bytes.Repeat([]byte(" "), 10<<20))}
	_, err = ReadAll(r, Limits{MaxBytes: 4096})
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "larger than the limit of 4 KiB") {
		t.Fatalf("ReadAll(10 MiB) = %v; want ErrTooLarge", err)
	}
	if r.n > 64<<10 {
		t.Errorf("ReadAll read %d bytes of a 10 MiB stream with a 4 KiB limit; want it to stop early", r.n)
	}
	got, err := ReadAll(strings.NewReader(`[1]`), Limits{MaxBytes: 3})
	if err != nil || string(got) != "[1]" {
		t.Fatalf("ReadAll([1]) = %q, %v", got, err)
	}
	if _, err := ReadAll(strings.NewReader(deepDoc(100)), Limits{MaxBytes: 1 << 10}); !errors.Is(err, ErrTooDeep) {
		t.Fatalf("ReadAll(100 deep) = %v; want ErrTooDeep", err)
	}
}

func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	ok := filepath.Join(dir, "ok.json")
	os.WriteFile(ok, []byte(`{"a":1}`), 0o644)
	if got, err := ReadFile(ok, Limits{MaxBytes: 100}); err != nil || string(got) != `{"a":1}` {
		t.Fatalf("ReadFile(ok) = %q, %v", got, err)
	}
	big := filepath.Join(dir, "big.json")
	os.WriteFile(big, bytes.Repeat([]byte(" "), 200), 0o644)
	if _, err := ReadFile(big, Limits{MaxBytes: 100}); !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "200 bytes, over the limit of 100 bytes") {
		t.Fatalf("ReadFile(200 bytes, limit 100) = %v; want ErrTooLarge with both sizes", err)
	}
	fifo := filepath.Join(dir, "fifo.json")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	// A FIFO with no writer would block a plain open forever.
	if _, err := ReadFile(fifo, Limits{MaxBytes: 100}); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Fatalf("ReadFile(fifo) = %v; want a refusal", err)
	}
	if _, err := ReadFile(dir, Limits{MaxBytes: 100}); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Fatalf("ReadFile(directory) = %v; want a refusal", err)
	}
}

type countingReader struct {
	r *bytes.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

func deepDoc(n int) string { return strings.Repeat(`{"a":`, n) + "1" + strings.Repeat("}", n) }

// TestTwoMillionLevels: a document nested two million levels deep is refused
// at its 65th bracket, without recursion.
func TestTwoMillionLevels(t *testing.T) {
	doc := bytes.Repeat([]byte("["), 2_000_000)
	err := Check(doc, Limits{MaxBytes: 4 << 20})
	var e *Error
	if !errors.As(err, &e) || e.Err != ErrTooDeep || e.Offset != 64 {
		t.Fatalf("Check(2M '[') = %v; want ErrTooDeep at byte 64", err)
	}
}

// FuzzCheck holds Check to what encoding/json does with the same bytes.
func FuzzCheck(f *testing.F) {
	for _, s := range []string{`{"a":[1,{"b":"c"}]}`, `"\ud83c\udfb5"`, `"\ud800"`, "\"\xff\"", `[[[[[[]]]]]]`, `{"a":"\\u"}`} {
		f.Add([]byte(s), 4)
	}
	f.Fuzz(func(t *testing.T, data []byte, max int) {
		max = 1 + (max&0xff)%16
		err := Check(data, Limits{MaxDepth: max})
		if err != nil {
			if _, ok := errors.AsType[*Error](err); !ok {
				t.Fatalf("Check error %T is not *Error", err)
			}
		}
		if !utf8.Valid(data) && err == nil {
			t.Fatalf("Check(%q) = nil on invalid UTF-8", data)
		}
		var v any
		if json.Unmarshal(data, &v) != nil {
			return
		}
		// Check reports the first fault: invalid UTF-8 before the level
		// that is too deep hides it.
		d := depth(v)
		if !errors.Is(err, ErrInvalidUTF8) && (d > max) != errors.Is(err, ErrTooDeep) {
			t.Fatalf("Check(%q, max %d) = %v; the value is %d deep", data, max, err, d)
		}
		if err == nil && containsReplacement(v) && !bytes.Contains(data, []byte("\uFFFD")) && !bytes.Contains(bytes.ToLower(data), []byte(`\ufffd`)) {
			t.Fatalf("Check(%q) = nil, but encoding/json decoded a replacement character the text does not hold", data)
		}
	})
}

func depth(v any) int {
	d := 0
	switch v := v.(type) {
	case map[string]any:
		for _, x := range v {
			d = max(d, depth(x))
		}
		return d + 1
	case []any:
		for _, x := range v {
			d = max(d, depth(x))
		}
		return d + 1
	}
	return 0
}

func containsReplacement(v any) bool {
	switch v := v.(type) {
	case string:
		return strings.ContainsRune(v, utf8.RuneError)
	case map[string]any:
		for k, x := range v {
			if containsReplacement(k) || containsReplacement(x) {
				return true
			}
		}
	case []any:
		for _, x := range v {
			if containsReplacement(x) {
				return true
			}
		}
	}
	return false
}

func BenchmarkCheck(b *testing.B) {
	doc := bytes.Repeat([]byte(`{"name":"café","list":[1,2,3],"nested":{"a":"\u00e9\ud83c\udfb5"}},`), 10000)
	doc = append(append([]byte("["), doc[:len(doc)-1]...), ']')
	b.SetBytes(int64(len(doc)))
	for b.Loop() {
		if err := Check(doc, Limits{}); err != nil {
			b.Fatal(err)
		}
	}
}
