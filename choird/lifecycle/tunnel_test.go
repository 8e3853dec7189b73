package lifecycle

import (
	"context"
	"slices"
	"testing"

	"choir/choird/lease"
	"choir/internal/config"
	"choir/internal/rpc"
)

// MCPEndpoints are what the build recorded for the image the session runs
// (choird's tunnel admits them for an offline agent): none for an image
// without a record, a record without MCP servers over HTTP, a session that
// ended, or a choird without image records.
func TestMCPEndpoints(t *testing.T) {
	rig := newRunRig(t)
	l, _ := rig.m.Config()
	a := l.Config.Agents["a1"]
	a.Network = config.Network{Mode: config.NetworkPolicy}
	l.Config.Agents["a1"] = a
	rig.m.HTTP = &HTTPEndpoint{URL: "https://172.17.0.1:9400", CA: []byte("ca")}
	ctx := context.Background()
	st, err := rig.m.Start(ctx, "a1", lease.Overrides{})
	if err != nil {
		t.Fatal(err)
	}
	image := rig.m.bySession(st.SessionID).Image
	record := func(endpoints string) ImageRecord {
		return ImageRecord{Version: rpc.ImageInfo{AgentID: "a1", ImageVersion: "v1", MCPEndpoints: endpoints}}
	}
	for _, c := range []struct {
		name    string
		images  ImageRecords
		session string
		want    []string
	}{
		{"recorded", fakeImages{image: record("10.0.0.5:8931,mcp.example.com:443")}, st.SessionID, []string{"10.0.0.5:8931", "mcp.example.com:443"}},
		{"no MCP server over HTTP", fakeImages{image: record("")}, st.SessionID, nil},
		{"another image recorded", fakeImages{"choir-agent-a1:other": record("mcp.example.com:443")}, st.SessionID, nil},
		{"no such session", fakeImages{image: record("mcp.example.com:443")}, "s-unknown", nil},
		{"no image records", nil, st.SessionID, nil},
	} {
		rig.m.Images = c.images
		if got := rig.m.MCPEndpoints(ctx, c.session); !slices.Equal(got, c.want) {
			t.Errorf("%s: MCPEndpoints = %q; want %q", c.name, got, c.want)
		}
	}
	rig.m.Images = fakeImages{image: record("mcp.example.com:443")}
	rig.m.Stop(ctx, "a1")
	if got := rig.m.MCPEndpoints(ctx, st.SessionID); got != nil {
		t.Errorf("after the session ended: MCPEndpoints = %q; want none", got)
	}
}
