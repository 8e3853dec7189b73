package assembly

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"choir/internal/config"
	"choir/internal/rpc"
	"choir/testkit/openaitest"
)

// The session's git identity is in its git config from the start, and a
// config change (the identity's name and email edited, config apply) is in
// it before the next model call, so before any tool the model calls.
func TestGitConfigFollowsTheDynamicConfig(t *testing.T) {
	model := openaitest.New(t)
	c := newLanesChoird(map[string]config.Model{"m": {Provider: "openai", Model: "test-model", Endpoint: model.URL(), Secret: "k"}},
		"m", "", map[string]string{"k": "sk-test-9876", "git-tok": "ghp-test-5555"})
	c.gitDir = filepath.Join(t.TempDir(), "git")
	c.dyn.GitIdentity = &config.GitIdentity{Name: "One", Email: "one@example.com", Secret: "git-tok"}
	model.Expect(openaitest.Chat().ReplyText("first"), openaitest.Chat().ReplyText("second"))
	srv, _ := runLanes(t, c)
	gitconfig := filepath.Join(c.gitDir, "gitconfig")
	waitFile := func(want string) string {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			data, _ := os.ReadFile(gitconfig)
			if strings.Contains(string(data), want) || time.Now().After(deadline) {
				return string(data)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	if got := waitFile(`email = "one@example.com"`); !strings.Contains(got, `name = "One"`) {
		t.Fatalf("gitconfig at start:\n%s", got)
	}
	srv.Publish("s-1", rpc.EventUserMessage, rpc.UserMessage{ID: "m1", From: "console", Text: "hi"})
	c.waitDM(t, rpc.DMReply)

	d := c.dyn
	d.GitIdentity = &config.GitIdentity{Name: "Two", Email: "two@example.com", Secret: "git-tok"}
	c.setDynamic(d)
	deadline := time.After(30 * time.Second)
	for seen := false; !seen; { // the session runs with version 2
		for _, hb := range c.heartbeatsSent() {
			seen = seen || hb.ConfigVersion == 2
		}
		if !seen {
			select {
			case <-c.changed:
			case <-deadline:
				t.Fatal("the session never reported config version 2")
			}
		}
	}
	srv.Publish("s-1", rpc.EventUserMessage, rpc.UserMessage{ID: "m2", From: "console", Text: "again"})
	for replied := false; !replied; {
		for _, m := range c.dms() {
			replied = replied || m.Kind == rpc.DMReply && m.Text == "second"
		}
		if !replied {
			select {
			case <-c.changed:
			case <-deadline:
				t.Fatal("no reply to the second message")
			}
		}
	}
	got, _ := os.ReadFile(gitconfig)
	if !strings.Contains(string(got), `name = "Two"`) || !strings.Contains(string(got), `email = "two@example.com"`) {
		t.Errorf("after the config change, gitconfig =\n%s\nwant the identity Two", got)
	}
	if strings.Contains(string(got), "ghp-test-5555") {
		t.Errorf("gitconfig holds the token:\n%s", got)
	}
}

func (c *fakeChoird) heartbeatsSent() []rpc.HeartbeatReq {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]rpc.HeartbeatReq(nil), c.heartbeats...)
}
