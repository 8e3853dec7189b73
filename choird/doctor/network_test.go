package doctor

import (
	"context"
	"strings"
	"testing"

	"choir/internal/config"
	"choir/internal/netpolicy"
)

// The doctor names the agents in network policy mode and warns about an
// empty allowlist.
func TestNetwork(t *testing.T) {
	allow := []config.AllowEntry{{Entry: netpolicy.Entry{Prefix: "https://api.example.org/v1/"}}}
	for _, tc := range []struct {
		name   string
		cfg    config.Config
		status Status
		want   []string
	}{
		{"all open", config.Config{Agents: map[string]config.Agent{"a1": {}}}, OK, []string{"every agent in open mode", "research runs fetch nothing"}},
		{"policy with a list", config.Config{Agents: map[string]config.Agent{"a1": {Network: config.Network{Mode: "policy", Allow: allow}}},
			Headless: &config.Headless{Moods: map[string]config.MoodOverride{"CURIOUS": {Allow: allow}}}}, OK,
			[]string{"a1 (1 entries)", "research runs fetch within 1 entries"}},
		{"policy with none", config.Config{Agents: map[string]config.Agent{"a1": {Network: config.Network{Mode: "policy"}}, "a2": {}}}, Warn,
			[]string{"a1 (0 entries)", "a1 cannot reach the network at all"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := &Doctor{Home: newHome(t, nil)}
			d.loaded = &config.Loaded{Config: &tc.cfg}
			r := d.checkNetwork(context.Background())
			if r.Status != tc.status {
				t.Errorf("checkNetwork = %+v; want %s", r, tc.status)
			}
			for _, w := range tc.want {
				if !strings.Contains(r.Detail, w) {
					t.Errorf("detail %q; want it to say %q", r.Detail, w)
				}
			}
		})
	}
}
