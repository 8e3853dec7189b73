package build

import (
	"context"
	"encoding/json"
	"io"
	"maps"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"choir/internal/config"
	"choir/internal/mcpdecl"
)

// The pinning gets exactly the secrets the declarations name, less those
// config.json gives to a resource and those secrets.json lacks, each left
// out with a note.
func TestMCPPinSecrets(t *testing.T) {
	tree := &Tree{MCP: []*mcpdecl.Decl{
		{Name: "web", Transport: mcpdecl.HTTP, Headers: map[string]mcpdecl.Value{"Authorization": {Secret: "web-token", Format: "Bearer %s"}}},
		{Name: "fs", Transport: mcpdecl.Stdio, Env: map[string]mcpdecl.Value{"TOKEN": {Secret: "fs-token"}, "KEY": {Secret: "llm-key"}, "MODE": {Literal: "ro"}}},
		{Name: "gone", Transport: mcpdecl.Stdio, Env: map[string]mcpdecl.Value{"TOKEN": {Secret: "missing"}}},
	}}
	cfg := &config.Config{Models: map[string]config.Model{"m": {Secret: "llm-key"}}}
	have := config.Secrets{"web-token": "w", "fs-token": "f", "llm-key": "l", "other": "o"}
	got, notes := mcpPinSecrets(tree, cfg, have)
	if want := map[string]string{"web-token": "w", "fs-token": "f"}; !maps.Equal(got, want) {
		t.Errorf("mcpPinSecrets = %v; want %v", got, want)
	}
	if len(notes) != 2 || !strings.Contains(notes[0], "fs names the secret llm-key, which config.json gives to a resource") ||
		!strings.Contains(notes[1], "gone names the secret missing, which secrets.json lacks") {
		t.Errorf("notes = %q; want llm-key refused and missing noted", notes)
	}
	if strings.Contains(strings.Join(notes, " "), `"l"`) {
		t.Errorf("notes = %q hold a value", notes)
	}
}

// The socket answers its first connection with the secrets and no other;
// only choird can open its directory, which stop removes.
func TestServeMCPSecretsOnce(t *testing.T) {
	sock, stop, err := serveMCPSecrets(context.Background(), map[string]string{"web-token": "w-Value-1"})
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(filepath.Dir(sock)); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("the socket's directory: %v, %v; want mode 0700", fi.Mode(), err)
	}
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(c)
	c.Close()
	var got map[string]string
	if json.Unmarshal(data, &got) != nil || got["web-token"] != "w-Value-1" || len(got) != 1 {
		t.Errorf("the first connection read %q; want the one secret", data)
	}
	if c, err := net.Dial("unix", sock); err == nil {
		data, _ := io.ReadAll(c)
		c.Close()
		if len(data) > 0 {
			t.Errorf("a second connection read %q; want nothing", data)
		}
	}
	stop()
	if _, err := os.Stat(filepath.Dir(sock)); !os.IsNotExist(err) {
		t.Errorf("the socket's directory after stop: %v; want it removed", err)
	}
}
