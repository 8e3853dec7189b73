package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"choir/testkit"
	"choir/testkit/bravetest"
	"choir/testkit/dockertest"
	"choir/testkit/elevenlabstest"
	"choir/testkit/notiontest"
	"choir/testkit/telegramtest"
)

// The world API tools end to end: a real agent in a real container, its
// model (below) calling choir.web.search, choir.notion.query and
// choir.tts.speak against fake Brave, Notion and ElevenLabs servers on the
// bridge gateway, the user talking to it in a Telegram DM.

// Distinctive values of the world API secrets.
const (
	worldBraveKey  = "BSA-world-Key-8Tz2"
	worldNotionKey = "secret_world-Notion-4Qe7"
	worldXiKey     = "xi-world-Key-6Yw1"
	worldTGToken   = "888:tg-world-Token"
	worldUser      = int64(5151)
)

// toolModel answers a user message holding "CALL <wire name> <JSON
// arguments>" with that one tool call (callerModel).
func toolModel() *callerModel {
	return &callerModel{call: func(text string) (string, string, bool) {
		i := strings.Index(text, "CALL ")
		if i < 0 {
			return "", "", false
		}
		name, args, _ := strings.Cut(strings.TrimSpace(text[i+len("CALL "):]), " ")
		return name, args, true
	}}
}

func TestWorldAPIToolsInAContainer(t *testing.T) {
	dc := dockertest.Engine(t)
	home := filepath.Join(t.TempDir(), "h")
	workspace := testkit.Workspace(t)
	ctlRun(t, home, "", "init")
	env := backends(t, home)
	agentConfig(t, home, workspace)

	// Everything the container calls listens on the bridge gateway.
	ip := dockertest.BridgeIP(t)
	brave := bravetest.NewOn(t, net.JoinHostPort(ip, "0"), worldBraveKey)
	brave.SetResults(
		bravetest.Result{Title: "Choir: agents you can trust", URL: "https://choir.example/", Description: "A daemon for personal agents", Age: "2 days ago"},
		bravetest.Result{Title: "Choir design", URL: "https://choir.example/design", Description: "How it works"},
	)
	wiki := notiontest.NewOn(t, net.JoinHostPort(ip, "0"), worldNotionKey)
	page := wiki.AddPage(notiontest.Page{Title: "Trip plan", Blocks: []notiontest.Block{
		notiontest.Heading(2, "Packing"), notiontest.ToDo("passport", true), notiontest.ToDo("charger", false),
	}})
	eleven := elevenlabstest.NewOn(t, net.JoinHostPort(ip, "0"), worldXiKey)
	eleven.AddVoice("EXAVITQu4vr4xnSDxMaL")
	l, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		t.Fatal(err)
	}
	model := &http.Server{Handler: toolModel()}
	go model.Serve(l)
	t.Cleanup(func() { model.Close() })

	tg := telegramtest.New(t)
	tg.SetWaitTimeout(2 * time.Minute)
	bot := tg.AddBot(worldTGToken, "choir_world_bot")

	path := filepath.Join(home, "config.json")
	data, _ := os.ReadFile(path)
	var cfg map[string]any
	json.Unmarshal(data, &cfg)
	cfg["models"].(map[string]any)["m"] = map[string]any{"provider": "test", "model": "tools", "endpoint": "http://" + l.Addr().String() + "/v1", "secret": "llm-key"}
	cfg["gateways"] = map[string]any{"bot": map[string]any{"type": "telegram", "secret": "tg", "api_base": tg.URL()}}
	cfg["dms"] = map[string]any{"dm1": map[string]any{"gateway": "bot", "user_id": fmt.Sprint(worldUser), "admin": true}}
	cfg["search"] = map[string]any{"brave": map[string]any{"endpoint": brave.URL(), "secret": "brave-key"}}
	cfg["notion_integrations"] = map[string]any{"wiki": map[string]any{"endpoint": wiki.URL(), "secret": "notion-key"}}
	cfg["tts"] = map[string]any{"eleven": map[string]any{"provider": "elevenlabs", "model_id": "eleven_multilingual_v2", "endpoint": eleven.URL(), "secret": "xi-key"}}
	// No output_format: the voice speaks Opus in Ogg, a Telegram voice message.
	cfg["voice_profiles"] = map[string]any{"warm": map[string]any{"tts": "eleven", "voice_id": "EXAVITQu4vr4xnSDxMaL",
		"voice_settings": map[string]any{"stability": 0.35, "similarity_boost": 0.9, "style": 0.2, "use_speaker_boost": true, "speed": 1.1}}}
	defaults := cfg["agents"].(map[string]any)["agent-1"].(map[string]any)["defaults"].(map[string]any)
	defaults["voice_profile"], defaults["notion"] = "warm", "wiki"
	out, _ := json.MarshalIndent(cfg, "", "  ")
	os.WriteFile(path, out, 0o644)
	for name, value := range map[string]string{"brave-key": worldBraveKey, "notion-key": worldNotionKey, "xi-key": worldXiKey, "tg": worldTGToken} {
		if _, stderr, code := ctlRun(t, home, "", "secret", "set", name, value); code != 0 {
			t.Fatalf("secret set %s = %d %s", name, code, stderr)
		}
	}
	dockertest.AgentImage(t, dc, "agent-1", "world1")
	d := startChoird(t, home, env)
	waitReady(t, home, d)
	tg.WaitPolling(t, bot)
	if out, stderr, code := ctlRun(t, home, "", "agent", "start", "agent-1", "--dm=dm1"); code != 0 {
		t.Fatalf("agent start = %d %q %q\nchoird: %s", code, out, stderr, d.stderr.String())
	}

	// ask sends a message in the DM and returns the agent's reply text.
	ask := func(what, msg string) string {
		t.Helper()
		before := len(tg.Texts(bot, worldUser))
		tg.InjectText(bot, worldUser, msg)
		tg.Wait(t, what, func() bool {
			texts := tg.Texts(bot, worldUser)
			return len(texts) > before && strings.Contains(strings.Join(texts[before:], "\n"), "result: ")
		})
		return strings.Join(tg.Texts(bot, worldUser)[before:], "\n")
	}

	// A web search: the user sees the results.
	reply := ask("the search results", `CALL choir_web_search {"query":"choir agents","count":2}`)
	for _, want := range []string{"Choir: agents you can trust", "https://choir.example/", "A daemon for personal agents", "2 days ago"} {
		if !strings.Contains(reply, want) {
			t.Errorf("search reply lacks %q:\n%s", want, reply)
		}
	}
	if reqs := brave.Requests(); len(reqs) != 1 || reqs[0].Token != worldBraveKey || reqs[0].Query.Get("q") != "choir agents" {
		t.Errorf("Brave received %+v; want one search with the bound key", reqs)
	}

	// A Notion page, named by its link: the user reads its text.
	link := "https://www.notion.so/Trip-plan-" + strings.ReplaceAll(page, "-", "")
	reply = ask("the Notion page", `CALL choir_notion_query {"mode":"page","id":"`+link+`"}`)
	for _, want := range []string{"Trip plan", "## Packing", "[x] passport", "[ ] charger"} {
		if !strings.Contains(reply, want) {
			t.Errorf("Notion reply lacks %q:\n%s", want, reply)
		}
	}
	for _, r := range wiki.Requests() {
		if r.Token != worldNotionKey || r.Version == "" {
			t.Errorf("Notion received %s %s with token %q version %q; want the bound token and a version", r.Method, r.Path, r.Token, r.Version)
		}
	}

	// Speech: the user gets a Telegram voice message in Ogg Opus.
	voices := func() []telegramtest.Sent {
		var out []telegramtest.Sent
		for _, m := range tg.Sent(bot, worldUser) {
			if m.Method == "sendVoice" {
				out = append(out, m)
			}
		}
		return out
	}
	ask("the speech tool's answer", `CALL choir_tts_speak {"text":"Your train leaves at nine."}`)
	tg.Wait(t, "a voice message", func() bool { return len(voices()) == 1 })
	if f := voices()[0].File; f == nil || !bytes.HasPrefix(f.Data, []byte("OggS")) || !bytes.Contains(f.Data, []byte("Your train leaves at nine.")) {
		t.Errorf("voice message = %+v; want the Ogg audio of the text", f)
	}
	reqs := eleven.Requests()
	if len(reqs) != 1 {
		t.Fatalf("ElevenLabs received %d requests; want 1", len(reqs))
	}
	r := reqs[0]
	vs := r.VoiceSettings()
	if r.Key != worldXiKey || r.VoiceID != "EXAVITQu4vr4xnSDxMaL" || r.OutputFormat != "opus_48000_64" || r.ModelID() != "eleven_multilingual_v2" ||
		fmt.Sprint(vs["stability"]) != "0.35" || fmt.Sprint(vs["speed"]) != "1.1" || vs["use_speaker_boost"] != true {
		t.Errorf("ElevenLabs received %+v (settings %v); want the voice profile's voice, model, settings and Opus", r, vs)
	}
	waitFor(t, "the sent audio to leave .choirtmp/send", func() bool {
		entries, _ := os.ReadDir(filepath.Join(workspace, ".choirtmp", "send"))
		return len(entries) == 0
	})

	// A rate limit reaches the user as something to wait for.
	brave.FailNext(1, bravetest.RateLimited(30))
	reply = ask("the rate limit", `CALL choir_web_search {"query":"again"}`)
	if !strings.Contains(reply, "rate_limited") || !strings.Contains(reply, "wait 30 s") {
		t.Errorf("rate-limited search reply:\n%s\nwant rate_limited and the wait", reply)
	}

	// No key reached a log or the DM.
	logs := logsText(t, filepath.Join(home, "logs"))
	dm := strings.Join(tg.Texts(bot, worldUser), "\n")
	for _, key := range []string{worldBraveKey, worldNotionKey, worldXiKey} {
		if strings.Contains(logs, key) || strings.Contains(dm, key) {
			t.Errorf("the secret %q shows in the logs or the DM", key)
		}
	}
}
