package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"choir/choird/control"
	"choir/choird/gateway"
	"choir/internal/rpc"
)

// dmSendHandler is choird's agent protocol server as far as choir.dm.send
// goes: the lifecycle's dispatch of the host tool (decode strictly, the
// call id as the message's key, deliver through the console and the
// gateway, answer "queued"). Every other verb is unused here.
type dmSendHandler struct {
	rpc.ControlPlaneHandler
	out control.Outboxes
}

func (h dmSendHandler) HandleHostTool(ctx context.Context, req rpc.HostToolReq) (rpc.HostToolResp, error) {
	var msg rpc.DMSend
	if err := rpc.DecodeStrict(req.Input, &msg); err != nil {
		return rpc.HostToolResp{}, err
	}
	if msg.ID == "" {
		msg.ID = req.CallID
	}
	if err := h.out.Deliver(ctx, "alpha", "alice", msg); err != nil {
		return rpc.HostToolResp{CallID: req.CallID, Status: rpc.ToolError, Output: json.RawMessage(fmt.Sprintf("%q", err.Error()))}, nil
	}
	return rpc.HostToolResp{CallID: req.CallID, Status: rpc.ToolSuccess, Output: json.RawMessage(`{"status":"success","summary":"queued"}`)}, nil
}

// BenchmarkDMSendAcknowledged is choir.dm.send from the agent's side to
// its acknowledgement: one EXECUTE_HOST_TOOL on the agent's Unix socket
// through the real agent protocol server, the console (one choirctl chat
// subscribed, which gets the message first) and the gateway's durable
// outbox in Postgres, while the DM's sender delivers to the fake Telegram
// as choird does. It is what an agent's turn waits for each message it
// sends to a Telegram DM (before the outbox: Telegram's answer, and the
// one-a-second pace of the chat). "delivering" runs the DM's sender at the
// same time (on PGlite's one connection its queries take turns with the
// sends'); "queue-only" does not start it.
//
//	go test -run '^$' -bench DMSendAcknowledged -benchtime 2000x ./choird/gateway/
func BenchmarkDMSendAcknowledged(b *testing.B) {
	b.Run("delivering", func(b *testing.B) { benchDMSend(b, true) })
	b.Run("queue-only", func(b *testing.B) { benchDMSend(b, false) })
}

func benchDMSend(b *testing.B, delivering bool) {
	r := newOutboxRig(b)
	gw := r.gateway(func(c *gateway.Config) {
		c.OutboxMax = func(string) int { return 1 << 30 }
		c.Limiter.PerBotLimit = 1 << 20
	})
	if delivering {
		r.run(gw)
	}
	console := &control.Console{}
	sub, unsubscribe := console.Subscribe("alpha")
	b.Cleanup(unsubscribe)
	go func() {
		for range sub {
		}
	}()
	log := slog.New(slog.DiscardHandler)
	limits := rpc.DefaultLimits()
	limits.Rate, limits.Burst = 1e6, 1e6 // a benchmark sends back to back
	srv := rpc.NewServer(dmSendHandler{out: control.Outboxes{console, gw}}, limits, log)
	b.Cleanup(func() { srv.Shutdown(context.Background()) })
	dir, err := os.MkdirTemp("", "ob")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "s", "choir.sock")
	ln, err := srv.ListenAgent(sock, "alpha")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ln.Close() })
	token := rpc.NewToken()
	srv.Open("s-ob", "alpha", token)
	c, err := rpc.Dial(rpc.Options{Transport: rpc.TransportUDS, Socket: sock, SessionID: "s-ob", LeaseToken: token})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	ctx := context.Background()
	send := func(i int) {
		input, _ := json.Marshal(rpc.DMSend{Kind: rpc.DMReply, Text: fmt.Sprintf("reply %d", i)})
		resp, err := c.ExecuteHostTool(ctx, rpc.HostToolReq{ToolName: rpc.HostToolDMSend, CallID: rpc.NewRequestID(), Input: input})
		if err != nil || resp.Status != rpc.ToolSuccess {
			b.Fatalf("choir.dm.send #%d = %+v, %v", i, resp, err)
		}
	}
	for i := range 50 { // warm up: connections, statement cache
		send(i)
	}
	b.ResetTimer()
	for i := range b.N {
		send(i)
	}
	b.StopTimer()
	if !delivering {
		return
	}
	deadline := time.Now().Add(2 * time.Minute) // the sender's backlog, at its own pace
	for len(r.srv.Sent(r.bot, aliceUser)) < 50+b.N {
		if time.Now().After(deadline) {
			b.Fatalf("the DM got %d of %d messages", len(r.srv.Sent(r.bot, aliceUser)), 50+b.N)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
