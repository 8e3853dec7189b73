package lifecycle

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"choir/internal/rpc"
)

// HTTPEndpoint is where agents reach choird with the HTTP transport: its
// URL, and the PEM certificates of the CA they trust for it.
type HTTPEndpoint struct {
	URL string
	CA  []byte
}

// writeCA puts the CA into an agent's directory (mounted read-only at
// SocketTarget), atomically, with the modes an agent socket would have: the
// container's root, holding no capability to override file modes, can read
// it; nobody else on the host can list the directory.
func writeCA(dir string, ca []byte) error {
	if err := os.MkdirAll(filepath.Dir(dir), 0o700); err != nil {
		return fmt.Errorf("create %s: %w", filepath.Dir(dir), err)
	}
	if err := os.Mkdir(dir, rpc.AgentSocketDirMode); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	if err := os.Chmod(dir, rpc.AgentSocketDirMode); err != nil {
		return fmt.Errorf("set the mode of %s: %w", dir, err)
	}
	tmp, err := os.CreateTemp(dir, ".ca-*")
	if err != nil {
		return fmt.Errorf("write the agent's CA: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(ca); err != nil {
		tmp.Close()
		return fmt.Errorf("write the agent's CA: %w", err)
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return fmt.Errorf("write the agent's CA: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write the agent's CA: %w", err)
	}
	if err := os.Rename(tmp.Name(), filepath.Join(dir, CAName)); err != nil {
		return fmt.Errorf("write the agent's CA: %w", err)
	}
	return nil
}
