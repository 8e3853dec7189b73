package rpc

import (
	"encoding/json"
	"fmt"
	"os"
)

// ImageVersionFile is where an agent image holds its ImageInfo.
const ImageVersionFile = "/choir/version.json"

// ImageInfo is /choir/version.json (§15.1): written by choird's build,
// read by choir-agent, whose INIT_HELLO carries its image version and
// manifest hashes so that choird can refuse an image it did not start.
type ImageInfo struct {
	AgentID           string `json:"agent_id"`
	ImageVersion      string `json:"image_version"`
	GlobalRepoCommit  string `json:"global_repo_commit"`
	AgentRepoCommit   string `json:"agent_repo_commit"`
	ToolManifestHash  string `json:"tool_manifest_hash"`
	SkillManifestHash string `json:"skill_manifest_hash"`
	// MCPSecrets are the secrets.json names the image's MCP server
	// declarations use (/choir/mcp), sorted and comma-separated (a string
	// keeps ImageInfo comparable); choird grants those no resource uses.
	MCPSecrets string `json:"mcp_secrets,omitempty"`
	// MCPEndpoints are the host:port of the image's MCP servers over HTTP,
	// sorted and comma-separated: choird carries an offline agent's
	// connections to them (tunnel.go).
	MCPEndpoints string `json:"mcp_endpoints,omitempty"`
}

// JSON is the file's content: indented, with a final newline.
func (v ImageInfo) JSON() []byte {
	b, _ := json.MarshalIndent(v, "", "  ")
	return append(b, '\n')
}

// ReadImageInfo reads a version.json; a missing or malformed file is an
// error naming it.
func ReadImageInfo(path string) (ImageInfo, error) {
	var v ImageInfo
	data, err := os.ReadFile(path)
	if err != nil {
		return v, fmt.Errorf("read image version: %w", err)
	}
	if err := json.Unmarshal(data, &v); err != nil {
		return v, fmt.Errorf("%s: %w", path, err)
	}
	return v, nil
}
