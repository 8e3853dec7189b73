package gateway_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"choir/choird/gateway"
	"choir/internal/rpc"
)

func TestInboundFiles(t *testing.T) {
	h := newHarness(t, nil)
	h.fc.bind("alice", "alpha")
	ws, _ := h.fc.WorkspacePath("alpha")

	doc := []byte("%PDF-1.7 quarterly numbers")
	mid := h.srv.InjectDocument(h.bot, aliceUser, "../../etc/q3 report.pdf", doc, "please summarise")
	photo := []byte("\xff\xd8\xff\xe0 jpeg bytes")
	pid := h.srv.InjectPhoto(h.bot, aliceUser, photo, "")
	voice := []byte("OggS opus bytes")
	vid := h.srv.InjectVoice(h.bot, aliceUser, voice, 3)
	msgs := h.fc.waitMessages(t, 3)

	for i, want := range []struct {
		path, text string
		data       []byte
	}{
		{fmt.Sprintf(".choirtmp/recv/%d-q3_report.pdf", mid), "please summarise", doc},
		{fmt.Sprintf(".choirtmp/recv/%d-photo.jpg", pid), "", photo},
		{fmt.Sprintf(".choirtmp/recv/%d-voice.ogg", vid), "", voice},
	} {
		m := msgs[i]
		if len(m.Attachments) != 1 || m.Attachments[0] != want.path || m.Text != want.text || m.From != "alice" {
			t.Errorf("message %d = %+v; want attachment %s, text %q", i, m, want.path, want.text)
			continue
		}
		got, err := os.ReadFile(filepath.Join(ws, want.path))
		if err != nil || !bytes.Equal(got, want.data) {
			t.Errorf("%s holds %q, %v; want %q", want.path, got, err, want.data)
		}
	}
}

func TestInboundFileLimits(t *testing.T) {
	h := newHarness(t, func(c *gateway.Config) { c.MaxFileSize = 10 })
	h.fc.bind("alice", "alpha")
	ws, _ := h.fc.WorkspacePath("alpha")
	before := len(h.srv.Sent(h.bot, aliceUser))
	h.srv.InjectDocument(h.bot, aliceUser, "big.bin", bytes.Repeat([]byte("x"), 11), "")
	got := h.srv.WaitSent(t, h.bot, aliceUser, before+1)[before].Text
	if !strings.Contains(got, "the limit is") {
		t.Errorf("oversized file answered %q", got)
	}
	if entries, _ := os.ReadDir(filepath.Join(ws, ".choirtmp", "recv")); len(entries) != 0 {
		t.Errorf("recv holds %v after a refused file", entries)
	}

	// A recv directory the agent replaced by a symlink out of the workspace
	// is not followed.
	outside := t.TempDir()
	os.MkdirAll(filepath.Join(ws, ".choirtmp"), 0o755)
	os.RemoveAll(filepath.Join(ws, ".choirtmp", "recv"))
	if err := os.Symlink(outside, filepath.Join(ws, ".choirtmp", "recv")); err != nil {
		t.Fatal(err)
	}
	before = len(h.srv.Sent(h.bot, aliceUser))
	h.srv.InjectDocument(h.bot, aliceUser, "a.txt", []byte("hi"), "")
	got = h.srv.WaitSent(t, h.bot, aliceUser, before+1)[before].Text
	if !strings.HasPrefix(got, "Could not receive the file") {
		t.Errorf("file into a symlinked recv answered %q", got)
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Errorf("the file escaped the workspace: %v", entries)
	}
	if n := len(h.fc.userMessages()); n != 0 {
		t.Errorf("%d messages forwarded; want none", n)
	}
}

func TestOutboundFiles(t *testing.T) {
	h := newHarness(t, nil)
	h.fc.bind("alice", "alpha")
	ws, _ := h.fc.WorkspacePath("alpha")
	send := filepath.Join(ws, ".choirtmp", "send")
	os.MkdirAll(send, 0o755)
	files := map[string][]byte{"report.pdf": []byte("%PDF report"), "chart.png": []byte("\x89PNG chart"), "hello.ogg": []byte("OggS hi"), "clip.mp4": []byte("mp4 clip")}
	for name, data := range files {
		os.WriteFile(filepath.Join(send, name), data, 0o644)
	}
	err := h.gw.Deliver(t.Context(), "alpha", "alice", rpc.DMSend{Kind: rpc.DMReply, Text: "here you go", Files: []string{
		".choirtmp/send/report.pdf", "/workspace/.choirtmp/send/chart.png", "./.choirtmp/send/hello.ogg", ".choirtmp/send/clip.mp4",
	}})
	if err != nil {
		t.Fatalf("Deliver(files) = %v", err)
	}
	sent := h.srv.Sent(h.bot, aliceUser)
	var methods []string
	for _, s := range sent {
		methods = append(methods, s.Method)
	}
	if want := "sendMessage sendDocument sendPhoto sendVoice sendVideo"; strings.Join(methods, " ") != want {
		t.Fatalf("sent %v; want %s", methods, want)
	}
	for _, s := range sent[1:] {
		if want := files[s.File.Name]; !bytes.Equal(s.File.Data, want) {
			t.Errorf("%s arrived as %q; want %q", s.File.Name, s.File.Data, want)
		}
	}
	if entries, _ := os.ReadDir(send); len(entries) != 0 {
		t.Errorf(".choirtmp/send after delivery holds %v; want it empty", entries)
	}
}

func TestOutboundFileRefusals(t *testing.T) {
	h := newHarness(t, nil)
	h.fc.bind("alice", "alpha")
	ws, _ := h.fc.WorkspacePath("alpha")
	send := filepath.Join(ws, ".choirtmp", "send")
	os.MkdirAll(send, 0o755)
	os.MkdirAll(filepath.Join(ws, ".choirtmp", "recv"), 0o755)
	os.WriteFile(filepath.Join(ws, ".choirtmp", "recv", "x.txt"), []byte("x"), 0o644)
	os.WriteFile(filepath.Join(send, "ok.txt"), []byte("fine"), 0o644)
	secret := filepath.Join(t.TempDir(), "secret.txt")
	os.WriteFile(secret, []byte("host secret"), 0o600)
	os.Symlink(secret, filepath.Join(send, "link.txt"))
	os.Symlink("../recv/x.txt", filepath.Join(send, "inside-link.txt"))

	for _, f := range []string{".choirtmp/recv/x.txt", ".choirtmp/send/../recv/x.txt", "/etc/passwd", ".choirtmp/send/link.txt",
		".choirtmp/send/inside-link.txt", ".choirtmp/send/", ".choirtmp/send/missing.txt", "../.choirtmp/send/ok.txt"} {
		err := h.gw.Deliver(t.Context(), "alpha", "alice", rpc.DMSend{Kind: rpc.DMReply, Text: "t", Files: []string{".choirtmp/send/ok.txt", f}})
		if err == nil {
			t.Errorf("Deliver(file %q) = nil; want a refusal", f)
		}
	}
	if sent := h.srv.Sent(h.bot, aliceUser); len(sent) != 0 {
		t.Errorf("sent %d messages; a refused DMSend must send nothing", len(sent))
	}
	if _, err := os.Stat(filepath.Join(send, "ok.txt")); err != nil {
		t.Errorf("ok.txt was removed by a refused DMSend: %v", err)
	}
}
