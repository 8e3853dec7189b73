package build

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"choir/agent/redact"
	"choir/internal/config"
	"choir/internal/docker"
	"choir/internal/mcpdecl"
)

// Pinning the MCP servers' tool lists (issue 24): after the agent image is
// built (or reused), choird runs choir-agent --choir-mcp-list in a
// throwaway container of it (read-only, every capability dropped, an
// unprivileged uid, no mount but the socket that serves the declarations'
// secrets: mcp_secrets.go), which starts each stdio server and connects to
// each http one and prints every tool as the server sent it. The listing
// is baked into /choir/mcp-pins.json by one more layer, under the same
// tag, so the image choird records and verifies at start is the one with
// its pins; the agent offers only the tools whose live definition matches.
// An image whose pins already equal the listing (label choir.mcp_pins) is
// kept as it is.
const (
	mcpListArg     = "--choir-mcp-list" // agent/tool/mcp.ListArg
	mcpSecretsArg  = "--secrets="       // agent/tool/mcp.SecretsArg
	LabelMCPPins   = "choir.mcp_pins"
	mcpPinsFile    = "mcp-pins.json" // in /choir
	mcpListTimeout = 3 * time.Minute
	mcpListUser    = "65534:65534"
)

type mcpListing struct {
	Pins     mcpdecl.Pins        `json:"pins"`
	Errors   map[string]string   `json:"errors"`
	Withheld map[string][]string `json:"withheld"`
}

// pinMCP returns the id of the image with its pins, tagged res.Image.
func (b *Builder) pinMCP(ctx context.Context, res *Result, cfg *config.Config, tree *Tree, imageID string, say func(string, ...any)) (string, error) {
	warn := func(w string) {
		say("warning: %s", w)
		res.Warnings = append(res.Warnings, w)
	}
	var have config.Secrets
	if b.Secrets != nil {
		have = b.Secrets()
	}
	secrets, notes := mcpPinSecrets(tree, cfg, have)
	for _, n := range notes {
		warn(n)
	}
	say("listing the tools of the MCP servers in a throwaway container of %s (with %d secrets they name)", res.Image, len(secrets))
	red := redact.New(secrets)
	l, err := b.listMCP(ctx, imageID, secrets)
	if err != nil {
		return "", fmt.Errorf("build: pin the MCP servers' tools of %s: %s", res.Image, red.String(err.Error()))
	}
	for _, server := range sortedKeys(l.Errors) {
		e := red.String(l.Errors[server])
		say("warning: MCP server %s could not be listed, so none of its tools will be offered: %s (fix it, then choirctl agent build %s)", server, e, res.AgentID)
		res.Warnings = append(res.Warnings, fmt.Sprintf("MCP server %s could not be listed: %s", server, e))
	}
	if l.Withheld == nil {
		l.Withheld = map[string][]string{}
	}
	// The listing withholds a tool whose definition holds a secret's value;
	// checked here again, since the pins are written into the image.
	for _, server := range sortedKeys(l.Pins) {
		for _, tool := range sortedKeys(l.Pins[server]) {
			if red.ContainsBytes(l.Pins[server][tool].Def) || red.Contains(tool) {
				delete(l.Pins[server], tool)
				l.Withheld[server] = append(l.Withheld[server], red.String(tool))
			}
		}
	}
	for _, server := range sortedKeys(l.Withheld) {
		for _, tool := range l.Withheld[server] {
			warn(fmt.Sprintf("MCP server %s: tool %s is not pinned and will not be offered: its definition holds the value of a secret the server was given", server, red.String(tool)))
		}
	}
	for _, server := range sortedKeys(l.Pins) {
		names := sortedKeys(l.Pins[server])
		say("MCP server %s: %d tools pinned (%s)", server, len(names), strings.Join(names, ", "))
	}
	if l.Pins == nil {
		l.Pins = mcpdecl.Pins{}
	}
	pins := l.Pins.JSON()
	sum := sha256.Sum256(pins)
	label := hex.EncodeToString(sum[:8])
	if img, err := b.Docker.ImageInspect(ctx, imageID); err == nil && img.Config != nil && img.Config.Labels[LabelMCPPins] == label {
		return imageID, nil
	}
	dockerfile := fmt.Sprintf("FROM %s\nCOPY %s /choir/%s\nLABEL %s=%s\n", imageID, mcpPinsFile, mcpPinsFile, LabelMCPPins, label)
	body := func(c *contextWriter) error {
		if err := c.file("Dockerfile", 0o644, []byte(dockerfile)); err != nil {
			return err
		}
		return c.file(mcpPinsFile, 0o644, pins)
	}
	id, err := b.build(ctx, "MCP pins", body, docker.BuildOptions{Tags: []string{res.Image}, Dockerfile: "Dockerfile"}, say)
	if err != nil {
		return "", fmt.Errorf("build: bake the MCP pins into %s: %w", res.Image, b.engineError(err))
	}
	return id, nil
}

// listMCP runs the listing in a throwaway container of imageID, serving it
// secrets (none: no socket, no mount).
func (b *Builder) listMCP(ctx context.Context, imageID string, secrets map[string]string) (*mcpListing, error) {
	ctx, cancel := context.WithTimeout(ctx, mcpListTimeout)
	defer cancel()
	pids, yes := int64(256), true
	cc := &docker.ContainerConfig{
		Image: imageID, Cmd: []string{mcpListArg}, User: mcpListUser,
		Labels: map[string]string{"choir.build": "mcp-list"},
	}
	hc := &docker.HostConfig{
		ReadonlyRootfs: true, CapDrop: []string{"ALL"}, SecurityOpt: []string{"no-new-privileges"},
		Tmpfs:     map[string]string{"/tmp": "rw,nosuid,nodev,size=256m"},
		Resources: docker.Resources{Memory: 1 << 30, PidsLimit: &pids}, Init: &yes,
	}
	if len(secrets) > 0 {
		sock, stop, err := serveMCPSecrets(ctx, secrets) // mcp_secrets.go
		if err != nil {
			return nil, err
		}
		defer stop()
		cc.Cmd = append(cc.Cmd, mcpSecretsArg+mcpSecretsInside)
		hc.Mounts = []docker.Mount{{Type: docker.MountBind, Source: sock, Target: mcpSecretsInside, ReadOnly: true}}
	}
	c, err := b.Docker.ContainerCreate(ctx, "", cc, hc)
	if err != nil {
		return nil, b.engineError(err)
	}
	defer b.Docker.ContainerRemove(context.WithoutCancel(ctx), c.ID, docker.ContainerRemoveOptions{Force: true})
	if err := b.Docker.ContainerStart(ctx, c.ID); err != nil {
		return nil, b.engineError(err)
	}
	w, err := b.Docker.ContainerWait(ctx, c.ID, docker.WaitNotRunning)
	if err != nil {
		return nil, fmt.Errorf("wait for the listing (at most %v): %w", mcpListTimeout, err)
	}
	logs, err := b.Docker.ContainerLogs(ctx, c.ID, docker.LogsOptions{Stdout: true, Stderr: true})
	if err != nil {
		return nil, b.engineError(err)
	}
	defer logs.Close()
	var stdout, stderr bytes.Buffer
	if err := logs.Copy(&stdout, &stderr); err != nil {
		return nil, err
	}
	lines := bytes.Split(bytes.TrimSpace(stdout.Bytes()), []byte("\n"))
	var l mcpListing
	if w.StatusCode != 0 || json.Unmarshal(lines[len(lines)-1], &l) != nil {
		return nil, fmt.Errorf("choir-agent %s exited %d: %s", mcpListArg, w.StatusCode, tailBytes(stderr.Bytes(), 2000))
	}
	return &l, nil
}

func tailBytes(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return strings.TrimSpace(string(b))
}

// withMCPPins is pinMCP for an image whose tree declares MCP servers, and
// imageID unchanged for one that declares none.
func (b *Builder) withMCPPins(ctx context.Context, res *Result, cfg *config.Config, tree *Tree, imageID string, say func(string, ...any)) (string, error) {
	if len(tree.MCP) == 0 {
		return imageID, nil
	}
	return b.pinMCP(ctx, res, cfg, tree, imageID, say)
}
