package config

import (
	"errors"
	"fmt"

	"choir/internal/netpolicy"
)

// Network is agents.<id>.network: how the agent reaches the network.
//
// Mode "open" (the default, §18.1) leaves the container on the bridge with
// arbitrary outbound requests. Mode "policy" takes the container off the
// network (choird/lifecycle) and offers choir.net.fetch, which choird
// executes against Allow (internal/netpolicy): an entry is a URL prefix
// "https://api.example.org/v1/" or {"prefix": …, "methods": ["GET", "POST"]}
// (GET and HEAD by default). An empty Allow in policy mode admits nothing.
type Network struct {
	Mode  string       `json:"mode,omitempty"`
	Allow []AllowEntry `json:"allow,omitempty"`
	// MaxBytes caps a fetched body (default DefaultFetchMaxBytes); TimeoutS
	// caps a whole fetch, redirects included (default DefaultFetchTimeoutS).
	MaxBytes int64 `json:"max_bytes,omitempty"`
	TimeoutS int   `json:"timeout_s,omitempty"`
}

// Network modes.
const (
	NetworkOpen   = "open"
	NetworkPolicy = "policy"
)

// Limits of choir.net.fetch.
const (
	DefaultFetchMaxBytes = 1 << 20
	MaxFetchMaxBytes     = 32 << 20
	DefaultFetchTimeoutS = 30
	MaxFetchTimeoutS     = 600
)

// Policy reports mode "policy".
func (n Network) Policy() bool { return n.Mode == NetworkPolicy }

// FetchMaxBytes is max_bytes or its default.
func (n Network) FetchMaxBytes() int64 {
	if n.MaxBytes == 0 {
		return DefaultFetchMaxBytes
	}
	return n.MaxBytes
}

// FetchTimeoutS is timeout_s or its default.
func (n Network) FetchTimeoutS() int {
	if n.TimeoutS == 0 {
		return DefaultFetchTimeoutS
	}
	return n.TimeoutS
}

// AllowEntry is one allow entry: netpolicy.Entry (its JSON forms), with
// the structural check config load runs before decoding.
type AllowEntry struct{ netpolicy.Entry }

type allowEntryObject struct {
	Prefix  string   `json:"prefix"`
	Methods []string `json:"methods,omitempty"`
}

// checkShape lets the structural pass accept both forms of an allow entry.
func (AllowEntry) checkShape(file string, n *node, path string, ps *Problems) {
	switch n.kind {
	case 's':
		return
	case 'o':
		checkShape(file, n, jsonShapeOf[allowEntryObject](), path, ps)
	default:
		ps.add(file, path, n.text(), `want a URL prefix like "https://api.example.org/v1/" or {"prefix": "…", "methods": ["GET", "POST"]}, got %s`, n.kindName())
	}
}

// Entries converts an allowlist for netpolicy.Compile.
func Entries(list []AllowEntry) []netpolicy.Entry {
	out := make([]netpolicy.Entry, len(list))
	for i, e := range list {
		out[i] = e.Entry
	}
	return out
}

// network checks every agent's network and the moods' allowlists.
func (v *validator) network() {
	for _, id := range sortedKeys(v.c.Agents) {
		n := v.c.Agents[id].Network
		path := "agents." + id + ".network"
		switch n.Mode {
		case "", NetworkOpen:
			if len(n.Allow) > 0 {
				v.add(path+".allow", "", `an allowlist takes effect only with "mode": "policy"; set the mode or remove allow (open mode reaches any host)`)
			}
		case NetworkPolicy:
		default:
			v.add(path+".mode", n.Mode, `want "open" (the default: any host, §18.1) or "policy" (only choir.net.fetch, through allow)`)
		}
		v.allowList(path+".allow", n.Allow)
		if n.MaxBytes < 0 || n.MaxBytes > MaxFetchMaxBytes {
			v.add(path+".max_bytes", fmt.Sprint(n.MaxBytes), "want 1 to %d bytes (or leave it out for %d)", MaxFetchMaxBytes, DefaultFetchMaxBytes)
		}
		if n.TimeoutS < 0 || n.TimeoutS > MaxFetchTimeoutS {
			v.add(path+".timeout_s", fmt.Sprint(n.TimeoutS), "want 1 to %d seconds (or leave it out for %d)", MaxFetchTimeoutS, DefaultFetchTimeoutS)
		}
	}
	if h := v.c.Headless; h != nil {
		for _, name := range sortedKeys(h.Moods) {
			o := h.Moods[name]
			path := "headless.moods." + name + ".allow"
			if len(o.Allow) > 0 && o.Network != nil && !*o.Network {
				v.add(path, "", "an allowlist needs network true: a mood without network is offered no choir.net.fetch")
			}
			v.allowList(path, o.Allow)
		}
	}
}

// allowList checks one allowlist, each problem at its entry's path.
func (v *validator) allowList(path string, entries []AllowEntry) {
	if len(entries) == 0 {
		return
	}
	_, err := netpolicy.Compile(path, Entries(entries))
	if err == nil {
		return
	}
	for _, e := range unjoin(err) {
		var ee *netpolicy.EntryError
		if errors.As(e, &ee) {
			v.add(path+ee.Path, ee.Value, "%s", ee.Msg)
		} else {
			v.add(path, "", "%s", e.Error())
		}
	}
}

func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}
