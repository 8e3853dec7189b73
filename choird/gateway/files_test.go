package gateway_test

import (
	"bytes"
	"fmt"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"choir/choird/gateway"
	"choir/internal/rpc"
	"choir/testkit/telegramtest"
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

// oggOpus is the start of an OGG stream holding Opus, as
// choir.tts.speak writes (ElevenLabs' opus_48000_*).
func oggOpus(n int) []byte {
	h := []byte("OggS\x00\x02")
	h = append(h, make([]byte, 20)...)
	h = append(h, 1, 19)
	h = append(h, append([]byte("OpusHead\x01\x01\x38\x01\x80\xbb"), make([]byte, 5)...)...)
	return append(h, bytes.Repeat([]byte{0x4f}, n)...)
}

func pngOf(t testing.TB, w, h int) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := png.Encode(&buf, image.NewGray(image.Rect(0, 0, w, h))); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// stage writes files into alpha's .choirtmp/send/ and returns the
// directory.
func (h *harness) stage(files map[string][]byte) string {
	h.t.Helper()
	h.fc.bind("alice", "alpha")
	ws, _ := h.fc.WorkspacePath("alpha")
	send := filepath.Join(ws, ".choirtmp", "send")
	os.MkdirAll(send, 0o755)
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(send, name), data, 0o644); err != nil {
			h.t.Fatal(err)
		}
	}
	return send
}

func methods(sent []telegramtest.Sent) string {
	var m []string
	for _, s := range sent {
		m = append(m, s.Method)
	}
	return strings.Join(m, " ")
}

func TestOutboundFiles(t *testing.T) {
	h := newHarness(t, nil)
	files := map[string][]byte{
		"report.pdf": []byte("%PDF report"), "chart.png": pngOf(t, 64, 48), "reply.ogg": oggOpus(2000),
		"song.mp3": []byte("ID3 tune"), "clip.mp4": []byte("mp4 clip"),
	}
	send := h.stage(files)
	msgID := h.srv.InjectText(h.bot, aliceUser, "send me everything")
	h.fc.waitMessages(t, 1)
	err := h.gw.Deliver(t.Context(), "alpha", "alice", rpc.DMSend{Kind: rpc.DMReply, ReplyTo: fmt.Sprintf("tg-work-%d-%d", aliceUser, msgID), Text: "here you go", Files: []string{
		".choirtmp/send/report.pdf", "/workspace/.choirtmp/send/chart.png", "./.choirtmp/send/reply.ogg", ".choirtmp/send/song.mp3", ".choirtmp/send/clip.mp4",
	}})
	if err != nil {
		t.Fatalf("Deliver(files) = %v", err)
	}
	sent := h.srv.Sent(h.bot, aliceUser)
	if got, want := methods(sent), "sendMessage sendDocument sendPhoto sendVoice sendAudio sendVideo"; got != want {
		t.Fatalf("sent %s; want %s", got, want)
	}
	if sent[0].ReplyTo != msgID {
		t.Errorf("the text answers message %d; want %d", sent[0].ReplyTo, msgID)
	}
	for _, s := range sent[1:] {
		f := s.File
		want := map[string]string{"document": "application/pdf", "photo": "image/png", "voice": "audio/ogg", "audio": "audio/mpeg", "video": "video/mp4"}[f.Field]
		if !bytes.Equal(f.Data, files[f.Name]) || f.ContentType != want {
			t.Errorf("%s %s arrived as %d bytes of %s (intact %v); want %d bytes of %s",
				s.Method, f.Name, len(f.Data), f.ContentType, bytes.Equal(f.Data, files[f.Name]), len(files[f.Name]), want)
		}
		if s.ReplyTo != 0 {
			t.Errorf("%s replies to %d; only the text replies", s.Method, s.ReplyTo)
		}
	}
	if entries, _ := os.ReadDir(send); len(entries) != 0 {
		t.Errorf(".choirtmp/send after delivery holds %v; want it empty", entries)
	}
}

// TestSpokenReplyGoesAsVoiceMessage: what choir.tts.speak writes, an OGG
// Opus file in .choirtmp/send/, reaches the user as a voice message; an
// OGG that is not Opus (music in Vorbis) goes as a document.
func TestSpokenReplyGoesAsVoiceMessage(t *testing.T) {
	h := newHarness(t, nil)
	vorbis := append([]byte("OggS\x00\x02"), make([]byte, 20)...)
	vorbis = append(vorbis, 1, 7)
	vorbis = append(vorbis, []byte("\x01vorbis")...)
	h.stage(map[string][]byte{"tts-1.ogg": oggOpus(500), "music.ogg": vorbis})
	if err := h.gw.Deliver(t.Context(), "alpha", "alice", rpc.DMSend{Kind: rpc.DMReply, Files: []string{".choirtmp/send/tts-1.ogg", ".choirtmp/send/music.ogg"}}); err != nil {
		t.Fatal(err)
	}
	sent := h.srv.Sent(h.bot, aliceUser)
	if got := methods(sent); got != "sendVoice sendDocument" {
		t.Fatalf("sent %s; want sendVoice (the Opus reply) sendDocument (the Vorbis music)", got)
	}
	if f := sent[0].File; f.Field != "voice" || f.Name != "tts-1.ogg" || f.ContentType != "audio/ogg" {
		t.Errorf("voice upload = %s %q %s", f.Field, f.Name, f.ContentType)
	}
}

func TestPhotoLimitsFallBackToDocument(t *testing.T) {
	h := newHarness(t, nil)
	big := pngOf(t, 64, 48)
	big = append(big, make([]byte, 10<<20)...) // trailing bytes: over 10 MB, still a PNG to decode
	h.stage(map[string][]byte{
		"ok.png": pngOf(t, 300, 200), "wide.png": pngOf(t, 2100, 100), "giant.png": pngOf(t, 6000, 4001),
		"heavy.png": big, "fake.jpg": []byte("\xff\xd8 not really"),
	})
	err := h.gw.Deliver(t.Context(), "alpha", "alice", rpc.DMSend{Kind: rpc.DMReply, Files: []string{
		".choirtmp/send/ok.png", ".choirtmp/send/wide.png", ".choirtmp/send/giant.png", ".choirtmp/send/heavy.png", ".choirtmp/send/fake.jpg",
	}})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := methods(h.srv.Sent(h.bot, aliceUser)), "sendPhoto sendDocument sendDocument sendDocument sendDocument"; got != want {
		t.Errorf("sent %s; want %s (only the photo within Telegram's limits as a photo)", got, want)
	}
	if n := h.srv.CallCount(h.bot, "sendPhoto"); n != 1 {
		t.Errorf("%d sendPhoto calls; want 1 (the others are known to be over the limits)", n)
	}
}

// TestRefusedMediaFallsBackToDocument: a photo Telegram refuses, or a
// voice note refused by the user's privacy settings, goes as a document.
func TestRefusedMediaFallsBackToDocument(t *testing.T) {
	h := newHarness(t, nil)
	send := h.stage(map[string][]byte{"a.png": pngOf(t, 30, 30), "b.ogg": oggOpus(100)})
	h.srv.FailNext(h.bot, "sendPhoto", 1, telegramtest.BadRequest("PHOTO_INVALID_DIMENSIONS"))
	h.srv.FailNext(h.bot, "sendVoice", 1, telegramtest.BadRequest("VOICE_MESSAGES_FORBIDDEN"))
	if err := h.gw.Deliver(t.Context(), "alpha", "alice", rpc.DMSend{Kind: rpc.DMReply, Files: []string{".choirtmp/send/a.png", ".choirtmp/send/b.ogg"}}); err != nil {
		t.Fatal(err)
	}
	sent := h.srv.Sent(h.bot, aliceUser)
	if got := methods(sent); got != "sendDocument sendDocument" {
		t.Fatalf("sent %s; want both as documents", got)
	}
	if sent[0].File.Name != "a.png" || sent[1].File.Name != "b.ogg" {
		t.Errorf("documents %q %q", sent[0].File.Name, sent[1].File.Name)
	}
	if entries, _ := os.ReadDir(send); len(entries) != 0 {
		t.Errorf("send/ holds %v; want it empty", entries)
	}
}

// TestFileTelegramRefusesIsRemovedAndTold: a file Telegram refuses even as
// a document does not block the agent's later messages.
func TestFileTelegramRefusesIsRemovedAndTold(t *testing.T) {
	h := newHarness(t, nil)
	send := h.stage(map[string][]byte{"bad.bin": []byte("x"), "good.txt": []byte("fine")})
	h.srv.FailNext(h.bot, "sendDocument", 1, telegramtest.BadRequest("file must be non-empty"))
	err := h.gw.Deliver(t.Context(), "alpha", "alice", rpc.DMSend{Kind: rpc.DMReply, Text: "two files", Files: []string{".choirtmp/send/bad.bin", ".choirtmp/send/good.txt"}})
	if err != nil {
		t.Fatalf("Deliver = %v; want the good file delivered and the refusal told", err)
	}
	sent := h.srv.Sent(h.bot, aliceUser)
	if got := methods(sent); got != "sendMessage sendDocument sendMessage" {
		t.Fatalf("sent %s", got)
	}
	if note := sent[2].Text; !strings.Contains(note, "bad.bin") || !strings.Contains(note, "Telegram refused it") || !strings.Contains(note, "file must be non-empty") {
		t.Errorf("notice = %q; want the file and Telegram's reason", note)
	}
	if entries, _ := os.ReadDir(send); len(entries) != 0 {
		t.Errorf("send/ holds %v; want it empty", entries)
	}
}

// TestFailedUploadStaysForTheNextMessage: a network or server failure is
// not the file's fault: it stays, and the next message delivers it.
func TestFailedUploadStaysForTheNextMessage(t *testing.T) {
	h := newHarness(t, nil)
	send := h.stage(map[string][]byte{"r.txt": []byte("report")})
	h.srv.FailNext(h.bot, "sendDocument", 1, telegramtest.ServerError(502))
	err := h.gw.Deliver(t.Context(), "alpha", "alice", rpc.DMSend{Kind: rpc.DMReply, Files: []string{".choirtmp/send/r.txt"}})
	if err == nil || !strings.Contains(err.Error(), "stays in .choirtmp/send/") {
		t.Fatalf("Deliver with a 502 = %v; want an error saying the file stays", err)
	}
	if _, err := os.Stat(filepath.Join(send, "r.txt")); err != nil {
		t.Fatalf("r.txt after a 502: %v; want it kept", err)
	}
	if err := h.gw.Deliver(t.Context(), "alpha", "alice", rpc.DMSend{Kind: rpc.DMReply, Files: []string{".choirtmp/send/r.txt"}}); err != nil {
		t.Fatal(err)
	}
	if files := h.srv.Files(h.bot, aliceUser); len(files) != 1 || string(files[0].Data) != "report" {
		t.Errorf("files = %+v; want the report once", files)
	}
}

func TestOutboundCaps(t *testing.T) {
	h := newHarness(t, func(c *gateway.Config) { c.SendMaxFiles = 3; c.SendMaxBytes = 100 })
	files := map[string][]byte{"big.txt": bytes.Repeat([]byte("y"), 95), "g.txt": []byte("0123456789")}
	names := []string{".choirtmp/send/huge.bin"}
	for i := range 5 {
		n := fmt.Sprintf("f%d.txt", i)
		files[n] = []byte("0123456789")
		names = append(names, ".choirtmp/send/"+n)
	}
	send := h.stage(files)
	// A file over Telegram's 50 MB, sparse: no disk is spent.
	huge, _ := os.Create(filepath.Join(send, "huge.bin"))
	huge.Truncate(50<<20 + 1)
	huge.Close()
	uploaded := func() []string {
		var got []string
		for _, s := range h.srv.Sent(h.bot, aliceUser) {
			if s.File != nil {
				got = append(got, s.File.Name)
			}
		}
		return got
	}
	lastText := func() string {
		sent := h.srv.Sent(h.bot, aliceUser)
		return sent[len(sent)-1].Text
	}

	// More files than one message may carry, and one too big for Telegram.
	if err := h.gw.Deliver(t.Context(), "alpha", "alice", rpc.DMSend{Kind: rpc.DMReply, Files: names}); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(uploaded(), " "); got != "f0.txt f1.txt f2.txt" {
		t.Errorf("uploaded %s; want the first 3 files within the cap", got)
	}
	note := lastText()
	for _, want := range []string{"3 files from the agent were not sent and have been removed", "huge.bin: it is 50.0 MB; Telegram takes at most 50.0 MB",
		"f3.txt: one message sends at most 3 files and 100 bytes", "f4.txt"} {
		if !strings.Contains(note, want) {
			t.Errorf("notice %q lacks %q", note, want)
		}
	}
	// More bytes than one message may carry.
	if err := h.gw.Deliver(t.Context(), "alpha", "alice", rpc.DMSend{Kind: rpc.DMReply, Files: []string{".choirtmp/send/big.txt", ".choirtmp/send/g.txt"}}); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(uploaded(), " "); got != "f0.txt f1.txt f2.txt big.txt" {
		t.Errorf("uploaded %s; want big.txt added, g.txt over the byte cap", got)
	}
	if note := lastText(); !strings.Contains(note, "1 file from the agent was not sent") || !strings.Contains(note, "g.txt") {
		t.Errorf("notice %q; want g.txt named", note)
	}
	if entries, _ := os.ReadDir(send); len(entries) != 0 {
		t.Errorf("send/ holds %d entries after delivery; want none", len(entries))
	}
}

// TestFloodedSendDirectory: an agent that staged thousands of files (and
// named them all, as its runtime does) sends only the cap's worth; the
// directory is empty afterwards and the user told once.
func TestFloodedSendDirectory(t *testing.T) {
	h := newHarness(t, nil)
	files := map[string][]byte{}
	var names []string
	for i := range 2000 {
		n := fmt.Sprintf("spam-%04d.txt", i)
		files[n] = []byte("x")
		names = append(names, ".choirtmp/send/"+n)
	}
	send := h.stage(files)
	if err := h.gw.Deliver(t.Context(), "alpha", "alice", rpc.DMSend{Kind: rpc.DMReply, Text: "lots", Files: names}); err != nil {
		t.Fatal(err)
	}
	sent := h.srv.Sent(h.bot, aliceUser)
	if n := h.srv.CallCount(h.bot, "sendDocument"); n != gateway.DefaultSendMaxFiles {
		t.Errorf("%d documents sent; want the cap, %d", n, gateway.DefaultSendMaxFiles)
	}
	note := sent[len(sent)-1].Text
	if !strings.Contains(note, fmt.Sprintf("%d files from the agent were not sent", 2000-gateway.DefaultSendMaxFiles)) || !strings.Contains(note, "and 1970 more") {
		t.Errorf("notice = %.300q", note)
	}
	if len(note) > 4096 {
		t.Errorf("notice is %d bytes; want one Telegram message", len(note))
	}
	if entries, _ := os.ReadDir(send); len(entries) != 0 {
		t.Errorf("send/ holds %d entries; want none", len(entries))
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

	for _, f := range []string{".choirtmp/recv/x.txt", ".choirtmp/send/ok.txt\x00../../x", ".choirtmp/send/" + strings.Repeat("a", 300),
		".choirtmp/send/../../../etc/shadow", "/workspace/../etc/passwd", "~/.ssh/id_rsa", ".choirtmp/send//../send/../../x", ".choirtmp/send/../recv/x.txt", "/etc/passwd", ".choirtmp/send/link.txt",
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

// TestSendDirectorySymlinkedOut: an agent that replaced .choirtmp/send by
// a link to a host directory cannot have choird send (or delete) what is
// there.
func TestSendDirectorySymlinkedOut(t *testing.T) {
	h := newHarness(t, nil)
	h.fc.bind("alice", "alpha")
	ws, _ := h.fc.WorkspacePath("alpha")
	outside := t.TempDir()
	os.WriteFile(filepath.Join(outside, "id_rsa"), []byte("host key"), 0o600)
	os.MkdirAll(filepath.Join(ws, ".choirtmp"), 0o755)
	if err := os.Symlink(outside, filepath.Join(ws, ".choirtmp", "send")); err != nil {
		t.Fatal(err)
	}
	err := h.gw.Deliver(t.Context(), "alpha", "alice", rpc.DMSend{Kind: rpc.DMReply, Text: "t", Files: []string{".choirtmp/send/id_rsa"}})
	if err == nil {
		t.Fatal("Deliver through a send/ linked out of the workspace = nil; want a refusal")
	}
	if n := len(h.srv.Files(h.bot, aliceUser)); n != 0 {
		t.Errorf("%d files uploaded; want none", n)
	}
	if _, err := os.Stat(filepath.Join(outside, "id_rsa")); err != nil {
		t.Errorf("the host file was touched: %v", err)
	}
}
