package build

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"choir/internal/manifest"
	"choir/internal/rpc"
)

// Version is /choir/version.json (design §15.1), whose type the agent
// protocol owns: choird and choir-agent compare image_version at INIT_HELLO.
type Version = rpc.ImageInfo

// ImageVersionLen is the length of an image version, in hex digits.
const ImageVersionLen = 12

// imageVersion names an agent image by everything that goes into it: both
// commits, both manifest hashes, the choir-agent binary and the Dockerfile
// sent to the engine. The same inputs always give the same version, so an
// unchanged agent is not rebuilt.
func imageVersion(globalCommit, agentCommit, toolHash, skillHash, binarySHA256 string, dockerfile []byte) string {
	h := sha256.New()
	fmt.Fprintf(h, "choir image v1\nglobal_repo_commit %s\nagent_repo_commit %s\ntool_manifest_hash %s\nskill_manifest_hash %s\nchoir_agent_sha256 %s\ndockerfile %d\n",
		globalCommit, agentCommit, toolHash, skillHash, binarySHA256, len(dockerfile))
	h.Write(dockerfile)
	return hex.EncodeToString(h.Sum(nil))[:ImageVersionLen]
}

// manifestHash is manifest.Hash: for tools it is what choir-agent reports
// at INIT_HELLO from the files it finds under /choir/tools (manifest.Dirs),
// so the two can be compared.
func manifestHash(canon [][]byte) string { return manifest.Hash(canon) }

// canonical is manifest.Canonical: compact JSON with object members
// sorted, numbers as written.
func canonical(data []byte) ([]byte, error) { return manifest.Canonical(data) }
