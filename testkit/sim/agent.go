package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"strconv"
	"sync/atomic"
	"time"

	"choir/internal/chain"
	"choir/internal/rpc"
)

// behaviour is what the simulated agents do besides idling.
type behaviour struct {
	turnRate float64 // the chance that a heartbeat tick carries a turn (UserMsg + ModelOutput) and its dm.send
	version  string  // the image_version INIT_HELLO reports (the fake image's label)
}

// agentCounters count how the simulated agents ended.
type agentCounters struct {
	running    atomic.Int64 // said hello and not yet ended
	helloFail  atomic.Int64 // ended at INIT_HELLO (or before it)
	ended401   atomic.Int64 // choird revoked the session (401) while the agent ran
	stopped    atomic.Int64 // ended by a stop of its container
	turns      atomic.Int64
	dmSent     atomic.Int64
	streamDrop atomic.Int64 // event streams choird ended while the agent ran
}

// simAgent plays one choir-agent over the HTTP transport, as agent/main.go
// and agent/session do it: INIT_HELLO, GET_SECRETS and
// FETCH_DYNAMIC_CONFIG, the push stream (GET /events) held open and
// reopened, and a heartbeat every interval carrying the committed events
// choird has not acknowledged (hash-chained as internal/chain defines);
// on a turn it commits a user message and a model answer and sends the
// answer with choir.dm.send; on SIGTERM (the container's stop) a final
// heartbeat, then TERMINATE_SELF. It records each call's latency.
type simAgent struct {
	c   *container
	rec *recorder
	cnt *agentCounters
	b   behaviour
	cp  *rpc.Client

	rev     int64  // the newest committed revision
	hash    string // its chain hash
	ackRev  int64
	ackHash string      // the chain hash at ackRev ("" before the first event)
	log     []rpc.Event // committed events not yet acknowledged
	hasher  chain.Hasher
}

// runAgent is the container's process: it returns the exit code.
func runAgent(c *container, rec *recorder, cnt *agentCounters, b behaviour) int {
	a := &simAgent{c: c, rec: rec, cnt: cnt, b: b}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-c.kill:
			cancel()
		case <-ctx.Done():
		}
	}()
	code := a.run(ctx)
	if ctx.Err() != nil && code == 0 {
		select {
		case <-c.kill:
			return 137
		default:
		}
	}
	return code
}

func (a *simAgent) run(ctx context.Context) int {
	s := a.c.spec
	pem, err := os.ReadFile(s.CAFile)
	if err != nil {
		a.rec.observe(callHello, 0, fmt.Errorf("read the CA: %w", err))
		a.cnt.helloFail.Add(1)
		return 1
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		a.rec.observe(callHello, 0, errors.New("the CA file holds no certificate"))
		a.cnt.helloFail.Add(1)
		return 1
	}
	if a.cp, err = rpc.Dial(rpc.Options{Transport: rpc.TransportHTTP, Endpoint: s.Endpoint, TLS: &tls.Config{RootCAs: pool},
		SessionID: s.SessionID, LeaseToken: s.LeaseToken}); err != nil {
		a.rec.observe(callHello, 0, err)
		a.cnt.helloFail.Add(1)
		return 1
	}
	defer a.cp.Close()
	if err := a.open(ctx); err != nil {
		a.cnt.helloFail.Add(1)
		return 1 // choir-agent exits when its session cannot open
	}
	a.cnt.running.Add(1)
	defer a.cnt.running.Add(-1)
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	streamDone := make(chan struct{})
	go func() { a.follow(runCtx); close(streamDone) }()
	err = a.heartbeatLoop(runCtx)
	stop()
	<-streamDone
	if ctx.Err() != nil { // killed
		return 137
	}
	var re *rpc.Error
	if errors.As(err, &re) && re.Status == http.StatusUnauthorized {
		a.cnt.ended401.Add(1)
		return 1
	}
	// Stopped: the final heartbeat, then goodbye, on a bounded context.
	a.cnt.stopped.Add(1)
	bye, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	a.heartbeat(bye, true)
	t0 := time.Now()
	_, err = a.cp.Terminate(bye, rpc.TerminateReq{Reason: "signal"})
	a.rec.observe(callTerminate, time.Since(t0), err)
	return 0
}

// open is the session's opening as choir-agent does it.
func (a *simAgent) open(ctx context.Context) error {
	s := a.c.spec
	t0 := time.Now()
	hello, err := a.cp.InitHello(ctx, rpc.InitHelloReq{AgentID: s.AgentID, SessionID: s.SessionID, ImageVersion: a.b.version,
		GlobalRepoCommit: "sim", AgentRepoCommit: "sim", ToolManifestHash: emptyManifest, SkillManifestHash: emptyManifest})
	a.rec.observe(callHello, time.Since(t0), err)
	if err != nil {
		return err
	}
	if hello.Status == rpc.InitRecover && hello.Recovery != nil {
		a.rev, a.ackRev = hello.Recovery.Head.Rev, hello.Recovery.Head.Rev
		a.hash, a.ackHash = hello.Recovery.Head.Hash, hello.Recovery.Head.Hash
	}
	t0 = time.Now()
	_, err = a.cp.GetSecrets(ctx, rpc.SecretReq{})
	a.rec.observe(callSecrets, time.Since(t0), err)
	if err != nil {
		return err
	}
	t0 = time.Now()
	_, err = a.cp.FetchDynamicConfig(ctx, rpc.ConfigReq{})
	a.rec.observe(callConfig, time.Since(t0), err)
	return err
}

// emptyManifest is internal/manifest's hash of no files, as an image
// without tools or skills reports it (choird compares it only with a
// build record, which the fake image has none of).
const emptyManifest = "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

// follow holds the push stream open as rpc.Follow does, timing each
// opening; a shutdown event stops the agent like SIGTERM.
func (a *simAgent) follow(ctx context.Context) {
	last := ""
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		t0 := time.Now()
		s, err := a.cp.Events(ctx, last)
		if ctx.Err() != nil {
			return
		}
		a.rec.observe(callStream, time.Since(t0), err)
		if err == nil {
			backoff = 100 * time.Millisecond
			for {
				ev, err := s.Next()
				if err != nil {
					break
				}
				if ev.ID != "" {
					last = ev.ID
				}
				if ev.Type == rpc.EventShutdown {
					a.c.askStop()
				}
			}
			s.Close()
			if ctx.Err() != nil {
				return
			}
			a.cnt.streamDrop.Add(1)
		} else {
			var re *rpc.Error
			if errors.As(err, &re) && re.Status == http.StatusUnauthorized {
				return
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff + rand.N(backoff/2+1)):
		}
		backoff = min(2*backoff, 10*time.Second)
	}
}

// heartbeatLoop beats every interval until the container is stopped or
// choird ends the session (401).
func (a *simAgent) heartbeatLoop(ctx context.Context) error {
	t := time.NewTicker(time.Duration(a.c.spec.HeartbeatMS) * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-a.c.stop:
			return nil
		case <-t.C:
		}
		turn := rand.Float64() < a.b.turnRate
		if turn {
			a.commitTurn()
		}
		err := a.heartbeat(ctx, false)
		var re *rpc.Error
		if errors.As(err, &re) && re.Status == http.StatusUnauthorized {
			return err
		}
		if turn && err == nil {
			a.dmSend(ctx)
		}
	}
}

// commitTurn appends a user message and the model's answer to the log.
func (a *simAgent) commitTurn() {
	n := a.cnt.turns.Add(1)
	text, _ := json.Marshal(map[string]string{"text": "simulated message " + strconv.FormatInt(n, 10)})
	answer, _ := json.Marshal(map[string]string{"model": "m", "text": "simulated answer " + strconv.FormatInt(n, 10)})
	a.commit("UserMsg", text)
	a.commit("ModelOutput", answer)
}

func (a *simAgent) commit(typ string, payload json.RawMessage) {
	e := rpc.Event{Rev: a.rev + 1, Type: typ, Lane: "edge", Payload: payload, Time: time.Now().UTC().Truncate(time.Microsecond)}
	h, err := a.hasher.Hash(a.hash, chain.Event(e))
	if err != nil {
		panic(err) // the payloads above are valid JSON
	}
	e.Hash = h
	a.rev, a.hash = e.Rev, h
	a.log = append(a.log, e)
}

// heartbeat sends the unacknowledged events (none when idle); an answer
// acknowledges them, a refusal with a head resumes from it.
func (a *simAgent) heartbeat(ctx context.Context, final bool) error {
	req := rpc.HeartbeatReq{BaseRev: a.ackRev, NewRev: a.ackRev, Timestamp: time.Now().UTC(), Final: final, Patches: []rpc.Event{}}
	req.HashPrev = a.ackHash
	req.HashNew = req.HashPrev
	call := callIdle
	if len(a.log) > 0 {
		call = callEvents
		req.Patches = a.log
		req.NewRev, req.HashNew = a.rev, a.hash
	}
	t0 := time.Now()
	resp, err := a.cp.Heartbeat(ctx, req)
	if ctx.Err() != nil && !final {
		return ctx.Err()
	}
	a.rec.observe(call, time.Since(t0), err)
	var re *rpc.Error
	switch {
	case err == nil:
		a.acked(resp.AckRev, resp.AckHash)
	case errors.As(err, &re) && re.Head != nil:
		a.acked(re.Head.Rev, re.Head.Hash)
	}
	return err
}

// acked drops the events choird holds through rev; hash is its chain
// hash as choird gave it ("" when it gave none).
func (a *simAgent) acked(rev int64, hash string) {
	for len(a.log) > 0 && a.log[0].Rev <= rev {
		if hash == "" && a.log[0].Rev == rev {
			hash = a.log[0].Hash
		}
		a.log = a.log[1:]
	}
	if hash == "" && rev == a.rev {
		hash = a.hash
	}
	if hash != "" || rev == 0 {
		a.ackRev, a.ackHash = rev, hash
	}
}

// dmSend sends the turn's answer to the agent's DM.
func (a *simAgent) dmSend(ctx context.Context) {
	in, _ := json.Marshal(rpc.DMSend{Kind: "reply", Text: "simulated answer " + strconv.FormatInt(a.rev, 10)})
	t0 := time.Now()
	resp, err := a.cp.ExecuteHostTool(ctx, rpc.HostToolReq{ToolName: rpc.HostToolDMSend, CallID: rpc.NewRequestID(), Input: in})
	if err == nil && resp.Status != rpc.ToolSuccess {
		err = fmt.Errorf("choir.dm.send answered %s: %s", resp.Status, abbrev(string(resp.Output), 200))
	}
	if ctx.Err() != nil {
		return
	}
	a.rec.observe(callDMSend, time.Since(t0), err)
	if err == nil {
		a.cnt.dmSent.Add(1)
	}
}
