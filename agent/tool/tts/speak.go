// Package tts holds choir.tts.speak, the agent's voice (design §8.7 #5,
// §18.3, §21.3).
package tts

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path"
	"regexp"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"choir/agent/tool"
	"choir/agent/tool/webapi"
	"choir/internal/config"
	"choir/internal/elevenlabs"
)

// SendDir is where the audio is staged; choird delivers what is there with
// the agent's next reply or report and removes it (§19.5).
const SendDir = ".choirtmp/send"

// Speak is choir.tts.speak: ElevenLabs text-to-speech with the session's
// voice profile as the dynamic config holds it at the call (voice id,
// the TTS provider's endpoint and model, output format, every voice
// setting), the audio written to .choirtmp/send/ under choirtmp:X. A
// profile without output_format speaks Opus in Ogg (.ogg), which choird
// sends as a Telegram voice message. The only secret it gets is tts.
type Speak struct {
	llm     tool.LLMTool
	dynamic func() config.Dynamic
	http    *http.Client
	timeout time.Duration
	now     func() time.Time
}

var _ tool.Tool = (*Speak)(nil)

var speakParams = fmt.Sprintf(`{
  "type": "object",
  "properties": {
    "text": {"type": "string", "minLength": 1, "maxLength": %d, "description": "What to say, as it should be spoken (at most %d characters)."}
  },
  "required": ["text"],
  "additionalProperties": false
}`, elevenlabs.MaxTextLen, elevenlabs.MaxTextLen)

// NewSpeak returns choir.tts.speak reading the voice profile from dynamic
// per call. client nil means http.DefaultClient.
func NewSpeak(dynamic func() config.Dynamic, client *http.Client) *Speak {
	if client == nil {
		client = http.DefaultClient
	}
	return &Speak{
		llm: tool.LLMTool{
			Name: "choir.tts.speak",
			Description: "Say a text aloud in the agent's voice. The audio is sent to the user as a voice message " +
				"with your next reply; you do not attach it yourself.",
			Parameters: json.RawMessage(speakParams),
		},
		dynamic: dynamic, http: client, timeout: 90 * time.Second, now: time.Now,
	}
}

func (t *Speak) Name() string      { return t.llm.Name }
func (t *Speak) LLM() tool.LLMTool { return t.llm }
func (t *Speak) Runtime() tool.Runtime {
	return tool.Runtime{
		Timeout: 2 * time.Minute, Network: true, SecretResources: []string{tool.SecretTTS},
		Locks:      []tool.LockReq{{Key: "choirtmp", Mode: tool.Exclusive}},
		SideEffect: tool.SideEffectWrite, Version: "1", Exposure: tool.ExposeBoth,
	}
}

// Locks is choirtmp X (§8.7).
func (t *Speak) Locks(json.RawMessage) ([]tool.LockReq, error) {
	return []tool.LockReq{{Key: "choirtmp", Mode: tool.Exclusive}}, nil
}

// extensions names the file of each codec; choird sends .ogg as a voice
// message and the others as audio or documents.
var extensions = map[string]string{"opus": ".ogg", "mp3": ".mp3", "wav": ".wav", "pcm": ".pcm", "ulaw": ".ulaw", "alaw": ".alaw"}

// Execute speaks the text and stages the audio.
func (t *Speak) Execute(ctx context.Context, input json.RawMessage, env tool.Env) (tool.Result, error) {
	var in struct {
		Text string `json:"text"`
	}
	if err := json.Unmarshal(input, &in); err != nil {
		return tool.Result{}, tool.Errorf(tool.CodeInvalidInput, "%v", err)
	}
	if strings.TrimSpace(in.Text) == "" {
		return tool.Result{}, tool.Errorf(tool.CodeInvalidInput, "text is blank: give the words to say")
	}
	if !utf8.ValidString(in.Text) {
		return tool.Result{}, tool.Errorf(tool.CodeInvalidInput, "text is not valid UTF-8")
	}
	d := t.dynamic()
	vp, ok := d.VoiceProfiles[d.VoiceProfile]
	if d.VoiceProfile == "" || !ok {
		return tool.Result{}, tool.Errorf(tool.CodeSecretUnavailable,
			"no voice profile is bound in this session: the operator sets defaults.voice_profile in config.json or runs choirctl voice set")
	}
	provider, ok := d.TTS[vp.TTS]
	if !ok {
		return tool.Result{}, tool.Errorf(tool.CodeSecretUnavailable, "voice profile %q names the TTS provider %q, which config.json does not have", d.VoiceProfile, vp.TTS)
	}
	format := vp.OutputFormat
	if format == "" {
		format = config.DefaultOutputFormat
	}
	ext, ok := extensions[elevenlabs.Codec(format)]
	if !ok {
		return tool.Result{}, tool.Errorf(tool.CodeInvalidInput, "voice profile %q: output_format %q is not one choir can stage; want opus_48000_64 or mp3_44100_128", d.VoiceProfile, format)
	}
	c, err := elevenlabs.New(elevenlabs.Config{Endpoint: provider.Endpoint, APIKey: env.Secrets[tool.SecretTTS], HTTPClient: t.http, Timeout: t.timeout})
	if err != nil {
		return tool.Result{}, tool.Errorf(tool.CodeSecretUnavailable, "%v (config.json tts.%s)", err, vp.TTS)
	}
	s := vp.VoiceSettings
	audio, err := c.Speech(ctx, elevenlabs.SpeechRequest{
		VoiceID: vp.VoiceID, Text: in.Text, ModelID: provider.ModelID, OutputFormat: format,
		VoiceSettings: &elevenlabs.VoiceSettings{
			Stability: s.Stability, SimilarityBoost: s.SimilarityBoost, Style: s.Style, UseSpeakerBoost: s.UseSpeakerBoost, Speed: s.Speed,
		},
	})
	if err != nil {
		var ae *elevenlabs.APIError
		if !errors.As(err, &ae) {
			return tool.Result{}, err
		}
		r := webapi.Result("ElevenLabs", fmt.Sprintf("check the secret of config.json's tts.%s and voice_profiles.%s", vp.TTS, d.VoiceProfile), webapi.Failure{
			Status: ae.Status, Code: ae.Code, Message: ae.Error(), RetryAfter: ae.RetryAfter, Err: ae.Err,
			TooLarge: errors.Is(ae.Err, elevenlabs.ErrTooLarge), Auth: ae.Auth(), Quota: ae.Quota(), NotFound: ae.Code == "voice_not_found",
		})
		return r, nil
	}
	name := "speech-" + t.now().UTC().Format("20060102-150405") + "-" + shortID(env.CallID) + ext
	if err := stage(env.Workspace, name, audio.Data); err != nil {
		return tool.Result{}, err
	}
	file := SendDir + "/" + name
	deliveredAs, how := "voice message", "a Telegram voice message"
	if ext != ".ogg" {
		deliveredAs, how = "audio file", "an audio file (a voice message needs an opus_48000_* output_format in the voice profile)"
	}
	summary := fmt.Sprintf("spoke %d characters with voice profile %s into %s (%s, %d bytes). It goes to the user as %s "+
		"with your next reply or report, without your attaching it; do not call choir.tts.speak again for this text.",
		utf8.RuneCountInString(in.Text), d.VoiceProfile, file, format, len(audio.Data), how)
	return tool.Success(summary, map[string]any{
		"file": file, "format": format, "bytes": len(audio.Data), "voice_profile": d.VoiceProfile, "delivered_as": deliveredAs,
	}), nil
}

var unsafeRE = regexp.MustCompile(`[^A-Za-z0-9]+`)

// shortID is a file-name-safe fragment of the call id, or random hex.
func shortID(callID string) string {
	s := unsafeRE.ReplaceAllString(callID, "")
	if len(s) > 12 {
		s = s[len(s)-12:]
	}
	if s == "" {
		var b [6]byte
		rand.Read(b[:])
		s = hex.EncodeToString(b[:])
	}
	return s
}

// stage writes data to .choirtmp/send/name atomically (a temporary file in
// .choirtmp, renamed in), confined to the workspace (a symlink cannot lead
// it out), owned like .choirtmp/send so that choird and the workspace's
// owner can remove it.
func stage(workspace, name string, data []byte) error {
	root, err := os.OpenRoot(workspace)
	if err != nil {
		return tool.Errorf(tool.CodeIO, "open the workspace: %v", err)
	}
	defer root.Close()
	for _, dir := range []string{".choirtmp", SendDir} {
		if err := root.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return tool.PathErrorf(tool.CodeIO, dir, "create %s: %v", dir, err)
		}
	}
	dirInfo, err := root.Stat(SendDir)
	if err != nil || !dirInfo.IsDir() {
		return tool.PathErrorf(tool.CodeIO, SendDir, "%s is not a directory inside the workspace", SendDir)
	}
	tmp := path.Join(".choirtmp", "."+name+".tmp")
	f, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return tool.PathErrorf(tool.CodeIO, tmp, "create the audio file: %v", err)
	}
	if st, ok := dirInfo.Sys().(*syscall.Stat_t); ok {
		_ = f.Chown(int(st.Uid), int(st.Gid)) // best effort: when choir-agent runs as root
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = root.Rename(tmp, path.Join(SendDir, name))
	}
	if err != nil {
		root.Remove(tmp)
		return tool.PathErrorf(tool.CodeIO, SendDir+"/"+name, "write the audio file: %v", err)
	}
	return nil
}
