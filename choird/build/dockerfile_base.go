package build

import "choir/internal/skeleton"

// DockerfileBase is the reference Dockerfile.base (design §6.5), the one
// `choirctl init --global-repo` puts in a new global repo and the
// repository's top-level Dockerfile.base.
var DockerfileBase = skeleton.DockerfileBase
