package main

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"choir/choird/ledger"
	"choir/choird/store"
	"choir/internal/config"
	"choir/internal/embed"
	"choir/internal/rpc"
)

type fakeEmbedder struct {
	err   error
	calls *atomic.Int32 // nil: not counted
}

func (f fakeEmbedder) Embed(_ context.Context, texts []string) ([][]float32, error) {
	if f.calls != nil {
		f.calls.Add(1)
	}
	if f.err != nil {
		return nil, f.err
	}
	return make([][]float32, len(texts)), nil
}
func (fakeEmbedder) Dimensions() int { return 3 }
func (fakeEmbedder) Model() string   { return "text-embed" }

// spendLedger is choird's ledger on st under cfg, its log lines in logged.
func spendLedger(st *store.Store, cfg *config.Config, logged *strings.Builder) *ledger.Ledger {
	log := slog.New(slog.DiscardHandler)
	if logged != nil {
		log = slog.New(slog.NewTextHandler(logged, nil))
	}
	return &ledger.Ledger{Store: st, Config: func() *config.Config { return cfg }, Log: log}
}

// choird's own embedding calls are in the usage ledger as agent "-" (the
// installation's caps count them), a query embedded for an agent's
// session as that agent's; a failed call counts no tokens; the offline
// hashing embedder makes no call and is not metered.
func TestEmbeddingCallsAreRecorded(t *testing.T) {
	st, ctx := alphaStore(t)
	log := slog.New(slog.DiscardHandler)
	l := spendLedger(st, &config.Config{}, nil)
	agentOf := func(session string) (string, bool) { return "alpha", session == "s-alpha" }
	if _, ok := meterEmbeddings(embed.Hashing{}, l, agentOf, log).(embed.Hashing); !ok {
		t.Error("the hashing embedder was wrapped")
	}
	ok := meterEmbeddings(fakeEmbedder{}, l, agentOf, log)
	if _, err := ok.Embed(ctx, []string{"twelve bytes", "1234"}); err != nil {
		t.Fatal(err)
	}
	bad := meterEmbeddings(fakeEmbedder{err: errors.New("503")}, l, agentOf, log)
	if _, err := bad.Embed(ctx, []string{"lost"}); err == nil {
		t.Fatal("the embedder's error was lost")
	}
	query := rpc.WithCall(ctx, rpc.Call{SessionID: "s-alpha"})
	if _, err := ok.Embed(query, []string{"what did I say about tea?"}); err != nil {
		t.Fatal(err)
	}
	rows, err := st.Usage(ctx, store.UsageQuery{By: "agent", Since: time.Now().Add(-time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]store.UsageRow{"-": {Calls: 2, Failed: 1, PromptTokens: 4}, "alpha": {Calls: 1, PromptTokens: 7}}
	if len(rows) != 2 {
		t.Fatalf("usage = %+v; want rows for - and alpha", rows)
	}
	for _, r := range rows {
		w := want[r.Key]
		if r.Calls != w.Calls || r.Failed != w.Failed || r.PromptTokens != w.PromptTokens {
			t.Errorf("usage of %s = %+v; want %d calls, %d failed, %d estimated tokens", r.Key, r, w.Calls, w.Failed, w.PromptTokens)
		}
	}
	if n := l.Open(); n != 0 {
		t.Errorf("%d reservations open after the calls were recorded; want 0", n)
	}
}

// An embedding call reserves against the caps first: at the
// installation's cap (or the agent's, for its own query) it is refused
// before the provider is asked, with the cap logged, and records nothing.
func TestEmbeddingCallsAreRefusedAtTheCap(t *testing.T) {
	st, ctx := alphaStore(t)
	all, agent := int64(10), int64(1)
	cfg := &config.Config{Spend: &config.Spend{PerDayTokens: &all},
		Agents: map[string]config.Agent{"alpha": {Spend: &config.Spend{PerDayTokens: &agent}}}}
	var logged strings.Builder
	l := spendLedger(st, cfg, &logged)
	var calls atomic.Int32
	emb := meterEmbeddings(fakeEmbedder{calls: &calls}, l, func(string) (string, bool) { return "alpha", true }, slog.New(slog.NewTextHandler(&logged, nil)))

	if _, err := emb.Embed(ctx, []string{strings.Repeat("a", 32)}); err != nil { // 8 of 10 tokens
		t.Fatalf("Embed under the cap = %v; want embedded", err)
	}
	_, err := emb.Embed(ctx, []string{strings.Repeat("b", 32)}) // 8 more would pass 10
	if !errors.Is(err, ErrEmbeddingRefused) {
		t.Fatalf("Embed past the installation's cap = %v; want ErrEmbeddingRefused", err)
	}
	if !strings.Contains(err.Error(), "the installation's daily cap in tokens") {
		t.Errorf("refusal = %q; want it to name the installation's daily cap", err)
	}
	_, err = emb.Embed(rpc.WithCall(ctx, rpc.Call{SessionID: "s1"}), []string{"query"}) // 2 tokens, alpha's cap is 1
	if !errors.Is(err, ErrEmbeddingRefused) || !strings.Contains(err.Error(), "agent alpha's daily cap in tokens") {
		t.Errorf("Embed of alpha's query past its cap = %v; want refused naming alpha's cap", err)
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("the provider was asked %d times; want once (refused calls are not made)", n)
	}
	if !strings.Contains(logged.String(), "embedding call refused by a spend cap") || !strings.Contains(logged.String(), "cap=\"installation per_day_tokens\"") {
		t.Errorf("log = %s; want the refusal logged with its cap", logged.String())
	}
	rows, err := st.Usage(ctx, store.UsageQuery{By: "agent"})
	if err != nil || len(rows) != 1 || rows[0].Calls != 1 || rows[0].PromptTokens != 8 {
		t.Errorf("usage = %+v, %v; want the one call made, 8 tokens", rows, err)
	}
}
