package build

import (
	"bytes"
	"choir/internal/rpc"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
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

// manifestHash is the hex SHA-256 over canonical manifests in name order,
// each followed by a newline. For tools it is what choir-agent's tool
// registry reports as its ManifestHash, so the two can be compared; each
// manifest carries its own name, so the hash covers (name, content) pairs.
func manifestHash(canon [][]byte) string {
	h := sha256.New()
	for _, c := range canon {
		h.Write(c)
		h.Write([]byte{'\n'})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// canonical is a manifest's content without its formatting: compact JSON
// with object members sorted, numbers as written.
func canonical(data []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var tree any
	if err := dec.Decode(&tree); err != nil {
		return nil, fmt.Errorf("not JSON: %v", err)
	}
	if dec.More() {
		return nil, fmt.Errorf("more than one JSON value")
	}
	return json.Marshal(tree)
}
