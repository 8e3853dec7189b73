package gateway

import (
	"bytes"
	"fmt"
	"image"
	"image/png"
	"os"
	"strings"
	"testing"
	"time"

	"choir/choird/lease"
)

func TestSanitize(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"report.pdf", "report.pdf"},
		{"../../etc/passwd", "passwd"},
		{`C:\Users\me\notes.txt`, "notes.txt"},
		{".bashrc", "bashrc"},
		{"-rf", "rf"},
		{"..", "file"},
		{"", "file"},
		{"my file (1).txt", "my_file__1_.txt"},
		{"отчёт.pdf", "отчёт.pdf"},
		{"a\x00b;rm -rf.sh", "a_b_rm_-rf.sh"},
		{strings.Repeat("x", 300) + ".tar.gz", strings.Repeat("x", 117) + ".gz"},
		{strings.Repeat("é", 100) + ".txt", strings.Repeat("é", 58) + ".txt"},
	} {
		if got := sanitize(tc.in); got != tc.want {
			t.Errorf("sanitize(%q) = %q; want %q", tc.in, got, tc.want)
		}
	}
}

func TestSendName(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{".choirtmp/send/a.png", "a.png"},
		{"./.choirtmp/send/a.png", "a.png"},
		{"/workspace/.choirtmp/send/sub/a.png", "sub/a.png"},
		{".choirtmp/send/x/../a.png", "a.png"},
		{".choirtmp/send/../recv/a.png", ""},
		{".choirtmp/send", ""},
		{".choirtmp/send/", ""},
		{"/etc/passwd", ""},
		{"/workspace/../etc/passwd", ""},
		{"a.png", ""},
		{`.choirtmp/send/..\..\x`, ""},
	} {
		got, err := sendName(tc.in)
		if (err != nil) != (tc.want == "") || got != tc.want {
			t.Errorf("sendName(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}

func TestCallbackData(t *testing.T) {
	id := "0b7f7c0e-4f36-4c55-9a55-3f3f0e2d9d11"
	for _, approve := range []bool{true, false} {
		data := callbackData(id, approve)
		if len(data) > 64 {
			t.Errorf("callbackData() = %d bytes; want at most 64", len(data))
		}
		gotID, gotApprove, ok := parseCallback(data)
		if !ok || gotID != id || gotApprove != approve {
			t.Errorf("parseCallback(%q) = %q, %v, %v", data, gotID, gotApprove, ok)
		}
	}
	for _, bad := range []string{"", "ap:", "ap::y", "ap:x:maybe", "xx:id:y", "ap:id"} {
		if _, _, ok := parseCallback(bad); ok {
			t.Errorf("parseCallback(%q) ok; want refused", bad)
		}
	}
}

func TestParseOverrides(t *testing.T) {
	o, err := parseOverrides([]string{"workspace=w", "llm=m", "voice=v", "git_identity=g", "notion=n", "--email=e"})
	want := lease.Overrides{Workspace: "w", LLM: "m", VoiceProfile: "v", GitIdentity: "g", Notion: "n", Email: "e"}
	if err != nil || o != want {
		t.Errorf("parseOverrides() = %+v, %v; want %+v", o, err, want)
	}
	for _, bad := range [][]string{{"dm=x"}, {"colour=red"}, {"llm="}, {"llm"}} {
		if _, err := parseOverrides(bad); err == nil {
			t.Errorf("parseOverrides(%q) = nil; want an error", bad)
		}
	}
}

func TestBackoff(t *testing.T) {
	lo, hi := 100*time.Millisecond, time.Second
	for n := 1; n < 40; n++ {
		d := backoff(lo, hi, n)
		ceil := min(lo<<min(n-1, 20), hi)
		if d < ceil/2 || d > ceil {
			t.Errorf("backoff(%d) = %v; want within [%v, %v]", n, d, ceil/2, ceil)
		}
	}
}

// oggHead is the first page of an OGG stream whose first packet begins
// with codec ("OpusHead", "\x01vorbis").
func oggHead(codec string) []byte {
	h := []byte("OggS\x00\x02")
	h = append(h, make([]byte, 20)...) // granule, serial, sequence, CRC
	h = append(h, 1, 19)               // one segment of 19 bytes
	return append(h, append([]byte(codec), make([]byte, 19)...)[:19]...)
}

func pngHead(t testing.TB, w, h int) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := png.Encode(&buf, image.NewGray(image.Rect(0, 0, w, h))); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestMediaKind(t *testing.T) {
	photo := pngHead(t, 64, 48)
	for _, tc := range []struct {
		name string
		size int64
		head []byte
		want string
	}{
		{"a.PNG", 10, photo, kindPhoto},
		{"a.png", maxPhotoSize + 1, photo, kindDocument},
		{"wide.png", 10, pngHead(t, 2100, 100), kindDocument},
		{"tall.png", 10, pngHead(t, 10, 201), kindDocument},
		{"giant.png", 10, pngHead(t, 6000, 4001), kindDocument},
		{"fake.jpg", 10, []byte("\xff\xd8 not a jpeg"), kindDocument},
		{"speech.ogg", 1, oggHead("OpusHead"), kindVoice},
		{"speech.opus", 1, oggHead("OpusHead"), kindVoice},
		{"music.ogg", 1, oggHead("\x01vorbis"), kindDocument},
		{"notogg.ogg", 1, []byte("ID3 an mp3 really"), kindDocument},
		{"short.ogg", 1, []byte("OggS"), kindDocument},
		{"song.mp3", 1, nil, kindAudio},
		{"memo.M4A", 1, nil, kindAudio},
		{"a.mp4", 1, nil, kindVideo},
		{"a.pdf", 1, nil, kindDocument},
		{"noext", 1, nil, kindDocument},
	} {
		if got := mediaKind(tc.name, tc.size, tc.head); got != tc.want {
			t.Errorf("mediaKind(%q, %d) = %s; want %s", tc.name, tc.size, got, tc.want)
		}
	}
}

// BenchmarkCapRecv is the cost a received file pays to keep a full
// .choirtmp/recv/ (100 files) within its cap: list, sort, remove one.
func BenchmarkCapRecv(b *testing.B) {
	dir := b.TempDir()
	root, err := os.OpenRoot(dir)
	if err != nil {
		b.Fatal(err)
	}
	defer root.Close()
	for i := range DefaultRecvMaxFiles {
		root.WriteFile(fmt.Sprintf("old-%03d", i), []byte("x"), 0o644)
	}
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		name := fmt.Sprintf("new-%09d", i)
		root.WriteFile(name, []byte("x"), 0o644)
		if removed, err := capRecv(root, name, DefaultRecvMaxFiles, DefaultRecvMaxBytes); err != nil || len(removed) != 1 {
			b.Fatalf("capRecv = %v, %v; want one file removed", removed, err)
		}
	}
}

// BenchmarkMediaKind is the choice of method for a staged photo.
func BenchmarkMediaKind(b *testing.B) {
	head := pngHead(b, 1280, 720)
	for b.Loop() {
		if mediaKind("chart.png", int64(len(head)), head) != kindPhoto {
			b.Fatal("not a photo")
		}
	}
}
