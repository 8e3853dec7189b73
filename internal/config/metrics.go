package config

import (
	"fmt"
	"net"
	"strconv"
	"strings"
)

// Metrics is the optional `metrics` block: where choird serves /metrics
// (Prometheus text format). Absent, or listen empty, means off.
type Metrics struct {
	// Listen is "host:port", or a port alone ("9464"), which means
	// 127.0.0.1:9464. The host must be a loopback address (127.0.0.0/8,
	// ::1 or localhost) unless AllowRemote is set: /metrics has no
	// authentication.
	Listen string `json:"listen,omitempty"`
	// AllowRemote permits a host that is not loopback ("0.0.0.0:9464",
	// ":9464", a LAN address).
	AllowRemote bool `json:"allow_remote,omitempty"`
}

// MetricsAddress is the address to listen on for m.Listen: a port alone
// becomes 127.0.0.1:port. ok is false when metrics are off. err says what
// is wrong with Listen; remote says whether the host is not loopback.
func MetricsAddress(m *Metrics) (addr string, ok, remote bool, err error) {
	if m == nil || m.Listen == "" {
		return "", false, false, nil
	}
	l := m.Listen
	if isPort(l) {
		l = net.JoinHostPort("127.0.0.1", l)
	}
	host, port, err := net.SplitHostPort(l)
	if err != nil || !isPort(port) {
		return "", true, false, fmt.Errorf("want host:port (\"127.0.0.1:9464\") or a port alone (\"9464\", meaning 127.0.0.1)")
	}
	if n, _ := strconv.Atoi(port); n < 1 || n > 65535 {
		return "", true, false, fmt.Errorf("the port must be between 1 and 65535 (scrapers need a fixed one)")
	}
	ip := net.ParseIP(host)
	loopback := strings.EqualFold(host, "localhost") || (ip != nil && ip.IsLoopback())
	if host != "" && ip == nil && !loopback && !validHostname(host) {
		return "", true, false, fmt.Errorf("%q is not an IP address or a host name", host)
	}
	return l, true, !loopback, nil
}

func isPort(s string) bool {
	if s == "" || len(s) > 5 {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

func validHostname(h string) bool {
	if len(h) > 253 {
		return false
	}
	for _, label := range strings.Split(h, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, c := range label {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-') {
				return false
			}
		}
	}
	return true
}

// metrics checks the metrics block: a listen address that parses, on
// loopback unless allow_remote says otherwise.
func (v *validator) metrics() {
	m := v.c.Metrics
	_, on, remote, err := MetricsAddress(m)
	switch {
	case err != nil:
		v.add("metrics.listen", quote(m.Listen), "%v", err)
	case on && remote && !m.AllowRemote:
		v.add("metrics.listen", quote(m.Listen), "not a loopback address: /metrics has no authentication and would be served to the network; "+
			"use 127.0.0.1:PORT (or a port alone), or set metrics.allow_remote: true if a firewall or a trusted network protects it")
	}
}
