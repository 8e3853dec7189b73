package build

import _ "embed"

// DockerfileBase is the reference Dockerfile.base (design §6.5): Debian
// bookworm-slim with git, openssh-client, python3-minimal, ripgrep and
// ca-certificates, the choir-agent binary at /choir/bin/choir-agent,
// git-cred-helper linked to it, and choir-agent as the entrypoint. A
// global repo starts from a copy of it; the repository's top-level
// Dockerfile.base is the same file.
//
//go:embed Dockerfile.base
var DockerfileBase string
