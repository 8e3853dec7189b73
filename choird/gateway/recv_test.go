package gateway_test

import (
	"bytes"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"choir/choird/gateway"
	"choir/internal/openai"
	"choir/internal/rpc"
	"choir/testkit/openaitest"
)

// withTranscriber configures the gateway with the fake transcription
// endpoint, as choird does from config.json's "transcription".
func withTranscriber(t *testing.T, timeout time.Duration) (*openaitest.Transcriber, func(*gateway.Config)) {
	t.Helper()
	s := openaitest.NewTranscriber(t)
	s.SetKey("sk-stt-Secret-41")
	c, err := openai.New(openai.Config{Endpoint: s.URL(), APIKey: "sk-stt-Secret-41"})
	if err != nil {
		t.Fatal(err)
	}
	return s, func(cfg *gateway.Config) {
		cfg.Transcriber = gateway.OpenAITranscriber{Client: c, Model: "whisper-1", Language: "en"}
		cfg.TranscribeTimeout = timeout
	}
}

func TestVoiceNoteTranscribed(t *testing.T) {
	stt, tweak := withTranscriber(t, time.Minute)
	h := newHarness(t, tweak)
	h.fc.bind("alice", "alpha")
	ws, _ := h.fc.WorkspacePath("alpha")
	stt.Answer(openaitest.TranscriptText("remind me to call Bob at five"), openaitest.TranscriptText("and this is the podcast"))

	voice := oggOpus(3000)
	vid := h.srv.InjectVoice(h.bot, aliceUser, voice, 4)
	m := h.fc.waitMessages(t, 1)[0]
	path := fmt.Sprintf(".choirtmp/recv/%d-voice.ogg", vid)
	if m.Text != "remind me to call Bob at five" || len(m.Attachments) != 1 || m.Attachments[0] != path {
		t.Fatalf("message = %+v; want the transcript as text and %s attached", m, path)
	}
	if got, _ := os.ReadFile(filepath.Join(ws, path)); !bytes.Equal(got, voice) {
		t.Errorf("%s holds %d bytes; want the voice note", path, len(got))
	}
	tr := stt.Transcriptions()[0]
	if !bytes.Equal(tr.Audio, voice) || tr.Model != "whisper-1" || tr.Language != "en" || tr.FileName != fmt.Sprintf("%d-voice.ogg", vid) || tr.FileType != "audio/ogg" {
		t.Errorf("transcription request = model %q language %q file %q (%s, intact %v)", tr.Model, tr.Language, tr.FileName, tr.FileType, bytes.Equal(tr.Audio, voice))
	}

	// An audio file is transcribed too, its caption first.
	h.srv.InjectAudio(h.bot, aliceUser, "episode 12.mp3", []byte("ID3 podcast"), 60)
	if m := h.fc.waitMessages(t, 2)[1]; m.Text != "and this is the podcast" || !strings.HasSuffix(m.Attachments[0], "-episode_12.mp3") {
		t.Errorf("audio message = %+v", m)
	}
	// A document is a file, never transcribed, even an audio one.
	h.srv.InjectDocument(h.bot, aliceUser, "memo.ogg", voice, "the memo")
	if m := h.fc.waitMessages(t, 3)[2]; m.Text != "the memo" {
		t.Errorf("document message text = %q; want its caption only", m.Text)
	}
	if n := len(stt.Transcriptions()); n != 2 {
		t.Errorf("%d transcriptions; want 2", n)
	}
	if sent := h.srv.Sent(h.bot, aliceUser); len(sent) != 0 {
		t.Errorf("the user was sent %v; a transcription that worked needs no word", h.srv.Texts(h.bot, aliceUser))
	}
}

// TestFailedTranscriptionDeliversTheFile: whatever goes wrong with the
// endpoint, the voice note reaches the agent as a file, the agent reads why
// there is no text, and the user is told.
func TestFailedTranscriptionDeliversTheFile(t *testing.T) {
	for _, tc := range []struct {
		name   string
		answer openaitest.TranscriptAnswer
		want   string
	}{
		{"unauthorized", openaitest.TranscriptStatus(http.StatusUnauthorized), "authentication failed"},
		{"rate limited", openaitest.TranscriptStatus(http.StatusTooManyRequests), "rate limited"},
		{"server error", openaitest.TranscriptStatus(http.StatusBadGateway), "server error"},
		{"malformed", openaitest.TranscriptRaw(http.StatusOK, `{"txt":`), "malformed answer"},
		{"silence", openaitest.TranscriptText("   "), "no speech was recognised"},
		{"slow", openaitest.TranscriptHang(), "timeout"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stt, tweak := withTranscriber(t, 300*time.Millisecond)
			h := newHarness(t, tweak)
			h.fc.bind("alice", "alpha")
			stt.Answer(tc.answer)
			vid := h.srv.InjectVoice(h.bot, aliceUser, oggOpus(100), 2)
			m := h.fc.waitMessages(t, 1)[0]
			if len(m.Attachments) != 1 || m.Attachments[0] != fmt.Sprintf(".choirtmp/recv/%d-voice.ogg", vid) {
				t.Fatalf("message = %+v; want the voice note attached", m)
			}
			if !strings.Contains(m.Text, "could not transcribe this voice note") || !strings.Contains(m.Text, tc.want) || !strings.Contains(m.Text, "the audio is attached") {
				t.Errorf("agent's text = %q; want it told the transcription failed (%s)", m.Text, tc.want)
			}
			told := h.srv.WaitSent(t, h.bot, aliceUser, 1)[0].Text
			if !strings.HasPrefix(told, "Could not transcribe that (") || !strings.Contains(told, tc.want) || !strings.Contains(told, "alpha gets the audio as a file") {
				t.Errorf("user told %q", told)
			}
			if strings.Contains(told+m.Text, "sk-stt-Secret-41") {
				t.Error("the transcription key reached a message")
			}
		})
	}
}

// TestReceivedFilesRemovedAfterAcknowledgement: the agent's reply to the
// message (and the reports of the core jobs that reply started)
// acknowledges its files; only then are they removed.
func TestReceivedFilesRemovedAfterAcknowledgement(t *testing.T) {
	h := newHarness(t, nil)
	h.fc.bind("alice", "alpha")
	ws, _ := h.fc.WorkspacePath("alpha")
	exists := func(rel string) bool {
		_, err := os.Lstat(filepath.Join(ws, rel))
		return err == nil
	}
	reply := func(msg rpc.DMSend) {
		t.Helper()
		if err := h.gw.Deliver(t.Context(), "alpha", "alice", msg); err != nil {
			t.Fatalf("Deliver(%+v) = %v", msg, err)
		}
	}
	h.srv.InjectDocument(h.bot, aliceUser, "a.txt", []byte("a"), "")
	h.srv.InjectDocument(h.bot, aliceUser, "b.txt", []byte("b"), "")
	h.srv.InjectDocument(h.bot, aliceUser, "c.txt", []byte("c"), "")
	h.srv.InjectDocument(h.bot, aliceUser, "d.txt", []byte("d"), "")
	msgs := h.fc.waitMessages(t, 4)
	a, b, c, d := msgs[0], msgs[1], msgs[2], msgs[3]

	// A notice, or a reply to another message, acknowledges nothing.
	reply(rpc.DMSend{Kind: rpc.DMNotice, Text: "compacting"})
	reply(rpc.DMSend{Kind: rpc.DMReply, ReplyTo: "tg-work-1002-999999", Text: "?"})
	for _, m := range msgs {
		if !exists(m.Attachments[0]) {
			t.Fatalf("%s removed before its message was answered", m.Attachments[0])
		}
	}
	// A plain reply acknowledges at once.
	reply(rpc.DMSend{Kind: rpc.DMReply, ReplyTo: a.ID, Text: "got a"})
	if exists(a.Attachments[0]) || !exists(b.Attachments[0]) {
		t.Errorf("after the reply to a: a exists %v, b exists %v; want only a removed", exists(a.Attachments[0]), exists(b.Attachments[0]))
	}
	// A reply that started core jobs waits for each job's report.
	reply(rpc.DMSend{Kind: rpc.DMReply, ReplyTo: b.ID, Text: "working on b", Cores: []string{"job-1", "job-2"}})
	reply(rpc.DMSend{Kind: rpc.DMCoreReport, Core: "job-1", Text: "half done"})
	if !exists(b.Attachments[0]) {
		t.Error("b removed while job-2, started by its turn, may still read it")
	}
	reply(rpc.DMSend{Kind: rpc.DMCoreReport, Core: "job-2", Text: "done"})
	if exists(b.Attachments[0]) {
		t.Error("b kept after every core job of its turn reported")
	}
	// A job that reports before the reply naming it arrives counts.
	reply(rpc.DMSend{Kind: rpc.DMCoreReport, Core: "job-3", Text: "quick"})
	reply(rpc.DMSend{Kind: rpc.DMReply, ReplyTo: c.ID, Text: "c", Cores: []string{"job-3"}})
	if exists(c.Attachments[0]) {
		t.Error("c kept although job-3 reported before the reply")
	}
	// An error answer acknowledges too (the turn is over).
	reply(rpc.DMSend{Kind: rpc.DMError, ReplyTo: d.ID, Text: "Not answered."})
	if exists(d.Attachments[0]) {
		t.Error("d kept after the error answer to it")
	}
	// Another agent's reply never removes alpha's files.
	h.srv.InjectDocument(h.bot, aliceUser, "e.txt", []byte("e"), "")
	e := h.fc.waitMessages(t, 5)[4]
	h.fc.bind("bob", "beta")
	h.gw.Deliver(t.Context(), "beta", "bob", rpc.DMSend{Kind: rpc.DMReply, ReplyTo: e.ID, Text: "not mine"})
	if !exists(e.Attachments[0]) {
		t.Error("beta's reply removed alpha's file")
	}
}

func TestReceivedFilesCap(t *testing.T) {
	h := newHarness(t, func(c *gateway.Config) { c.RecvMaxFiles = 3; c.RecvMaxBytes = 1000 })
	h.fc.bind("alice", "alpha")
	ws, _ := h.fc.WorkspacePath("alpha")
	recv := filepath.Join(ws, ".choirtmp", "recv")
	count := func() int {
		entries, _ := os.ReadDir(recv)
		return len(entries)
	}
	var first string
	for i := range 5 {
		h.srv.InjectDocument(h.bot, aliceUser, fmt.Sprintf("n%d.txt", i), []byte("data"), "")
		m := h.fc.waitMessages(t, i+1)[i]
		if i == 0 {
			first = m.Attachments[0]
		}
		if i == 3 && !strings.Contains(m.Text, "[choird removed 1 older received file to keep .choirtmp/recv/ within 3 files and 1000 bytes: "+first+"]") {
			t.Errorf("message 4 text = %q; want the agent told which file made room", m.Text)
		}
		if n := count(); n > 3 {
			t.Fatalf("recv/ holds %d files after message %d; want at most 3", n, i+1)
		}
	}
	// The bytes cap: a file that needs every byte removes all the others.
	h.srv.InjectDocument(h.bot, aliceUser, "big.bin", bytes.Repeat([]byte("z"), 1000), "")
	m := h.fc.waitMessages(t, 6)[5]
	if n := count(); n != 1 || !strings.Contains(m.Text, "removed 3 older received files") {
		t.Errorf("after a 1000-byte file: %d files, text %q; want only it", n, m.Text)
	}
	// One over the cap by itself is refused, before it is downloaded.
	before := h.srv.CallCount(h.bot, "getFile")
	h.srv.InjectDocument(h.bot, aliceUser, "too-big.bin", bytes.Repeat([]byte("z"), 1001), "")
	told := h.srv.WaitSent(t, h.bot, aliceUser, 1)[0].Text
	if !strings.Contains(told, "the limit is 1000 bytes") {
		t.Errorf("user told %q", told)
	}
	if h.srv.CallCount(h.bot, "getFile") != before || count() != 1 {
		t.Errorf("the refused file was fetched or stored")
	}
}

// TestFloodedReceiveDirectory: an agent that filled recv/ with thousands
// of files, a directory and a symlink: a new file brings recv/ back under
// the cap, removing only regular files and following nothing.
func TestFloodedReceiveDirectory(t *testing.T) {
	h := newHarness(t, func(c *gateway.Config) { c.RecvMaxFiles = 10 })
	h.fc.bind("alice", "alpha")
	ws, _ := h.fc.WorkspacePath("alpha")
	recv := filepath.Join(ws, ".choirtmp", "recv")
	os.MkdirAll(filepath.Join(recv, "subdir"), 0o755)
	os.WriteFile(filepath.Join(recv, "subdir", "kept.txt"), []byte("k"), 0o644)
	outside := filepath.Join(t.TempDir(), "host.txt")
	os.WriteFile(outside, []byte("host"), 0o644)
	os.Symlink(outside, filepath.Join(recv, "link.txt"))
	old := time.Now().Add(-time.Hour)
	for i := range 3000 {
		p := filepath.Join(recv, fmt.Sprintf("flood-%04d", i))
		os.WriteFile(p, []byte("f"), 0o644)
		os.Chtimes(p, old, old)
	}
	h.srv.InjectDocument(h.bot, aliceUser, "real.pdf", []byte("%PDF"), "read this")
	m := h.fc.waitMessages(t, 1)[0]
	if !strings.HasPrefix(m.Text, "read this\n\n[choird removed 2991 older received files") || !strings.Contains(m.Text, "and 2986 more]") {
		t.Errorf("text = %.200q", m.Text)
	}
	if len(m.Text) > 2000 {
		t.Errorf("the note is %d bytes; want it short", len(m.Text))
	}
	regular := 0
	entries, _ := os.ReadDir(recv)
	for _, e := range entries {
		if e.Type().IsRegular() {
			regular++
		}
	}
	if regular != 10 {
		t.Errorf("recv/ holds %d regular files; want 10", regular)
	}
	if _, err := os.Stat(filepath.Join(ws, m.Attachments[0])); err != nil {
		t.Errorf("the new file was removed: %v", err)
	}
	if data, err := os.ReadFile(outside); err != nil || string(data) != "host" {
		t.Errorf("the symlink's target: %q, %v; want it untouched", data, err)
	}
	if _, err := os.Lstat(filepath.Join(recv, "link.txt")); err != nil {
		t.Errorf("the agent's symlink was removed: %v", err)
	}
	if _, err := os.Stat(filepath.Join(recv, "subdir", "kept.txt")); err != nil {
		t.Errorf("a file inside the agent's directory was removed: %v", err)
	}
}
