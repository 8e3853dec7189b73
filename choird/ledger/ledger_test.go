package ledger

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"choir/choird/store"
	"choir/internal/config"
	"choir/internal/rpc"
)

// fakeStore is the ledger table in memory.
type fakeStore struct {
	mu     sync.Mutex
	rows   map[string]store.CallRow // by call id
	allow  []store.Allowance
	totals int // SpendTotals calls
	sent   map[string]bool
	// read, when set, is called by SpendTotals with the agent asked for,
	// after the totals are taken and before they are returned.
	read func(agentID string)
}

func (f *fakeStore) ClaimSpendNotice(_ context.Context, key string, _ time.Time) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.sent[key] {
		return false, nil
	}
	if f.sent == nil {
		f.sent = map[string]bool{}
	}
	f.sent[key] = true
	return true, nil
}

var _ Store = (*fakeStore)(nil)

func (f *fakeStore) SpendTotals(_ context.Context, agentID string, day, month time.Time, ids []string) (store.Totals, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.totals++
	var t store.Totals
	for _, r := range f.rows {
		add := func(s *store.Spent) { s.Cost += r.Cost; s.Tokens += r.PromptTokens + r.CompletionTokens }
		if !r.At.Before(month) {
			add(&t.AllMonth)
			if r.AgentID == agentID {
				add(&t.AgentMonth)
			}
		}
		if !r.At.Before(day) {
			add(&t.AllDay)
			if r.AgentID == agentID {
				add(&t.AgentDay)
			}
		}
	}
	for _, id := range ids {
		if _, ok := f.rows[id]; ok {
			t.Stored = append(t.Stored, id)
		}
	}
	if read := f.read; read != nil {
		f.mu.Unlock()
		read(agentID)
		f.mu.Lock()
	}
	return t, nil
}

func (f *fakeStore) InsertCall(_ context.Context, r store.CallRow) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.rows[r.CallID]; ok {
		return false, nil
	}
	f.rows[r.CallID] = r
	return true, nil
}

func (f *fakeStore) AddAllowance(_ context.Context, a store.Allowance) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.allow = append(f.allow, a)
	return nil
}

func (f *fakeStore) Allowances(_ context.Context, t time.Time) ([]store.Allowance, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []store.Allowance
	for _, a := range f.allow {
		if a.Until.After(t) {
			out = append(out, a)
		}
	}
	return out, nil
}

// stored puts a call's record in the table, as a heartbeat's batch does.
func (f *fakeStore) stored(agent, id string, at time.Time, tokens int64, cost float64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rows[id] = store.CallRow{CallID: id, AgentID: agent, At: at, PromptTokens: tokens, Cost: cost}
}

var noon = time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)

func ptr[T any](v T) *T { return &v }

func newLedger(t testing.TB, cfg *config.Config) (*Ledger, *fakeStore, func() []string, *time.Time) {
	t.Helper()
	fs := &fakeStore{rows: map[string]store.CallRow{}}
	now := noon
	var mu sync.Mutex
	var notices []string
	l := &Ledger{Store: fs, Config: func() *config.Config { return cfg }, Log: slog.New(slog.DiscardHandler),
		Now: func() time.Time { return now },
		Notify: func(agent, text string) {
			mu.Lock()
			notices = append(notices, agent+": "+text)
			mu.Unlock()
		}}
	return l, fs, func() []string { mu.Lock(); defer mu.Unlock(); return append([]string(nil), notices...) }, &now
}

func reserve(t *testing.T, l *Ledger, agent, id string, prompt, out int64) rpc.SpendResp {
	t.Helper()
	resp, err := l.Reserve(context.Background(), agent, "s-"+agent, rpc.SpendReq{Op: rpc.SpendReserve, CallID: id, Model: "m", PromptTokens: prompt, MaxOutputTokens: out})
	if err != nil {
		t.Fatalf("Reserve(%s) = %v", id, err)
	}
	return resp
}

func tokenCaps(agentDay int64) *config.Config {
	return &config.Config{
		Models: map[string]config.Model{"m": {Price: &config.Price{Input: 1, Output: 2}}},
		Agents: map[string]config.Agent{"a1": {Spend: &config.Spend{PerDayTokens: &agentDay}}, "a2": {}},
	}
}

// Without caps nothing is asked of the store.
func TestNoCapsNoQuery(t *testing.T) {
	l, fs, _, _ := newLedger(t, &config.Config{Agents: map[string]config.Agent{"a1": {}}})
	for i := range 3 {
		if r := reserve(t, l, "a1", fmt.Sprint(i), 1e9, 1e9); !r.Allowed {
			t.Fatalf("Reserve without caps = %+v; want allowed", r)
		}
	}
	if fs.totals != 0 || l.Open() != 0 {
		t.Errorf("store asked %d times, %d reservations open; want none", fs.totals, l.Open())
	}
}

// Reservations count until their record is stored, a settle shrinks one to
// what the call used, and a refusal says which cap, what was spent, when
// it resets and how to raise it.
func TestReservationsHoldTheCap(t *testing.T) {
	l, fs, _, _ := newLedger(t, tokenCaps(1000))
	if r := reserve(t, l, "a1", "c1", 300, 200); !r.Allowed {
		t.Fatalf("c1 = %+v; want allowed (500 of 1000)", r)
	}
	if r := reserve(t, l, "a1", "c2", 300, 200); !r.Allowed {
		t.Fatalf("c2 = %+v; want allowed (1000 of 1000)", r)
	}
	r := reserve(t, l, "a1", "c3", 1, 0)
	if r.Allowed || r.Cap != "agent per_day_tokens" {
		t.Fatalf("c3 = %+v; want refused by the agent's per_day_tokens", r)
	}
	for _, want := range []string{"agent a1's daily cap in tokens of 1000 tokens", "1000 tokens spent or reserved", "resets 2026-11-26 00:00 UTC",
		"choirctl usage allow a1 <amount> --tokens --until <time>", "agents.a1.spend.per_day_tokens", "session goes on"} {
		if !strings.Contains(r.Message, want) {
			t.Errorf("refusal %q; want it to say %q", r.Message, want)
		}
	}
	// Another agent has no cap of its own.
	if r := reserve(t, l, "a2", "d1", 5000, 0); !r.Allowed {
		t.Errorf("a2 = %+v; want allowed", r)
	}
	// c1 used 100: settled, then stored.
	if err := l.Settle(context.Background(), "a1", "s-a1", rpc.SpendReq{Op: rpc.SpendSettle, CallID: "c1", Record: &rpc.CallRecord{CallID: "c1", PromptTokens: 90, CompletionTokens: 10}}); err != nil {
		t.Fatal(err)
	}
	if r := reserve(t, l, "a1", "c4", 300, 100); !r.Allowed {
		t.Fatalf("c4 after c1 settled at 100 = %+v; want allowed (100+500+400)", r)
	}
	fs.stored("a1", "c1", noon, 100, 0)
	if r := reserve(t, l, "a1", "c5", 0, 1); r.Allowed {
		t.Fatalf("c5 = %+v; want refused: 100 stored + 500 + 400 open", r)
	}
	if l.Open() != 2 { // c2, c4: c1 is in the table now; a2's d1 met no cap
		t.Errorf("open = %d; want 2", l.Open())
	}
}

// A record that never reaches the log is stored by its settle, once.
func TestUnreplicatedSettleStoresTheRecord(t *testing.T) {
	l, fs, _, _ := newLedger(t, tokenCaps(1000))
	reserve(t, l, "a1", "sum", 100, 100)
	req := rpc.SpendReq{Op: rpc.SpendSettle, CallID: "sum", Unreplicated: true, Record: &rpc.CallRecord{CallID: "sum", Purpose: "summary", PromptTokens: 80, CompletionTokens: 20}}
	for range 2 {
		if err := l.Settle(context.Background(), "a1", "s-a1", req); err != nil {
			t.Fatal(err)
		}
	}
	if len(fs.rows) != 1 || l.Open() != 0 {
		t.Errorf("rows %d, open %d; want the record once and no reservation", len(fs.rows), l.Open())
	}
	// A settle from another agent's session does not touch the reservation.
	reserve(t, l, "a1", "x", 100, 100)
	l.Settle(context.Background(), "a2", "s-a2", rpc.SpendReq{Op: rpc.SpendSettle, CallID: "x", Record: &rpc.CallRecord{CallID: "x"}})
	if r := reserve(t, l, "a1", "y", 0, 701); r.Allowed {
		t.Errorf("y = %+v; want refused: 100 stored + 200 still reserved for x", r)
	}
}

// Caps hold across the agent's and the installation's, per day and month,
// in currency; an allowance raises them until its time; a new day starts
// over; expired reservations free their share.
func TestCurrencyCapsAllowancesAndPeriods(t *testing.T) {
	cfg := &config.Config{
		Models: map[string]config.Model{"m": {Price: &config.Price{Input: 1e6, Output: 1e6}}}, // 1 per token
		Spend:  &config.Spend{Currency: "EUR", PerMonth: ptr(50.0)},
		Agents: map[string]config.Agent{"a1": {Spend: &config.Spend{PerDay: ptr(10.0)}}, "a2": {}},
	}
	l, fs, notices, now := newLedger(t, cfg)
	fs.stored("a2", "old", noon.AddDate(0, 0, -3), 0, 45) // this month, another agent
	if r := reserve(t, l, "a1", "c1", 4, 1); !r.Allowed {
		t.Fatalf("c1 = %+v; want allowed (50 of 50 this month)", r)
	}
	r := reserve(t, l, "a1", "c2", 1, 0)
	if r.Allowed || r.Cap != "installation per_month" || !strings.Contains(r.Message, "the installation's monthly cap of 50.00 EUR") ||
		!strings.Contains(r.Message, "resets 2026-12-01 00:00 UTC") {
		t.Fatalf("c2 = %+v; want the installation's monthly cap, reset on the 1st", r)
	}
	if err := l.Allow(context.Background(), store.Allowance{AgentID: "a1", Amount: 20, Unit: "currency", Until: noon.Add(5 * time.Minute), GrantedBy: "test"}); err != nil {
		t.Fatal(err)
	}
	if r := reserve(t, l, "a1", "c3", 5, 0); !r.Allowed {
		t.Fatalf("c3 with 20 allowed = %+v; want allowed", r)
	}
	if r := reserve(t, l, "a2", "c4", 1, 0); r.Allowed {
		t.Fatalf("a2's c4 = %+v; want refused: the allowance is a1's", r)
	}
	*now = noon.Add(10 * time.Minute) // allowance over, reservations still open
	if r := reserve(t, l, "a1", "c5", 1, 0); r.Allowed {
		t.Fatalf("c5 after the allowance = %+v; want refused", r)
	}
	*now = noon.Add(DefaultTTL + time.Hour) // c1 and c3 expired without records
	if r := reserve(t, l, "a1", "c6", 4, 0); !r.Allowed {
		t.Fatalf("c6 after expiry = %+v; want allowed (45 + 4 of 50)", r)
	}
	waitNotices(t, notices, 1) // the installation's month passed 80 %
	for _, n := range notices() {
		if !strings.HasPrefix(n, "a1: Spend notice: ") {
			t.Errorf("notice %q; want a1's spend notice", n)
		}
	}
}

// warn_at tells the DMs once per cap and period.
func TestWarnOnce(t *testing.T) {
	l, _, notices, _ := newLedger(t, tokenCaps(1000))
	for i := range 4 {
		reserve(t, l, "a1", fmt.Sprint(i), 100, 100) // 200, 400, 600, 800, then 1000
	}
	reserve(t, l, "a1", "last", 100, 100)
	waitNotices(t, notices, 1)
	if n := notices()[0]; !strings.Contains(n, "daily cap in tokens") || !strings.Contains(n, "80%") {
		t.Errorf("notice %q; want the daily token cap at 80%%", n)
	}
}

// A restarted choird (a new ledger on the same store) does not send a
// notice the one before it sent; the next day's notice still goes out.
func TestWarnOnceAcrossRestart(t *testing.T) {
	l, fs, notices, now := newLedger(t, tokenCaps(1000))
	for i := range 4 { // 800 of 1000 tokens: the 80% notice
		reserve(t, l, "a1", fmt.Sprint(i), 100, 100)
		fs.stored("a1", fmt.Sprint(i), *now, 200, 0)
	}
	waitNotices(t, notices, 1)

	restarted, _, notices2, now2 := newLedger(t, tokenCaps(1000))
	restarted.Store = fs
	*now2 = *now
	if r := reserve(t, restarted, "a1", "after-restart", 10, 10); !r.Allowed {
		t.Fatalf("a call under the cap after the restart was refused: %+v", r)
	}
	*now2 = now.Add(24 * time.Hour) // the next day: spent starts again
	for i := range 4 {
		reserve(t, restarted, "a1", fmt.Sprint("next-day-", i), 100, 100)
	}
	waitNotices(t, notices2, 1)
	if n := notices2()[0]; !strings.Contains(n, "2026-11-27") {
		t.Errorf("notice after the restart %q; want only the next day's (resetting 2026-11-27)", n)
	}
}

// waitNotices waits for n notices (Notify runs in its own goroutine).
func waitNotices(t *testing.T, notices func() []string, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for len(notices()) < n && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if got := notices(); len(got) != n {
		t.Fatalf("notices = %q; want %d", got, n)
	}
}

// Many reservations at once never promise more than the cap.
func TestParallelReservationsStayUnderTheCap(t *testing.T) {
	l, _, _, _ := newLedger(t, tokenCaps(10_000))
	var wg sync.WaitGroup
	var mu sync.Mutex
	var granted int64
	for i := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := l.Reserve(context.Background(), "a1", "s", rpc.SpendReq{Op: rpc.SpendReserve, CallID: fmt.Sprint(i), Model: "m", PromptTokens: 700, MaxOutputTokens: 300})
			if err == nil && r.Allowed {
				mu.Lock()
				granted += 1000
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if granted != 10_000 {
		t.Errorf("granted %d tokens to 64 calls of 1000 at once; want exactly the cap, 10000", granted)
	}
}

// installationTokens caps the installation's day at max tokens; agents a1
// and a2 have no caps of their own.
func installationTokens(max int64) *config.Config {
	return &config.Config{Spend: &config.Spend{PerDayTokens: &max},
		Models: map[string]config.Model{"m": {}}, Agents: map[string]config.Agent{"a1": {}, "a2": {}}}
}

// A reserve reading the ledger does not hold up another agent's: the
// lock is not held across the database round trip.
func TestReservesDoNotWaitForEachOthersRead(t *testing.T) {
	l, fs, _, _ := newLedger(t, installationTokens(100_000))
	entered, release := make(chan struct{}), make(chan struct{})
	fs.read = func(agent string) {
		if agent == "a1" {
			close(entered)
			<-release
		}
	}
	done := make(chan error, 1)
	go func() {
		_, err := l.Reserve(context.Background(), "a1", "s-a1", rpc.SpendReq{Op: rpc.SpendReserve, CallID: "slow", Model: "m", PromptTokens: 10})
		done <- err
	}()
	<-entered // a1's reserve is in its read
	got := make(chan rpc.SpendResp, 1)
	go func() {
		r, _ := l.Reserve(context.Background(), "a2", "s-a2", rpc.SpendReq{Op: rpc.SpendReserve, CallID: "fast", Model: "m", PromptTokens: 10})
		got <- r
	}()
	select {
	case r := <-got:
		if !r.Allowed {
			t.Errorf("a2's reserve = %+v; want allowed", r)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("a2's reserve waited for a1's read to finish")
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// A reservation whose record is stored, and which closes, while another
// reserve reads the ledger is still counted by that reserve: its read may
// predate the record. Without that, both calls would pass the cap.
func TestAReservationClosedDuringAReadStillCounts(t *testing.T) {
	l, fs, _, _ := newLedger(t, installationTokens(1500))
	if r, err := l.Reserve(context.Background(), "a1", "s-a1", rpc.SpendReq{Op: rpc.SpendReserve, CallID: "x", Model: "m", PromptTokens: 1000}); err != nil || !r.Allowed {
		t.Fatalf("first reserve = %+v, %v; want allowed", r, err)
	}
	entered, release := make(chan struct{}), make(chan struct{})
	fs.read = func(agent string) {
		if agent == "a2" {
			close(entered)
			<-release
		}
	}
	got := make(chan rpc.SpendResp, 1)
	go func() {
		r, _ := l.Reserve(context.Background(), "a2", "s-a2", rpc.SpendReq{Op: rpc.SpendReserve, CallID: "y", Model: "m", PromptTokens: 1000})
		got <- r
	}()
	<-entered // a2's totals are taken: x's record is not in them
	if err := l.Record(context.Background(), store.CallRow{SessionID: "s-a1", CallID: "x", AgentID: "a1", At: noon, PromptTokens: 1000}); err != nil {
		t.Fatal(err)
	}
	if n := l.Open(); n != 0 {
		t.Fatalf("%d reservations open after x's record; want x closed", n)
	}
	close(release)
	if r := <-got; r.Allowed || r.Cap != "installation per_day_tokens" {
		t.Errorf("a2's reserve = %+v; want refused by the installation's cap (x's 1000 tokens + 1000 > 1500)", r)
	}
	l.mu.Lock()
	left := len(l.closed)
	l.mu.Unlock()
	if left != 0 {
		t.Errorf("%d closed reservations kept after every read ended; want none", left)
	}
	fs.read = nil
	if r, _ := l.Reserve(context.Background(), "a2", "s-a2", rpc.SpendReq{Op: rpc.SpendReserve, CallID: "z", Model: "m", PromptTokens: 500}); !r.Allowed {
		t.Errorf("a reserve that fits beside x's record = %+v; want allowed (x counted once)", r)
	}
}
