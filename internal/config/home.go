package config

import (
	"fmt"
	"os"
	"path/filepath"
)

// HomeEnv overrides the home directory (default ~/.choir.d).
const HomeEnv = "CHOIR_HOME"

// Home is choird's state directory, .choir.d (§6.3).
type Home struct{ Dir string }

// DefaultHome is $CHOIR_HOME, else ~/.choir.d.
func DefaultHome() (Home, error) {
	if d := os.Getenv(HomeEnv); d != "" {
		abs, err := filepath.Abs(d)
		if err != nil {
			return Home{}, fmt.Errorf("%s=%q: %w", HomeEnv, d, err)
		}
		return Home{Dir: abs}, nil
	}
	h, err := os.UserHomeDir()
	if err != nil {
		return Home{}, fmt.Errorf("find the home directory (set %s): %w", HomeEnv, err)
	}
	return Home{Dir: filepath.Join(h, ".choir.d")}, nil
}

func (h Home) ConfigPath() string  { return filepath.Join(h.Dir, ConfigFile) }
func (h Home) SecretsPath() string { return filepath.Join(h.Dir, SecretsFile) }
func (h Home) SocksDir() string    { return filepath.Join(h.Dir, "socks") }
func (h Home) LogsDir() string     { return filepath.Join(h.Dir, "logs") }
func (h Home) ReposDir() string    { return filepath.Join(h.Dir, "repos") }

// AgentSocketDir holds one directory per agent, <agent-id>/, with that
// agent's control socket (§12.1) and nothing else: the directory is what
// its container mounts, read-only (a bind of the socket file itself would
// go stale when choird recreates the socket), so the admin socket is never
// in it.
func (h Home) AgentSocketDir() string { return filepath.Join(h.SocksDir(), "agent") }

// AdminSocket is choirctl's socket to choird; it is never mounted anywhere.
func (h Home) AdminSocket() string { return filepath.Join(h.SocksDir(), "ctl.sock") }
