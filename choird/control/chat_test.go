package control

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"choir/internal/config"
	"choir/internal/ctl"
	"choir/internal/logs"
	"choir/internal/rpc"
)

type fakeMessenger struct {
	mu       sync.Mutex
	sent     []rpc.UserMessage
	injected []string
}

func (f *fakeMessenger) SendUserMessage(agentID string, m rpc.UserMessage) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sent = append(f.sent, m)
	return "msg-1", nil
}

func (f *fakeMessenger) Inject(agentID, text string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.injected = append(f.injected, text)
	return nil
}

// TestConsoleChat: a console message reaches the messenger as from
// "console", and what the agent sends to its DM streams to the subscriber,
// in order, none dropped.
func TestConsoleChat(t *testing.T) {
	home := config.Home{Dir: t.TempDir()}
	lm, err := logs.NewManager(home.LogsDir(), 1000, slog.LevelInfo, logs.NewRedactor())
	if err != nil {
		t.Fatal(err)
	}
	defer lm.Close()
	p := New(home, lm)
	c := config.Default()
	c.Agents = map[string]config.Agent{"agent-1": {}}
	p.SetConfig(&config.Loaded{Config: &c})
	fm := &fakeMessenger{}
	p.SetMessenger(fm)
	sock := filepath.Join(t.TempDir(), "ctl.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: p.AdminHandler()}
	go srv.Serve(l)
	defer srv.Close()
	client := ctl.NewClient(sock)
	defer client.Close()
	ctx := context.Background()

	out, err := client.Outbox(ctx, "agent-1")
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	id, err := client.SendMessage(ctx, "agent-1", "hello")
	if err != nil || id != "msg-1" {
		t.Fatalf("SendMessage = %q, %v", id, err)
	}
	if err := client.Inject(ctx, "agent-1", "also this"); err != nil {
		t.Fatal(err)
	}
	fm.mu.Lock()
	if len(fm.sent) != 1 || fm.sent[0].From != "console" || fm.sent[0].Text != "hello" || len(fm.injected) != 1 {
		t.Errorf("messenger saw %+v / %v", fm.sent, fm.injected)
	}
	fm.mu.Unlock()
	// Outbox returned once choird had subscribed (it answers only then), so
	// a burst larger than the buffer arrives whole and in order.
	go func() {
		for i := range 3 * consoleBuffer {
			p.Console.Deliver(ctx, "agent-1", "dm1", rpc.DMSend{Kind: rpc.DMReply, ReplyTo: "msg-1", Text: strings.Repeat("x", i%5) + "!"})
		}
	}()
	for i := range 3 * consoleBuffer {
		m, err := out.Next()
		if err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		if want := strings.Repeat("x", i%5) + "!"; m.Text != want || m.ReplyTo != "msg-1" {
			t.Fatalf("message %d = %+v; want text %q", i, m, want)
		}
	}
	if _, err := client.SendMessage(ctx, "ghost", "x"); err == nil || !strings.Contains(err.Error(), `no agent named "ghost"`) {
		t.Errorf("message to an unknown agent = %v", err)
	}
	if _, err := client.SendMessage(ctx, "agent-1", ""); err == nil || !strings.Contains(err.Error(), "empty message") {
		t.Errorf("empty message = %v", err)
	}
}
