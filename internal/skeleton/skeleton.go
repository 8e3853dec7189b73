// Package skeleton holds the starting content of choir's git repos: the
// global repo (Dockerfile.base, identity/USER.md, SOUL.md, SOUL-CORE.md,
// tools/, skills/) and a per-agent repo (Dockerfile FROM choir-base,
// identity/SOUL.md, SOUL-CORE.md, tools/, skills/), as `choirctl init
// --global-repo` and `choirctl agent init --repo` create them. The
// reference Dockerfile.base here is also the repository's top-level file.
package skeleton

import (
	"embed"
	"io/fs"
)

//go:embed all:global all:agent
var files embed.FS

// DockerfileBase is the reference base image (§6.5): Debian bookworm-slim
// with git, openssh-client, python3-minimal, ripgrep and ca-certificates,
// the choir-agent binary at /choir/bin/choir-agent, git-cred-helper linked
// to it, and choir-agent as the entrypoint.
var DockerfileBase = mustRead("global/Dockerfile.base")

// Global is the global repo's skeleton.
func Global() fs.FS { return sub("global") }

// Agent is a per-agent repo's skeleton.
func Agent() fs.FS { return sub("agent") }

func sub(dir string) fs.FS {
	f, err := fs.Sub(files, dir)
	if err != nil {
		panic(err)
	}
	return f
}

func mustRead(name string) string {
	b, err := files.ReadFile(name)
	if err != nil {
		panic(err)
	}
	return string(b)
}
