package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"choir/choird/netfetch"
	"choir/internal/netpolicy"
	"choir/internal/rpc"
)

// fetchHandler answers EXECUTE_HOST_TOOL with choir.net.fetch, as the
// lifecycle does for the authenticated session.
type fetchHandler struct {
	fakeHandler
	tool *netfetch.Tool
}

func (h fetchHandler) HandleHostTool(ctx context.Context, req rpc.HostToolReq) (rpc.HostToolResp, error) {
	out, err := h.tool.Handle(ctx, "a1", "s1", req.Input)
	if err != nil {
		return rpc.HostToolResp{CallID: req.CallID, Status: rpc.ToolError}, nil
	}
	return rpc.HostToolResp{CallID: req.CallID, Status: rpc.ToolSuccess, Output: out}, nil
}

// BenchmarkNetFetchOverRPC is the whole path of choir.net.fetch as an
// agent sees it: EXECUTE_HOST_TOOL over the agent's socket, rpc.Server,
// the policy, the checked fetch of a 4 KiB loopback page and the answer,
// against the same page fetched directly (what an open-mode container's
// curl does).
//
//	go test -run '^$' -bench BenchmarkNetFetchOverRPC -benchmem ./choird/
func BenchmarkNetFetchOverRPC(b *testing.B) {
	page := strings.Repeat("x", 4096)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		io.WriteString(w, page)
	}))
	defer srv.Close()
	pol, err := netpolicy.Compile("agents.a1.network.allow", []netpolicy.Entry{{Prefix: srv.URL + "/page"}})
	if err != nil {
		b.Fatal(err)
	}
	tool := &netfetch.Tool{Fetcher: netfetch.New(netfetch.Options{}),
		Policy: func(context.Context, string, string) (netfetch.Source, error) {
			return netfetch.Source{Policy: pol, Limits: netfetch.Limits{MaxBytes: 1 << 20, Timeout: 30 * time.Second}}, nil
		},
		Record: func(context.Context, string, string, netfetch.Source, netfetch.Record, []byte) (string, error) {
			return "", nil
		}}
	defer tool.Fetcher.Close()
	limits := rpc.DefaultLimits()
	limits.Rate, limits.Burst = 1e9, 1e9
	rs := rpc.NewServer(fetchHandler{tool: tool}, limits, slog.New(slog.DiscardHandler))
	rs.Open("s1", "a1", "tok-1")
	sock := filepath.Join(b.TempDir(), "a1", "choird.sock")
	ln, err := rs.ListenAgent(sock, "a1")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	cp, err := rpc.Dial(rpc.Options{Transport: rpc.TransportUDS, Socket: sock, SessionID: "s1", LeaseToken: "tok-1"})
	if err != nil {
		b.Fatal(err)
	}
	defer cp.Close()
	in, _ := json.Marshal(rpc.NetFetch{URL: srv.URL + "/page"})

	b.Run("direct", func(b *testing.B) {
		c := &http.Client{Transport: &http.Transport{}}
		defer c.CloseIdleConnections()
		for b.Loop() {
			resp, err := c.Get(srv.URL + "/page")
			if err != nil {
				b.Fatal(err)
			}
			n, _ := io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if n != 4096 {
				b.Fatal(n)
			}
		}
	})
	b.Run("net.fetch", func(b *testing.B) {
		for b.Loop() {
			resp, err := cp.ExecuteHostTool(context.Background(), rpc.HostToolReq{ToolName: rpc.HostToolNetFetch, CallID: "c", Input: in})
			if err != nil || resp.Status != rpc.ToolSuccess {
				b.Fatal(resp, err)
			}
			var a rpc.NetFetchAnswer
			if err := json.Unmarshal(resp.Output, &a); err != nil || len(a.Text) != 4096 {
				b.Fatal(err)
			}
		}
	})
}
