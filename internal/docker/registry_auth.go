package docker

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
)

// registryAuthHeader carries a registry's credentials to the engine on a
// push, a distribution inspect or a service create.
const registryAuthHeader = "X-Registry-Auth"

// RegistryAuth are the credentials the engine presents to a registry. They
// travel as the X-Registry-Auth header: the JSON object base64url-encoded.
// A zero RegistryAuth means "no credentials" (a loopback registry).
type RegistryAuth struct {
	Username      string `json:"username,omitempty"`
	Password      string `json:"password,omitempty"`
	ServerAddress string `json:"serveraddress,omitempty"` // "host:port" of the registry
}

// String never shows the password.
func (a RegistryAuth) String() string {
	if a.Password == "" {
		return fmt.Sprintf("{username: %q, serveraddress: %q}", a.Username, a.ServerAddress)
	}
	return fmt.Sprintf("{username: %q, password: <redacted>, serveraddress: %q}", a.Username, a.ServerAddress)
}

// header encodes a as the X-Registry-Auth value.
func (a RegistryAuth) header() (string, error) {
	b, err := json.Marshal(a)
	if err != nil {
		return "", fmt.Errorf("docker: encode registry credentials: %w", err)
	}
	return base64.URLEncoding.EncodeToString(b), nil
}
