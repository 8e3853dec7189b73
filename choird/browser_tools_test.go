package main

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"choir/choird/lifecycle"
	"choir/internal/rpc"
)

// TestBrowserWiredIntoTheLifecycle: choir.web.browse joins the host tools
// beside the others, sessions open contexts, and the memory pipeline is
// still told when a session ends.
func TestBrowserWiredIntoTheLifecycle(t *testing.T) {
	t.Setenv("CHOIR_BROWSER_DRIVER", t.TempDir()) // no driver: calls answer unavailable
	var closed []string
	m := &lifecycle.Manager{
		HostTools: map[string]func(context.Context, string, string, json.RawMessage) (json.RawMessage, error){
			rpc.HostToolMemoryQuery: func(context.Context, string, string, json.RawMessage) (json.RawMessage, error) { return nil, nil },
		},
		SessionClosed: func(agentID, sessionID, status string) { closed = append(closed, agentID+"/"+sessionID+"/"+status) },
	}
	stop := startBrowser(m, slog.New(slog.DiscardHandler))
	defer stop()
	if m.HostTools[rpc.HostToolMemoryQuery] == nil || m.HostTools[rpc.HostToolWebBrowse] == nil {
		t.Fatalf("host tools = %v; want the memory tools and choir.web.browse", len(m.HostTools))
	}
	if m.SessionOpened == nil {
		t.Fatal("SessionOpened is not set: no context would be made at start")
	}
	m.SessionOpened("a1", "s1")
	_, err := m.HostTools[rpc.HostToolWebBrowse](context.Background(), "a1", "s1", json.RawMessage(`{"url":"http://127.0.0.1:1/"}`))
	if err == nil || !strings.Contains(err.Error(), "Playwright driver is not installed") {
		t.Errorf("browse without a driver = %v; want it to say the driver is missing", err)
	}
	m.SessionClosed("a1", "s1", "stopped")
	if strings.Join(closed, ",") != "a1/s1/stopped" {
		t.Errorf("the earlier SessionClosed heard %v; want a1/s1/stopped", closed)
	}
}
