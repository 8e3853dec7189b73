package tts_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"choir/agent/tool"
	"choir/agent/tool/tts"
	"choir/internal/config"
	"choir/testkit/elevenlabstest"
)

const xiKey = "xi-tool-Key-5Rt"

type rig struct {
	fake  *elevenlabstest.Server
	reg   *tool.Registry
	dyn   config.Dynamic
	ws    string
	asked []string
}

func newRig(t *testing.T, format string) *rig {
	t.Helper()
	r := &rig{fake: elevenlabstest.New(t, xiKey), ws: t.TempDir()}
	r.fake.AddVoice("EXAVITQu4vr4xnSDxMaL")
	r.dyn = config.Dynamic{
		VoiceProfile: "warm",
		TTS:          map[string]config.TTS{"eleven": {Provider: "elevenlabs", ModelID: "eleven_multilingual_v2", Endpoint: r.fake.URL(), Secret: "xi-key"}},
		VoiceProfiles: map[string]config.VoiceProfile{"warm": {
			TTS: "eleven", VoiceID: "EXAVITQu4vr4xnSDxMaL", OutputFormat: format,
			VoiceSettings: config.VoiceSettings{Stability: 0.35, SimilarityBoost: 0.9, Style: 0.2, UseSpeakerBoost: true, Speed: 1.15},
		}},
	}
	reg, err := tool.Load([]tool.Tool{tts.NewSpeak(func() config.Dynamic { return r.dyn }, nil)}, "", "")
	if err != nil {
		t.Fatal(err)
	}
	r.reg = reg
	return r
}

func (r *rig) call(t *testing.T, input string) map[string]any {
	t.Helper()
	var res tool.Result
	c, err := r.reg.Prepare("choir.tts.speak", json.RawMessage(input))
	if err != nil {
		res = tool.ErrorResult(err)
	} else {
		if !slices.Equal(c.Locks, []tool.LockReq{{Key: "choirtmp", Mode: "X"}}) {
			t.Errorf("locks = %v; want choirtmp X", c.Locks)
		}
		res = c.Run(context.Background(), tool.Invocation{Workspace: r.ws, CallID: "call_9f8e7d", Secrets: func(kind string) (string, error) {
			r.asked = append(r.asked, kind)
			if kind == tool.SecretTTS {
				return xiKey, nil
			}
			return "other-" + kind, nil
		}})
	}
	raw, _ := json.Marshal(res)
	var m map[string]any
	json.Unmarshal(raw, &m)
	return m
}

func (r *rig) staged(t *testing.T) []string {
	t.Helper()
	entries, _ := os.ReadDir(filepath.Join(r.ws, ".choirtmp", "send"))
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

func errCode(m map[string]any) string {
	e, _ := m["error"].(map[string]any)
	s, _ := e["code"].(string)
	return s
}

func TestSpeakWithoutOutputFormatStagesOggOpusForAVoiceMessage(t *testing.T) {
	r := newRig(t, "") // the profile names no output_format
	m := r.call(t, `{"text":"Good morning! Your train leaves at 9."}`)
	if m["status"] != "success" {
		t.Fatalf("speak = %v", m)
	}
	file, _ := m["file"].(string)
	if !strings.HasPrefix(file, ".choirtmp/send/speech-") || !strings.HasSuffix(file, ".ogg") || m["format"] != "opus_48000_64" || m["delivered_as"] != "voice message" {
		t.Errorf("speak = %v; want an .ogg under .choirtmp/send/ in opus_48000_64, delivered as a voice message", m)
	}
	if s := m["summary"].(string); !strings.Contains(s, "voice message") || !strings.Contains(s, "next reply") {
		t.Errorf("summary %q; want it to tell the model the audio goes out as a voice message with its next reply", s)
	}
	data, err := os.ReadFile(filepath.Join(r.ws, file))
	if err != nil || !bytes.HasPrefix(data, []byte("OggS")) || float64(len(data)) != m["bytes"] {
		t.Errorf("staged file: %v, starts %q; want Ogg audio of the reported size", err, data[:min(len(data), 8)])
	}
	if names := r.staged(t); len(names) != 1 {
		t.Errorf(".choirtmp/send holds %v; want only the audio (no temporary file)", names)
	}
	if tmp, _ := filepath.Glob(filepath.Join(r.ws, ".choirtmp", ".*.tmp")); len(tmp) != 0 {
		t.Errorf("temporary files left: %v", tmp)
	}

	req := r.fake.Requests()[0]
	if req.VoiceID != "EXAVITQu4vr4xnSDxMaL" || req.OutputFormat != "opus_48000_64" || req.ModelID() != "eleven_multilingual_v2" ||
		req.Text() != "Good morning! Your train leaves at 9." || req.Key != xiKey {
		t.Errorf("ElevenLabs was asked %+v", req)
	}
	vs := req.VoiceSettings()
	want := map[string]string{"stability": "0.35", "similarity_boost": "0.9", "style": "0.2", "speed": "1.15"}
	for k, v := range want {
		if n, ok := vs[k].(json.Number); !ok || n.String() != v {
			t.Errorf("voice_settings.%s = %v; want %s from the profile", k, vs[k], v)
		}
	}
	if vs["use_speaker_boost"] != true {
		t.Errorf("voice_settings.use_speaker_boost = %v; want true from the profile", vs["use_speaker_boost"])
	}
	if !slices.Equal(r.asked, []string{tool.SecretTTS}) {
		t.Errorf("secrets asked %v; want only tts", r.asked)
	}
}

func TestSpeakFollowsTheProfileAtEachCall(t *testing.T) {
	r := newRig(t, "mp3_44100_128")
	m := r.call(t, `{"text":"one"}`)
	if f, _ := m["file"].(string); !strings.HasSuffix(f, ".mp3") || m["delivered_as"] != "audio file" || !strings.Contains(m["summary"].(string), "opus_48000") {
		t.Errorf("speak with an mp3 profile = %v; want an .mp3 sent as an audio file, the summary saying how to get a voice message", m)
	}
	// voice set / a config apply changes the profile: the next call uses it.
	vp := r.dyn.VoiceProfiles["warm"]
	vp.OutputFormat, vp.VoiceSettings.Speed = "opus_48000_128", 0.8
	r.dyn.VoiceProfiles["warm"] = vp
	m = r.call(t, `{"text":"two"}`)
	req := r.fake.Requests()[1]
	if f, _ := m["file"].(string); !strings.HasSuffix(f, ".ogg") || req.OutputFormat != "opus_48000_128" || req.VoiceSettings()["speed"].(json.Number).String() != "0.8" {
		t.Errorf("speak after the profile changed = %v, asked %+v", m, req)
	}
	if names := r.staged(t); len(names) != 2 {
		t.Errorf(".choirtmp/send holds %v; want both files (names never collide)", names)
	}
}

func TestSpeakRefusesBadInputAndReportsFailures(t *testing.T) {
	r := newRig(t, "")
	for _, in := range []string{`{}`, `{"text":""}`, `{"text":"  \n "}`, `{"text":"` + strings.Repeat("a", 5001) + `"}`, `{"text":"x","voice":"other"}`, `[]`} {
		if m := r.call(t, in); errCode(m) != tool.CodeInvalidInput {
			t.Errorf("speak %.40s = %v; want invalid_input", in, m)
		}
	}
	if n := len(r.fake.Requests()); n != 0 {
		t.Errorf("%d requests reached ElevenLabs; want none", n)
	}

	r.fake.FailNext(1, elevenlabstest.QuotaExceeded())
	if m := r.call(t, `{"text":"x"}`); errCode(m) != "quota_exceeded" {
		t.Errorf("quota spent = %v; want quota_exceeded", m)
	}
	r.fake.FailNext(1, elevenlabstest.RateLimited(6))
	if m := r.call(t, `{"text":"x"}`); errCode(m) != "rate_limited" || m["retry_after_s"] != float64(6) {
		t.Errorf("rate limited = %v; want rate_limited after 6 s", m)
	}
	r.fake.FailNext(1, elevenlabstest.Unauthorized())
	if m := r.call(t, `{"text":"x"}`); errCode(m) != "auth_failed" || !strings.Contains(m["summary"].(string), "tts.eleven") || strings.Contains(m["summary"].(string), xiKey) {
		t.Errorf("revoked key = %v; want auth_failed naming tts.eleven, never the key", m)
	}
	r.fake.FailNext(1, elevenlabstest.Malformed())
	if m := r.call(t, `{"text":"x"}`); errCode(m) != "bad_answer" {
		t.Errorf("HTML instead of audio = %v; want bad_answer", m)
	}
	vp := r.dyn.VoiceProfiles["warm"]
	vp.VoiceID = "deleted-voice"
	r.dyn.VoiceProfiles["warm"] = vp
	if m := r.call(t, `{"text":"x"}`); errCode(m) != "not_found" || !strings.Contains(m["summary"].(string), "voice_id") {
		t.Errorf("unknown voice = %v; want not_found about voice_id", m)
	}
	if names := r.staged(t); len(names) != 0 {
		t.Errorf("failed calls staged %v; want nothing", names)
	}

	r.dyn.VoiceProfile = ""
	if m := r.call(t, `{"text":"x"}`); errCode(m) != tool.CodeSecretUnavailable {
		t.Errorf("no voice profile = %v; want secret_unavailable", m)
	}
}

func TestSpeakStaysInsideTheWorkspace(t *testing.T) {
	r := newRig(t, "")
	outside := t.TempDir()
	os.MkdirAll(filepath.Join(r.ws, ".choirtmp"), 0o755)
	if err := os.Symlink(outside, filepath.Join(r.ws, ".choirtmp", "send")); err != nil {
		t.Fatal(err)
	}
	m := r.call(t, `{"text":"hello"}`)
	if errCode(m) != tool.CodeIO {
		t.Errorf("speak with .choirtmp/send a symlink out = %v; want io_error", m)
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Errorf("the audio landed outside the workspace: %v", entries)
	}
}
