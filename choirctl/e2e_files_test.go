package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"choir/testkit"
	"choir/testkit/demomodel"
	"choir/testkit/dockertest"
	"choir/testkit/openaitest"
	"choir/testkit/telegramtest"
)

// sttSecret is the transcription endpoint's key: only choird holds it.
const sttSecret = "sk-stt-e2e-Key-7Qm"

// modelRecorder keeps every chat request the agent's model receives and
// hands it on to the offline model.
type modelRecorder struct {
	next http.Handler
	mu   sync.Mutex
	seen []string
}

func (m *modelRecorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 8<<20))
	m.mu.Lock()
	m.seen = append(m.seen, string(body))
	m.mu.Unlock()
	r.Body = io.NopCloser(bytes.NewReader(body))
	m.next.ServeHTTP(w, r)
}

// userMessages returns the content of every user message the model saw.
func (m *modelRecorder) userMessages() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for _, body := range m.seen {
		var req struct {
			Messages []struct {
				Role    string `json:"role"`
				Content any    `json:"content"`
			} `json:"messages"`
		}
		json.Unmarshal([]byte(body), &req)
		for _, msg := range req.Messages {
			if s, ok := msg.Content.(string); ok && msg.Role == "user" {
				out = append(out, s)
			}
		}
	}
	return out
}

// e2eOggOpus is the start of an OGG Opus stream, what choir.tts.speak
// writes to .choirtmp/send/.
func e2eOggOpus(n int) []byte {
	h := []byte("OggS\x00\x02")
	h = append(h, make([]byte, 20)...)
	h = append(h, 1, 19)
	h = append(h, append([]byte("OpusHead\x01\x01\x38\x01\x80\xbb"), make([]byte, 5)...)...)
	return append(h, bytes.Repeat([]byte{0x4f}, n)...)
}

// TestFilesBothWaysThroughTelegram: a voice note sent to the bot is
// transcribed by choird (the fake transcription endpoint answers), the
// agent's model (in a real container) sees the text and the stored audio's
// path, the audio is removed once the agent answered; the file the agent
// writes to .choirtmp/send/ reaches the fake Telegram as a document, a
// spoken reply staged as OGG Opus as a voice message, and both are then
// removed from the workspace.
func TestFilesBothWaysThroughTelegram(t *testing.T) {
	dc := dockertest.Engine(t)
	home := filepath.Join(t.TempDir(), "h")
	workspace := testkit.Workspace(t)
	ctlRun(t, home, "", "init")
	env := backends(t, home)
	agentConfig(t, home, workspace)

	ip := dockertest.BridgeIP(t)
	l, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		t.Fatal(err)
	}
	model := &modelRecorder{next: &demomodel.Server{}}
	srv := &http.Server{Handler: model}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	stt := openaitest.NewTranscriber(t)
	stt.SetKey(sttSecret)
	tg := telegramtest.New(t)
	tg.SetWaitTimeout(2 * time.Minute) // a turn in a container on a shared machine
	const admin = int64(4242)
	bot := tg.AddBot("778:tg-e2e-files-Token", "choir_files_bot")

	path := filepath.Join(home, "config.json")
	data, _ := os.ReadFile(path)
	var cfg map[string]any
	json.Unmarshal(data, &cfg)
	cfg["models"].(map[string]any)["m"] = map[string]any{"provider": "demo", "model": "demo", "endpoint": "http://" + l.Addr().String() + "/v1"}
	cfg["gateways"] = map[string]any{"bot": map[string]any{"type": "telegram", "secret": "tg", "api_base": tg.URL()}}
	cfg["dms"] = map[string]any{"dm1": map[string]any{"gateway": "bot", "user_id": "4242", "admin": true}}
	cfg["transcription"] = map[string]any{"endpoint": stt.URL(), "model": "whisper-1", "secret": "stt"}
	out, _ := json.MarshalIndent(cfg, "", "  ")
	os.WriteFile(path, out, 0o644)
	ctlRun(t, home, "", "secret", "set", "tg", "778:tg-e2e-files-Token")
	ctlRun(t, home, "", "secret", "set", "stt", sttSecret)
	dockertest.AgentImage(t, dc, "agent-1", "files1")
	d := startChoird(t, home, env)
	waitReady(t, home, d)
	tg.WaitPolling(t, bot)

	tg.InjectText(bot, admin, "/start agent-1")
	waitFor(t, "agent-1 to run", func() bool {
		out, _, _ := ctlRun(t, home, "", "agent", "status", "agent-1")
		return strings.Contains(out, "running")
	})
	// A spoken reply staged as choir.tts.speak stages it.
	send := filepath.Join(workspace, ".choirtmp", "send")
	spoken := e2eOggOpus(4000)
	if err := os.WriteFile(filepath.Join(send, "spoken-1.ogg"), spoken, 0o644); err != nil {
		t.Fatalf("stage the spoken reply: %v", err)
	}

	// The user speaks; choird transcribes.
	stt.Answer(openaitest.TranscriptText("please send the file minutes"))
	voice := e2eOggOpus(6000)
	vid := tg.InjectVoice(bot, admin, voice, 5)
	stored := fmt.Sprintf(".choirtmp/recv/%d-voice.ogg", vid)
	tr := stt.WaitTranscriptions(t, 1)[0]
	if tr.Model != "whisper-1" || tr.Auth != "Bearer "+sttSecret || !bytes.Equal(tr.Audio, voice) {
		t.Errorf("transcription request: model %q, key sent %v, audio intact %v", tr.Model, tr.Auth == "Bearer "+sttSecret, bytes.Equal(tr.Audio, voice))
	}

	// The agent writes minutes.txt to .choirtmp/send/; it goes out with
	// the reply, and so does the staged voice.
	tg.Wait(t, "the agent's files in the DM", func() bool {
		n := 0
		for _, s := range tg.Sent(bot, admin) {
			if s.File != nil {
				n++
			}
		}
		return n >= 2
	})
	var methods []string
	for _, s := range tg.Sent(bot, admin) {
		if s.File == nil {
			continue
		}
		methods = append(methods, s.Method+" "+s.File.Name)
		switch s.File.Name {
		case "minutes.txt":
			if s.Method != "sendDocument" || !strings.Contains(string(s.File.Data), "a file from the demo model: minutes") {
				t.Errorf("minutes.txt arrived by %s holding %q", s.Method, s.File.Data)
			}
		case "spoken-1.ogg":
			if s.Method != "sendVoice" || s.File.ContentType != "audio/ogg" || !bytes.Equal(s.File.Data, spoken) {
				t.Errorf("spoken-1.ogg arrived by %s as %s (intact %v); want a voice message", s.Method, s.File.ContentType, bytes.Equal(s.File.Data, spoken))
			}
		default:
			t.Errorf("unexpected file %s by %s", s.File.Name, s.Method)
		}
	}
	if len(methods) != 2 {
		t.Errorf("files sent: %v; want minutes.txt and spoken-1.ogg once each", methods)
	}

	// The model saw the transcript and where the audio is.
	saw := false
	for _, m := range model.userMessages() {
		if strings.Contains(m, "please send the file minutes") && strings.Contains(m, stored) {
			saw = true
		}
	}
	if !saw {
		t.Errorf("no user message to the model holds the transcript and %s: %q", stored, model.userMessages())
	}

	// Delivered files leave .choirtmp/send/; the acknowledged voice note
	// leaves .choirtmp/recv/.
	waitFor(t, "send/ to be emptied and the voice note removed", func() bool {
		entries, _ := os.ReadDir(send)
		_, err := os.Stat(filepath.Join(workspace, stored))
		return len(entries) == 0 && os.IsNotExist(err)
	})

	tg.InjectText(bot, admin, "/stop")
	waitFor(t, "agent-1 to stop", func() bool {
		out, _, _ := ctlRun(t, home, "", "agent", "status", "agent-1")
		return strings.Contains(out, "stopped")
	})
	if err := d.stop(t); err != nil {
		t.Errorf("choird stop = %v", err)
	}
	for _, dir := range []string{filepath.Join(home, "logs"), workspace} {
		filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
			if err == nil && info.Mode().IsRegular() {
				if b, _ := os.ReadFile(p); bytes.Contains(b, []byte(sttSecret)) {
					t.Errorf("%s holds the transcription key", p)
				}
			}
			return nil
		})
	}
	if strings.Contains(d.stderr.String(), sttSecret) {
		t.Error("choird's output holds the transcription key")
	}
}
