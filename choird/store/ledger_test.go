package store

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"choir/internal/chain"
)

// callLog builds a chained log of n events where every odd revision is a
// ModelCall whose payload payload(rev) gives.
func callLog(t testing.TB, n int64, payload func(rev int64) string) []Event {
	t.Helper()
	var h chain.Hasher
	var out []Event
	prev := ""
	for rev := int64(1); rev <= n; rev++ {
		e := Event{Rev: rev, Type: "UserMsg", Lane: "edge", Time: t0.Add(time.Duration(rev) * time.Second), Payload: json.RawMessage(`{"text":"hi"}`)}
		if rev%2 == 1 {
			e.Type, e.Payload = CallEvent, json.RawMessage(payload(rev))
		}
		p, err := chain.Canonical(e.Payload)
		if err != nil {
			t.Fatal(err)
		}
		e.Payload = p
		e.Hash, _ = h.Hash(prev, chain.Event{Rev: e.Rev, Type: e.Type, Lane: e.Lane, Payload: e.Payload, Time: e.Time})
		prev = e.Hash
		out = append(out, e)
	}
	return out
}

// A batch's call records land in the ledger with the batch, once: a resend
// adds nothing, and a record the agent got wrong (numbers as strings,
// negative or huge, no call id) never fails the batch.
func TestLedgerRecordsCallsWithTheirBatch(t *testing.T) {
	s := newStore(t, Config{}, "alpha")
	var told []CallRow // what CallsStored heard: choird's metrics count these
	s.CallsStored = func(rows []CallRow) { told = append(told, rows...) }
	ctx := ctxT(t)
	newSession(t, s, "s1")
	good := func(rev int64) string {
		return fmt.Sprintf(`{"call_id":"c%d","model":"m","purpose":"turn","prompt_tokens":100,"completion_tokens":10,"cached_tokens":40,"cost":0.5,"cost_source":"price","currency":"USD","latency_ms":7,"outcome":"ok"}`, rev)
	}
	log := callLog(t, 6, good)
	if _, err := s.Replicate(ctx, "s1", Batch{Events: log[:4]}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Replicate(ctx, "s1", Batch{Events: log}); err != nil { // 1-4 resent
		t.Fatal(err)
	}
	tot, err := s.SpendTotals(ctx, "alpha", t0.Add(-time.Hour), t0.Add(-24*time.Hour), []string{"c1", "c3", "c9"})
	if err != nil {
		t.Fatal(err)
	}
	if tot.AgentDay.Tokens != 330 || tot.AgentDay.Cost != 1.5 || tot.AllMonth.Tokens != 330 || len(tot.Stored) != 2 {
		t.Fatalf("SpendTotals = %+v; want 3 calls once each (330 tokens, 1.5), c1 and c3 stored", tot)
	}
	rows, err := s.Usage(ctx, UsageQuery{By: "session"})
	if err != nil || len(rows) != 1 || rows[0].Calls != 3 || rows[0].CachedTokens != 120 || rows[0].Agent != "alpha" {
		t.Fatalf("Usage by session = %+v, %v; want s1 of alpha, 3 calls, 120 cached", rows, err)
	}
	if len(told) != 3 || told[0].CallID != "c1" || told[2].CallID != "c5" || told[1].AgentID != "alpha" ||
		told[1].CachedTokens != 40 || told[1].Cost != 0.5 || told[1].Purpose != "turn" || told[1].Rev != 3 {
		t.Fatalf("CallsStored heard %+v; want c1, c3, c5 of alpha once each, as stored", told)
	}
	told = nil

	// Hostile records.
	if err := s.EndSessionWhy(ctx, "s1", SessionStopped, t0, "test"); err != nil {
		t.Fatal(err)
	}
	newSession(t, s, "s2")
	bad := []string{
		`{"call_id":"h1","prompt_tokens":"100","cost":"lots","outcome":7}`,
		`{"call_id":"h3","prompt_tokens":-5,"completion_tokens":1e30,"cost":-1}`,
		`{"prompt_tokens":5}`,
		`{"call_id":"","prompt_tokens":5}`,
		`{"call_id":{"x":1},"prompt_tokens":5}`,
		`{"call_id":"h1","prompt_tokens":999}`, // a repeated call id counts once
	}
	hostile := callLog(t, int64(2*len(bad)), func(rev int64) string { return bad[rev/2] })
	if _, err := s.Replicate(ctx, "s2", Batch{Events: hostile}); err != nil {
		t.Fatalf("Replicate of hostile records = %v; want the batch stored", err)
	}
	if got := storedRevs(t, s, "s2"); got == "" {
		t.Fatal("hostile batch: no events stored")
	}
	rows, err = s.Usage(ctx, UsageQuery{By: "session", Agent: "alpha"})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, r := range rows {
		if r.Key != "s2" {
			continue
		}
		found = true
		if r.Calls != 2 || r.PromptTokens != 0 || r.CompletionTokens != 1e12 || r.Cost != 0 {
			t.Errorf("s2 = %+v; want 2 calls (h1, h3), strings and negatives as 0, the huge number capped at 1e12", r)
		}
	}
	if !found {
		t.Errorf("Usage by session = %+v; want a row for s2", rows)
	}
	if len(told) != 2 || told[0].PromptTokens != 0 || told[1].CompletionTokens != 1e12 || told[1].Cost != 0 {
		t.Errorf("CallsStored heard %+v; want h1 and h3 as the ledger holds them", told)
	}
}

// A record sent by SPEND settle is stored once and counts like one from
// the log; allowances run until their time.
func TestLedgerInsertCallAndAllowances(t *testing.T) {
	s := newStore(t, Config{}, "alpha")
	ctx := ctxT(t)
	newSession(t, s, "s1")
	r := CallRow{SessionID: "s1", CallID: "sum-1", AgentID: "alpha", At: t0, Purpose: "summary", PromptTokens: 50, CompletionTokens: 5, Cost: 0.25, CostSource: "price", Outcome: "ok"}
	told := 0
	s.CallsStored = func(rows []CallRow) { told += len(rows) }
	for i, want := range []bool{true, false} {
		if fresh, err := s.InsertCall(ctx, r); err != nil || fresh != want {
			t.Fatalf("InsertCall #%d = %v, %v; want %v", i+1, fresh, err, want)
		}
	}
	if told != 1 {
		t.Errorf("CallsStored heard %d rows of one call inserted twice; want 1", told)
	}
	tot, err := s.SpendTotals(ctx, "alpha", t0, t0, nil)
	if err != nil || tot.AgentDay.Tokens != 55 || tot.AgentDay.Cost != 0.25 {
		t.Fatalf("SpendTotals = %+v, %v; want 55 tokens, 0.25", tot, err)
	}
	if tot, _ := s.SpendTotals(ctx, "beta", t0, t0, nil); tot.AgentDay.Tokens != 0 || tot.AllDay.Tokens != 55 {
		t.Errorf("SpendTotals(beta) = %+v; want nothing of beta's, 55 for the installation", tot)
	}
	if err := s.AddAllowance(ctx, Allowance{AgentID: "alpha", Amount: 5, Unit: "currency", Until: t0.Add(time.Hour), GrantedBy: "admin"}); err != nil {
		t.Fatal(err)
	}
	if a, err := s.Allowances(ctx, t0); err != nil || len(a) != 1 || a[0].Amount != 5 {
		t.Errorf("Allowances(t0) = %+v, %v; want the raise", a, err)
	}
	if a, err := s.Allowances(ctx, t0.Add(2*time.Hour)); err != nil || len(a) != 0 {
		t.Errorf("Allowances after its time = %+v, %v; want none", a, err)
	}
}

// A warn_at notice is claimed once, also by a store opened later (a
// restarted choird).
func TestClaimSpendNoticeOnce(t *testing.T) {
	s := newStore(t, Config{}, "alpha")
	ctx := ctxT(t)
	key := "agent|per_day_tokens|alpha|2026-11-25"
	for i, want := range []bool{true, false} {
		if first, err := s.ClaimSpendNotice(ctx, key, t0); err != nil || first != want {
			t.Fatalf("ClaimSpendNotice #%d = %v, %v; want %v", i+1, first, err, want)
		}
	}
	if first, err := s.ClaimSpendNotice(ctx, "agent|per_day_tokens|alpha|2026-11-26", t0.Add(24*time.Hour)); err != nil || !first {
		t.Errorf("the next day's notice = %v, %v; want a first claim", first, err)
	}
}
