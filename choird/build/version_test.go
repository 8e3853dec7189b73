package build

import (
	"encoding/json"
	"strings"
	"testing"
)

// versionOf computes what Build would write to version.json for the repos.
func versionOf(t *testing.T, g, a files) Version {
	t.Helper()
	gs, as := loadPair(t, g, a)
	tree, err := check(gs, as)
	if err != nil {
		t.Fatal(err)
	}
	df := agentDockerfile([]byte(a["Dockerfile"]), "choir-base:g1-0123456789ab")
	return Version{
		AgentID:          "agent-1",
		ImageVersion:     imageVersion("g1", "a1", tree.ToolHash, tree.SkillHash, "binsha", df),
		GlobalRepoCommit: "g1", AgentRepoCommit: "a1",
		ToolManifestHash: tree.ToolHash, SkillManifestHash: tree.SkillHash,
	}
}

func TestVersionDeterministic(t *testing.T) {
	v1 := versionOf(t, globalFiles(), agentFiles())
	v2 := versionOf(t, globalFiles(), agentFiles())
	if v1 != v2 {
		t.Errorf("two computations differ: %+v and %+v", v1, v2)
	}
	if len(v1.ImageVersion) != ImageVersionLen || strings.Trim(v1.ImageVersion, "0123456789abcdef") != "" {
		t.Errorf("image version %q is not %d hex digits", v1.ImageVersion, ImageVersionLen)
	}
	// Formatting is not content.
	g := globalFiles()
	g["tools/acme.wc.json"] = strings.ReplaceAll(g["tools/acme.wc.json"], "\n", "\n\n  ")
	if v := versionOf(t, g, agentFiles()); v != v1 {
		t.Errorf("reformatting a manifest changed the version: %+v; want %+v", v, v1)
	}
	var back Version
	if err := json.Unmarshal(v1.JSON(), &back); err != nil || back != v1 {
		t.Errorf("version.json round trip = %+v, %v; want %+v", back, err, v1)
	}
	for _, key := range []string{"agent_id", "image_version", "global_repo_commit", "agent_repo_commit", "tool_manifest_hash", "skill_manifest_hash"} {
		if !strings.Contains(string(v1.JSON()), `"`+key+`"`) {
			t.Errorf("version.json has no %q:\n%s", key, v1.JSON())
		}
	}
}

func TestVersionOneToolChanged(t *testing.T) {
	v1 := versionOf(t, globalFiles(), agentFiles())
	a := agentFiles()
	a["tools/acme.greet.json"] = toolManifest("acme.greet", "agent greet, better")
	v2 := versionOf(t, globalFiles(), a)
	if v2.ToolManifestHash == v1.ToolManifestHash {
		t.Error("changing a tool's manifest left tool_manifest_hash alone")
	}
	if v2.ImageVersion == v1.ImageVersion {
		t.Error("changing a tool's manifest left image_version alone")
	}
	v2.ToolManifestHash, v2.ImageVersion = v1.ToolManifestHash, v1.ImageVersion
	if v2 != v1 {
		t.Errorf("changing a tool changed more than its hash: %+v; want %+v", v2, v1)
	}

	// A global tool the agent overrides does not count.
	g := globalFiles()
	g["tools/acme.echo.json"] = toolManifest("acme.echo", "global echo, changed")
	if v3 := versionOf(t, g, agentFiles()); v3 != v1 {
		t.Errorf("changing an overridden global tool changed the version: %+v; want %+v", v3, v1)
	}
}

func TestImageVersionInputs(t *testing.T) {
	base := []string{"g", "a", "t", "s", "b"}
	df := []byte("FROM x\n")
	v := imageVersion(base[0], base[1], base[2], base[3], base[4], df)
	for i := range base {
		in := append([]string(nil), base...)
		in[i] += "2"
		if got := imageVersion(in[0], in[1], in[2], in[3], in[4], df); got == v {
			t.Errorf("changing input %d left the image version at %s", i, v)
		}
	}
	if got := imageVersion(base[0], base[1], base[2], base[3], base[4], []byte("FROM y\n")); got == v {
		t.Error("changing the Dockerfile left the image version alone")
	}
}

func TestAgentDockerfile(t *testing.T) {
	tests := []struct{ in, want string }{
		{"FROM choir-base:latest\nRUN x\n", "FROM choir-base:abc-123\nRUN x\n"},
		{"from choir-base AS b\r\nRUN x", "from choir-base:abc-123 AS b\r\nRUN x\n"},
		{"FROM --platform=linux/amd64 choir-base\n", "FROM --platform=linux/amd64 choir-base:abc-123\n"},
		{"FROM choir-base:pinned\n", "FROM choir-base:pinned\n"},
		{"FROM debian\n# FROM choir-base\n", "FROM debian\n# FROM choir-base\n"},
	}
	const tail = "\n# Added by choird: the merged tools, skills and identity (design §6.5, §15.1).\nCOPY .choir/ /choir/\n"
	for _, tt := range tests {
		if got := string(agentDockerfile([]byte(tt.in), "choir-base:abc-123")); got != tt.want+tail {
			t.Errorf("agentDockerfile(%q) = %q; want %q", tt.in, got, tt.want+tail)
		}
	}
}

func TestUsesBase(t *testing.T) {
	tests := []struct {
		in   string
		want bool
	}{
		{"FROM choir-base\n", true},
		{"FROM golang AS b\nRUN x\nfrom choir-base:abc-123\n", true},
		{"FROM --platform=linux/amd64 choir-base:latest AS a\n", true},
		{"FROM debian\n", false},
		{"FROM choir-based\n", false},
		{"# FROM choir-base\nFROM debian\n", false},
	}
	for _, tt := range tests {
		if got := usesBase([]byte(tt.in)); got != tt.want {
			t.Errorf("usesBase(%q) = %v; want %v", tt.in, got, tt.want)
		}
	}
}
