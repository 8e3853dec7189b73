package main

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"choir/choird/control"
	"choir/choird/ledger"
	"choir/choird/store"
	"choir/internal/config"
	"choir/internal/embed"
	"choir/internal/logs"
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

// /usage's text: an agent's calls this month by model (cached tokens,
// cost in the installation's currency, unpriced calls said) and its
// spend today against its daily cap; every agent's for an admin. The
// same line is /status's and agent status's spend line.
func TestUsageTextAndTodaysSpend(t *testing.T) {
	st, ctx := alphaStore(t)
	five := 5.0
	cfg := &config.Config{Spend: &config.Spend{Currency: "EUR"},
		Agents: map[string]config.Agent{"alpha": {Spend: &config.Spend{PerDay: &five}}, "beta": {}},
		Models: map[string]config.Model{"m": {Price: &config.Price{Input: 1, Output: 1}}, "n": {}}}
	lm, err := logs.NewManager(filepath.Join(t.TempDir(), "logs"), 1000, slog.LevelInfo, logs.NewRedactor())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lm.Close() })
	plane := control.New(config.Home{Dir: t.TempDir()}, lm)
	plane.SetConfig(&config.Loaded{Config: cfg})
	l := spendLedger(st, cfg, nil)
	plane.SetUsage(usageView{st: st, ledger: l, config: func() *config.Config { return cfg }})
	now := time.Now()
	for _, r := range []store.CallRow{
		{CallID: "c1", AgentID: "alpha", Model: "m", Purpose: "turn", PromptTokens: 1000, CachedTokens: 600, CompletionTokens: 100, Cost: 0.5, CostSource: rpc.CostPrice, Outcome: rpc.OutcomeOK},
		{CallID: "c2", AgentID: "alpha", Model: "n", Purpose: "compaction", PromptTokens: 300, CompletionTokens: 30, CostSource: rpc.CostNone, Outcome: rpc.OutcomeOK},
		{CallID: "c3", AgentID: "beta", Model: "n", Purpose: "turn", PromptTokens: 10, CompletionTokens: 1, CostSource: rpc.CostNone, Outcome: rpc.OutcomeOK},
	} {
		r.SessionID, r.At = "s-"+r.AgentID, now
		if _, err := st.InsertCall(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	month := time.Date(now.UTC().Year(), now.UTC().Month(), 1, 0, 0, 0, 0, time.UTC).Format("2006-01-02")
	reset := now.UTC().Truncate(24*time.Hour).AddDate(0, 0, 1).Format("2006-01-02 15:04 UTC")
	today := "today 0.50 EUR of 5.00 EUR (daily cap), resets " + reset

	got, err := usageText(ctx, plane, "alpha")
	if err != nil {
		t.Fatal(err)
	}
	want := "Model calls since " + month + " (UTC):\n" +
		"m: 1 calls, 1000 prompt (600 cached) + 100 completion tokens, 0.5000 EUR\n" +
		"n: 1 calls, 300 prompt (0 cached) + 30 completion tokens, 0.0000 EUR (1 calls unpriced)\n" +
		"alpha: " + today + "\n"
	if got != want {
		t.Errorf("/usage of alpha =\n%s\nwant\n%s", got, want)
	}
	got, err = usageText(ctx, plane, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{"alpha: 2 calls, 1300 prompt (600 cached) + 130 completion tokens, 0.5000 EUR (1 calls unpriced)\n",
		"beta: 1 calls, 10 prompt (0 cached) + 1 completion tokens, 0.0000 EUR (1 calls unpriced)\n", "alpha: " + today + "\n"} {
		if !strings.Contains(got, line) {
			t.Errorf("/usage of every agent =\n%s\nwant a line %q", got, line)
		}
	}
	if strings.Contains(got, "beta: today") {
		t.Errorf("/usage of every agent =\n%s\nwant no spend line for beta (no daily cap)", got)
	}
	if s := plane.UsageToday(ctx, "alpha"); s != today {
		t.Errorf("status spend of alpha = %q; want %q", s, today)
	}
	if s := plane.UsageToday(ctx, "beta"); s != "" {
		t.Errorf("status spend of beta = %q; want none (no daily cap)", s)
	}
}
