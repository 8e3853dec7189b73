package config

import (
	"strings"
	"testing"
)

func TestMetricsBlock(t *testing.T) {
	example, secrets := readExample(t)
	for _, tc := range []struct {
		name   string
		block  any
		listen string // what choird listens on; "" means off
	}{
		{"absent", nil, ""},
		{"listen empty", map[string]any{}, ""},
		{"a port alone means loopback", map[string]any{"listen": "9464"}, "127.0.0.1:9464"},
		{"IPv4 loopback", map[string]any{"listen": "127.0.0.1:9464"}, "127.0.0.1:9464"},
		{"another 127/8 address", map[string]any{"listen": "127.0.0.2:9100"}, "127.0.0.2:9100"},
		{"IPv6 loopback", map[string]any{"listen": "[::1]:9464"}, "[::1]:9464"},
		{"localhost", map[string]any{"listen": "localhost:9464"}, "localhost:9464"},
		{"all interfaces allowed", map[string]any{"listen": "0.0.0.0:9464", "allow_remote": true}, "0.0.0.0:9464"},
		{"empty host allowed", map[string]any{"listen": ":9464", "allow_remote": true}, ":9464"},
		{"a host name allowed", map[string]any{"listen": "metrics.lan:9464", "allow_remote": true}, "metrics.lan:9464"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := example
			if tc.block != nil {
				data = mutate(t, example, func(m map[string]any) { m["metrics"] = tc.block })
			}
			c, err := Parse(data)
			if err == nil {
				err = Validate(c, secrets)
			}
			if err != nil {
				t.Fatalf("Validate(metrics %v) = %v; want nil", tc.block, err)
			}
			addr, on, _, err := MetricsAddress(c.Metrics)
			if err != nil || on != (tc.listen != "") || addr != tc.listen {
				t.Errorf("MetricsAddress(%+v) = %q, %v, %v; want %q", c.Metrics, addr, on, err, tc.listen)
			}
		})
	}
}

func TestMetricsRefusals(t *testing.T) {
	example, secrets := readExample(t)
	const notLoopback = "not a loopback address"
	for _, tc := range []struct {
		name     string
		block    any
		contains string
	}{
		{"all interfaces", map[string]any{"listen": "0.0.0.0:9464"}, notLoopback},
		{"empty host is all interfaces", map[string]any{"listen": ":9464"}, notLoopback},
		{"IPv6 any", map[string]any{"listen": "[::]:9464"}, notLoopback},
		{"a LAN address", map[string]any{"listen": "192.168.1.10:9464"}, notLoopback},
		{"a host name", map[string]any{"listen": "example.org:9464"}, notLoopback},
		{"allow_remote false", map[string]any{"listen": "10.0.0.1:9464", "allow_remote": false}, "metrics.allow_remote: true"},
		{"port zero", map[string]any{"listen": "127.0.0.1:0"}, "between 1 and 65535"},
		{"port too big", map[string]any{"listen": "99999"}, "between 1 and 65535"},
		{"no port", map[string]any{"listen": "127.0.0.1"}, "want host:port"},
		{"port not a number", map[string]any{"listen": "127.0.0.1:http"}, "want host:port"},
		{"a URL", map[string]any{"listen": "http://127.0.0.1:9464/metrics"}, "want host:port"},
		{"spaces in the host", map[string]any{"listen": "my host:9464", "allow_remote": true}, "not an IP address or a host name"},
		{"newline in the host", map[string]any{"listen": "a\nb:9464", "allow_remote": true}, "not an IP address or a host name"},
		{"true is not an address", map[string]any{"listen": true}, "metrics.listen"},
		{"a number is not a string", map[string]any{"listen": 9464}, "metrics.listen"},
		{"unknown field", map[string]any{"listen": "9464", "path": "/m"}, "metrics.path"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := mutate(t, example, func(m map[string]any) { m["metrics"] = tc.block })
			c, err := Parse(data)
			if err == nil {
				err = Validate(c, secrets)
			}
			if err == nil {
				t.Fatalf("metrics %v accepted; want a problem containing %q", tc.block, tc.contains)
			}
			if !strings.Contains(err.Error(), "metrics.") || !strings.Contains(err.Error(), tc.contains) {
				t.Errorf("error = %v; want one at metrics.* containing %q", err, tc.contains)
			}
		})
	}
}
