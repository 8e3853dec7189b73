package build

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"time"

	"choir/internal/config"
)

// The secrets of the pinning. A server that needs its credential just to
// list its tools (an HTTP server behind a Bearer header, a stdio server
// reading a token from its environment) is listed with it: the throwaway
// container gets the secrets the declarations name, which are the ones the
// agent is granted at run time (choird/lifecycle/mcp_secrets.go): every
// name a declaration uses that no config.json resource uses. They never
// touch the engine's records or disk: no environment, label, layer or
// file carries them. choird serves them once, as one JSON object, on a
// unix socket in a directory only it can open, bind-mounted (the socket
// alone) into the container, where choir-agent --choir-mcp-list reads them
// and gives each server only the values its own declaration names.
const mcpSecretsInside = "/run/choir-mcp/secrets.sock"

// mcpPinSecrets are the secrets the pinning gets for the declarations of
// tree, with a note for each name it does not get and why.
func mcpPinSecrets(tree *Tree, cfg *config.Config, have config.Secrets) (map[string]string, []string) {
	used := config.UsedSecrets(cfg)
	out := map[string]string{}
	var notes []string
	for _, d := range tree.MCP {
		for _, n := range d.Secrets() {
			v, ok := have[n]
			switch {
			case slices.Contains(used, n):
				notes = append(notes, fmt.Sprintf("MCP server %s names the secret %s, which config.json gives to a resource: it is not given to MCP servers (at the build or at run time); use a secret of its own", d.Name, n))
			case !ok:
				notes = append(notes, fmt.Sprintf("MCP server %s names the secret %s, which secrets.json lacks: its tools were listed without it (choirctl secret set %s, then choirctl agent build)", d.Name, n, n))
			default:
				out[n] = v
			}
		}
	}
	return out, notes
}

// serveMCPSecrets listens on a fresh unix socket, in a directory only
// choird can open, and answers the first connection with secrets as one
// JSON object; no later one is answered. stop closes it and removes the
// directory.
func serveMCPSecrets(ctx context.Context, secrets map[string]string) (sock string, stop func(), err error) {
	dir, err := os.MkdirTemp("", "choir-mcp-")
	if err != nil {
		return "", nil, fmt.Errorf("a directory for the MCP secrets socket: %w", err)
	}
	sock = filepath.Join(dir, "secrets.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		os.RemoveAll(dir)
		return "", nil, fmt.Errorf("listen for the MCP listing: %w", err)
	}
	// The listing runs as an unprivileged uid: the socket must admit it.
	// The directory (0700) keeps every other host user out.
	if err := os.Chmod(sock, 0o666); err != nil {
		l.Close()
		os.RemoveAll(dir)
		return "", nil, err
	}
	body, _ := json.Marshal(secrets)
	done := make(chan struct{})
	go func() {
		defer close(done)
		c, err := l.Accept()
		l.Close()
		if err != nil {
			return
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(30 * time.Second))
		c.Write(body)
	}()
	ctx, cancel := context.WithCancel(ctx)
	go func() { <-ctx.Done(); l.Close() }()
	return sock, func() {
		cancel()
		<-done
		os.RemoveAll(dir)
	}, nil
}
