package config

import (
	"fmt"
	"net"
	"strconv"
)

// Runtime kinds: where choird runs its agent boxes.
const (
	RuntimeLocal = "local" // containers on choird's own engine (the default)
	RuntimeSwarm = "swarm" // services on the Docker Swarm whose manager choird's engine is
)

// Runtime is the optional `runtime` block: where agents run. Absent, or
// kind "local", means containers on choird's engine, as always.
type Runtime struct {
	Kind string `json:"kind,omitempty"`
	// Registry is "host:port" of the registry every node pulls from (swarm
	// only): choird pushes each image it builds there and services run it
	// by digest.
	Registry string `json:"registry,omitempty"`
	// RegistrySecret names the secret holding the registry's credentials,
	// "user:password"; empty for a registry without credentials.
	RegistrySecret string `json:"registry_secret,omitempty"`
}

// RuntimeKind is the kind r names: RuntimeLocal when r is nil or names none.
func RuntimeKind(r *Runtime) string {
	if r == nil || r.Kind == "" {
		return RuntimeLocal
	}
	return r.Kind
}

// runtime checks the runtime block: a known kind; on swarm, a registry
// host:port and, when named, its secret; and on the local runtime no
// registry (it would be silently unused).
func (v *validator) runtime() {
	r := v.c.Runtime
	if r == nil {
		r = &Runtime{}
	}
	switch r.Kind {
	case "", RuntimeLocal:
		if r.Registry != "" {
			v.add("runtime.registry", quote(r.Registry), "a registry is used only with kind %q: set runtime.kind to %q, or remove runtime.registry", RuntimeSwarm, RuntimeSwarm)
		}
		if r.RegistrySecret != "" {
			v.add("runtime.registry_secret", quote(r.RegistrySecret), "a registry secret is used only with kind %q: set runtime.kind to %q, or remove runtime.registry_secret", RuntimeSwarm, RuntimeSwarm)
		}
	case RuntimeSwarm:
		if msg := registryProblem(r.Registry); msg != "" {
			v.add("runtime.registry", quote(r.Registry), "%s", msg)
		}
		v.secret("runtime.registry_secret", r.RegistrySecret, false)
	default:
		v.add("runtime.kind", quote(r.Kind), "want %q (containers on choird's engine) or %q (services on the Swarm that engine manages)", RuntimeLocal, RuntimeSwarm)
	}
	for _, name := range sortedKeys(v.c.Workspaces) {
		n := v.c.Workspaces[name].Node
		switch {
		case n == "":
		case RuntimeKind(r) != RuntimeSwarm:
			v.add("workspaces."+name+".node", quote(n), "a workspace's node places agents on a Swarm node: it needs runtime.kind %q; remove it for the local runtime", RuntimeSwarm)
		case !NamePattern.MatchString(n):
			v.add("workspaces."+name+".node", quote(n), "want the value of the node's choir.node label (%s), as `docker node update --label-add choir.node=NAME` set it", NamePattern)
		}
	}
}

// registryProblem says what is wrong with a registry address, "" if
// nothing.
func registryProblem(s string) string {
	if s == "" {
		return `required with kind "swarm": the host:port of the registry every node pulls from ("127.0.0.1:5000")`
	}
	host, port, err := net.SplitHostPort(s)
	if err != nil || host == "" {
		return `want host:port ("registry.lan:5000"), without a scheme or a path`
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return fmt.Sprintf("port %q: want a number between 1 and 65535", port)
	}
	if net.ParseIP(host) == nil && host != "localhost" && !validHostname(host) {
		return fmt.Sprintf("%q is not an IP address or a host name", host)
	}
	return ""
}
