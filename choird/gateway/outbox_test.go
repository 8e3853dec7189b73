package gateway_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"choir/choird/gateway"
	"choir/choird/store"
	"choir/internal/config"
	"choir/internal/ctl"
	"choir/internal/rpc"
	"choir/internal/telegram"
	"choir/testkit"
	"choir/testkit/pgtest"
	"choir/testkit/telegramtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// outboxRig is a fake Bot API, a fake control plane with alpha bound to
// alice, and the durable outbox in Postgres; gateways over them are
// started and stopped by the test, as choird restarts.
type outboxRig struct {
	t    testing.TB
	srv  *telegramtest.Server
	bot  telegramtest.BotID
	fc   *fakeControl
	st   *store.Store
	logs *testkit.Buffer
}

func newOutboxRig(t testing.TB) *outboxRig {
	t.Helper()
	db := pgtest.DB(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	st, err := store.Open(ctx, store.Config{DSN: db.DSN, Namespace: db.Namespace})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Drop(context.Background()); st.Close() })
	if err := st.Bootstrap(ctx, []string{"alpha"}, 3); err != nil {
		t.Fatal(err)
	}
	srv := telegramtest.New(t)
	srv.SetWaitTimeout(3 * time.Minute) // a deadline against a hang: the machine may be busy (-race, 1000 messages)
	r := &outboxRig{t: t, srv: srv, bot: srv.AddBot(token, "choir_bot"), fc: newFakeControl(t), st: st, logs: &testkit.Buffer{}}
	r.fc.bind("alice", "alpha")
	return r
}

// gateway builds a gateway over the rig's outbox, not yet running.
func (r *outboxRig) gateway(tweak func(*gateway.Config)) *gateway.Gateway {
	r.t.Helper()
	cfg := gateway.Config{
		Gateways: map[string]config.Gateway{"work": {Type: "telegram", APIBase: r.srv.URL(), Secret: "tg-work"}},
		DMs: map[string]config.DM{
			"admin": {Gateway: "work", UserID: fmt.Sprint(adminUser), Admin: true},
			"alice": {Gateway: "work", UserID: fmt.Sprint(aliceUser)},
		},
		Secrets:     config.Secrets{"tg-work": token},
		Control:     r.fc,
		Log:         slog.New(slog.NewJSONHandler(r.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		PollTimeout: time.Second,
		BackoffMin:  time.Millisecond,
		BackoffMax:  5 * time.Millisecond,
		Limiter:     telegram.LimiterConfig{PerChatInterval: time.Millisecond, DefaultRetryAfter: time.Millisecond},
		Outbox:      r.st,
	}
	if tweak != nil {
		tweak(&cfg)
	}
	gw, err := gateway.New(cfg)
	if err != nil {
		r.t.Fatalf("gateway.New() = %v", err)
	}
	return gw
}

// run runs gw until the returned function stops it (and waits for Run).
func (r *outboxRig) run(gw *gateway.Gateway) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		gw.Run(ctx)
	}()
	stop = sync.OnceFunc(func() { cancel(); <-done })
	r.t.Cleanup(stop)
	return stop
}

func (r *outboxRig) deliver(gw *gateway.Gateway, msg rpc.DMSend) error {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return gw.Deliver(ctx, "alpha", "alice", msg)
}

// stats is alice's outbox as agent status shows it.
func (r *outboxRig) stats() store.OutboxStat {
	r.t.Helper()
	stats, err := r.st.OutboxStats(context.Background(), "alpha")
	if err != nil {
		r.t.Fatal(err)
	}
	for _, s := range stats {
		if s.DM == "alice" {
			return s
		}
	}
	return store.OutboxStat{}
}

func numbered(n int) []string {
	var out []string
	for i := range n {
		out = append(out, fmt.Sprintf("message %d", i+1))
	}
	return out
}

// TestOutboxQueuesThenDeliversInOrder: choir.dm.send to a Telegram DM
// returns once the message is queued, before Telegram has it (here the
// gateway is not even running: no message reaches Telegram); status shows
// the depth; once the sender runs, every message arrives once, in order,
// the reply on the first part of a long message, and the depth is 0.
func TestOutboxQueuesThenDeliversInOrder(t *testing.T) {
	r := newOutboxRig(t)
	gw := r.gateway(nil)
	want := numbered(5)
	long := strings.Repeat("x", 4096) + "tail of the long message"
	asked := r.srv.InjectText(r.bot, aliceUser, "tell me a long story")
	for i, text := range want {
		msg := rpc.DMSend{ID: fmt.Sprint("call-", i), Kind: rpc.DMReply, Text: text}
		if i == 2 {
			msg.Text, msg.ReplyTo = long, fmt.Sprintf("tg-work-%d-%d", aliceUser, asked)
		}
		if err := r.deliver(gw, msg); err != nil {
			t.Fatalf("Deliver(%q) = %v; want it queued", text, err)
		}
	}
	if sent := r.srv.Sent(r.bot, aliceUser); len(sent) != 0 {
		t.Fatalf("Telegram got %d messages before any sender ran; Deliver must only queue", len(sent))
	}
	if st := r.stats(); st.Queued != 5 || st.Oldest.IsZero() {
		t.Errorf("outbox before sending = %+v; want 5 queued with the oldest's time", st)
	}

	r.run(gw)
	sent := r.srv.WaitSent(t, r.bot, aliceUser, 6) // the long one is two messages
	var got []string
	for _, s := range sent {
		got = append(got, s.Text)
	}
	wantTexts := slices.Concat(want[:2], []string{strings.Repeat("x", 4096), "tail of the long message"}, want[3:])
	if !slices.Equal(got, wantTexts) {
		t.Errorf("Telegram got %q;\nwant %q", short(got), short(wantTexts))
	}
	if sent[2].ReplyTo != asked || sent[3].ReplyTo != 0 {
		t.Errorf("the long message's parts reply to %d and %d; want %d on the first only", sent[2].ReplyTo, sent[3].ReplyTo, asked)
	}
	r.srv.Wait(t, "the outbox to be empty", func() bool { return r.stats().Queued == 0 })
}

func short(texts []string) []string {
	out := make([]string, len(texts))
	for i, s := range texts {
		if len(s) > 30 {
			s = s[:30] + "…"
		}
		out[i] = s
	}
	return out
}

// TestOutboxResendIsANoop: the same message (same key) sent twice, with a
// file, reaches Telegram once, its file once; both calls succeed.
func TestOutboxResendIsANoop(t *testing.T) {
	r := newOutboxRig(t)
	ws, _ := r.fc.WorkspacePath("alpha")
	send := filepath.Join(ws, ".choirtmp", "send")
	os.MkdirAll(send, 0o755)
	os.WriteFile(filepath.Join(send, "report.pdf"), []byte("%PDF once"), 0o644)
	gw := r.gateway(nil)
	msg := rpc.DMSend{ID: "call-1", Kind: rpc.DMReply, Text: "the report", Files: []string{".choirtmp/send/report.pdf"}}
	for i := range 2 {
		if err := r.deliver(gw, msg); err != nil {
			t.Fatalf("Deliver #%d = %v", i+1, err)
		}
	}
	if _, err := os.Stat(filepath.Join(send, "report.pdf")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("report.pdf still in .choirtmp/send/ once queued (%v): the agent's next message would name it again", err)
	}
	if err := r.deliver(gw, rpc.DMSend{ID: "call-2", Kind: rpc.DMReply, Text: "after"}); err != nil {
		t.Fatal(err)
	}
	r.run(gw)
	sent := r.srv.WaitSent(t, r.bot, aliceUser, 3)
	r.srv.Wait(t, "the outbox to be empty", func() bool { return r.stats().Queued == 0 })
	sent = r.srv.Sent(r.bot, aliceUser)
	if got := methods(sent); got != "sendMessage sendDocument sendMessage" {
		t.Fatalf("Telegram got %s (%q); want the text, its file, then the next message, each once", got, texts(sent))
	}
	if string(sent[1].File.Data) != "%PDF once" || sent[2].Text != "after" {
		t.Errorf("sent %q then %q", sent[1].File.Data, sent[2].Text)
	}
	if entries, _ := os.ReadDir(filepath.Join(ws, ".choirtmp", "outbox")); len(entries) != 0 {
		t.Errorf(".choirtmp/outbox/ after delivery holds %d entries; want it empty", len(entries))
	}
}

func texts(sent []telegramtest.Sent) []string {
	var out []string
	for _, s := range sent {
		out = append(out, s.Text)
	}
	return out
}

// stepClock is the limiter's clock: waits under a second pass at once;
// longer ones (a 429's retry_after) wait until the test advances it.
type stepClock struct {
	mu      sync.Mutex
	now     time.Time
	waiters []stepWaiter
}

type stepWaiter struct {
	at time.Time
	ch chan time.Time
}

func (c *stepClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *stepClock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan time.Time, 1)
	if d < time.Second {
		c.now = c.now.Add(d)
		ch <- c.now
		return ch
	}
	c.waiters = append(c.waiters, stepWaiter{c.now.Add(d), ch})
	return ch
}

// longest is the latest time anything waits for.
func (c *stepClock) longest() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	var d time.Duration
	for _, w := range c.waiters {
		d = max(d, w.at.Sub(c.now))
	}
	return d
}

func (c *stepClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	kept := c.waiters[:0]
	for _, w := range c.waiters {
		if w.at.After(c.now) {
			kept = append(kept, w)
			continue
		}
		w.ch <- c.now
	}
	c.waiters = kept
}

// TestOutboxHonoursRetryAfter: Telegram answers the first send with 429
// retry_after 30; nothing more is sent until 30 s have passed on the
// limiter's clock, then every message goes, once, in order.
func TestOutboxHonoursRetryAfter(t *testing.T) {
	r := newOutboxRig(t)
	clock := &stepClock{now: time.Unix(1_700_000_000, 0)}
	gw := r.gateway(func(c *gateway.Config) { c.Limiter.Clock = clock })
	r.srv.FailNext(r.bot, "sendMessage", 1, telegramtest.TooManyRequests(30))
	want := numbered(3)
	for i, text := range want {
		if err := r.deliver(gw, rpc.DMSend{ID: fmt.Sprint("c", i), Kind: rpc.DMReply, Text: text}); err != nil {
			t.Fatal(err)
		}
	}
	r.run(gw)
	r.srv.Wait(t, "the 429 and the limiter's pause", func() bool {
		return r.srv.CallCount(r.bot, "sendMessage") == 1 && clock.longest() >= 29*time.Second
	})
	if n := len(r.srv.Sent(r.bot, aliceUser)); n != 0 {
		t.Fatalf("%d messages sent during the pause Telegram asked for", n)
	}
	clock.advance(31 * time.Second)
	r.srv.WaitSent(t, r.bot, aliceUser, 3)
	r.srv.Wait(t, "the outbox to be empty", func() bool { return r.stats().Queued == 0 })
	if got := texts(r.srv.Sent(r.bot, aliceUser)); !slices.Equal(got, want) {
		t.Errorf("Telegram got %q; want %q", got, want)
	}
	if n := r.srv.CallCount(r.bot, "sendMessage"); n != 4 {
		t.Errorf("sendMessage called %d times; want 4 (the refused one again, then the other two)", n)
	}
}

// TestOutboxExactlyOnceAcrossRestart: choird stops while a send hangs in
// Telegram (never answered); a new gateway over the same outbox sends that
// message again and the rest, so every message reaches the DM exactly
// once and in order, and the log says which part was started before the
// stop. A message Telegram had accepted before the stop is not sent again.
func TestOutboxExactlyOnceAcrossRestart(t *testing.T) {
	r := newOutboxRig(t)
	want := numbered(6)
	first := r.gateway(func(c *gateway.Config) { c.ShutdownGrace = 50 * time.Millisecond })
	stop := r.run(first)
	for i, text := range want[:2] {
		if err := r.deliver(first, rpc.DMSend{ID: fmt.Sprint("c", i), Kind: rpc.DMReply, Text: text}); err != nil {
			t.Fatal(err)
		}
	}
	r.srv.WaitSent(t, r.bot, aliceUser, 2)
	// The third send hangs: Telegram never answers it.
	r.srv.FailNext(r.bot, "sendMessage", 1, telegramtest.Hang())
	for i, text := range want[2:] {
		if err := r.deliver(first, rpc.DMSend{ID: fmt.Sprint("c", i+2), Kind: rpc.DMReply, Text: text}); err != nil {
			t.Fatal(err)
		}
	}
	r.srv.Wait(t, "the third send to hang", func() bool { return r.srv.InFlight(r.bot, "sendMessage") == 1 })
	stop()
	if got := texts(r.srv.Sent(r.bot, aliceUser)); !slices.Equal(got, want[:2]) {
		t.Fatalf("before the restart Telegram got %q; want %q", got, want[:2])
	}
	if st := r.stats(); st.Queued != 4 {
		t.Fatalf("outbox after the stop = %+v; want 4 queued", st)
	}

	r.run(r.gateway(nil))
	r.srv.WaitSent(t, r.bot, aliceUser, 6)
	r.srv.Wait(t, "the outbox to be empty", func() bool { return r.stats().Queued == 0 })
	if got := texts(r.srv.Sent(r.bot, aliceUser)); !slices.Equal(got, want) {
		t.Errorf("after the restart Telegram got %q; want %q, each once", got, want)
	}
	if !strings.Contains(r.logs.String(), "may get it twice") {
		t.Errorf("the log does not name the part resent after the stop:\n%s", r.logs.String())
	}
}

// TestOutboxRefusedChat: Telegram answers 403 (the user blocked the bot):
// the message and those queued behind it are marked failed with the
// reason, not retried, logged, and agent status shows the refusal; a later
// message is tried again and, the user having unblocked the bot, delivered,
// which ends the refusal.
func TestOutboxRefusedChat(t *testing.T) {
	for _, tc := range []struct {
		name  string
		fault telegramtest.Fault
		want  string
	}{
		{"blocked", telegramtest.Forbidden("bot was blocked by the user"), "bot was blocked by the user"},
		{"chat not found", telegramtest.BadRequest("chat not found"), "chat not found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newOutboxRig(t)
			gw := r.gateway(nil)
			r.srv.FailNext(r.bot, "sendMessage", 1, tc.fault)
			for i, text := range numbered(3) {
				if err := r.deliver(gw, rpc.DMSend{ID: fmt.Sprint("c", i), Kind: rpc.DMReply, Text: text}); err != nil {
					t.Fatal(err)
				}
			}
			r.run(gw)
			r.srv.Wait(t, "the messages to be marked failed", func() bool { return r.stats().Failed == 3 })
			st := r.stats()
			if st.Queued != 0 || !strings.Contains(st.LastError, tc.want) || !strings.Contains(st.LastError, "alice") {
				t.Errorf("outbox after the refusal = %+v; want 3 failed, none queued, the refusal naming the DM", st)
			}
			if n := r.srv.CallCount(r.bot, "sendMessage"); n != 1 {
				t.Errorf("sendMessage called %d times; want 1: a refused chat is not retried", n)
			}
			if !strings.Contains(r.logs.String(), "Telegram refuses the DM") {
				t.Errorf("the refusal is not in the log:\n%s", r.logs.String())
			}
			if err := r.deliver(gw, rpc.DMSend{ID: "later", Kind: rpc.DMReply, Text: "unblocked now"}); err != nil {
				t.Fatal(err)
			}
			r.srv.WaitSent(t, r.bot, aliceUser, 1)
			r.srv.Wait(t, "the refusal to end", func() bool { st := r.stats(); return st.Queued == 0 && st.LastError == "" })
		})
	}
}

// TestOutboxCap: 10,000 sends from one agent whose DM's sender is not
// running: the first 1,000 (the default cap) are queued, every later one
// is refused with an error that says what, why and what to do, and its
// file stays in .choirtmp/send/; then all 1,000 reach Telegram, in order.
func TestOutboxCap(t *testing.T) {
	if testing.Short() {
		t.Skip("10,000 sends through Postgres")
	}
	r := newOutboxRig(t)
	ws, _ := r.fc.WorkspacePath("alpha")
	send := filepath.Join(ws, ".choirtmp", "send")
	os.MkdirAll(send, 0o755)
	gw := r.gateway(func(c *gateway.Config) { c.Limiter.PerBotLimit = 1 << 20 })
	const sends = 10_000
	var refused error
	for i := range sends {
		msg := rpc.DMSend{ID: fmt.Sprint("c", i), Kind: rpc.DMReply, Text: fmt.Sprint("m", i)}
		if i == gateway.DefaultOutboxMax { // the first refused one carries a file
			os.WriteFile(filepath.Join(send, "late.txt"), []byte("late"), 0o644)
			msg.Files = []string{".choirtmp/send/late.txt"}
		}
		err := r.deliver(gw, msg)
		switch {
		case i < gateway.DefaultOutboxMax && err != nil:
			t.Fatalf("send %d below the cap = %v", i, err)
		case i >= gateway.DefaultOutboxMax && !errors.Is(err, gateway.ErrOutboxFull):
			t.Fatalf("send %d past the cap = %v; want ErrOutboxFull", i, err)
		}
		if i == gateway.DefaultOutboxMax {
			refused = err
		}
	}
	for _, want := range []string{"alpha", "1000 messages", "agents.alpha.outbox_max", "choirctl agent status alpha", "send it again"} {
		if !strings.Contains(refused.Error(), want) {
			t.Errorf("the refusal %q does not say %q", refused, want)
		}
	}
	if data, err := os.ReadFile(filepath.Join(send, "late.txt")); err != nil || string(data) != "late" {
		t.Errorf("the refused message's file: %q, %v; want it back in .choirtmp/send/", data, err)
	}
	if st := r.stats(); st.Queued != gateway.DefaultOutboxMax {
		t.Fatalf("outbox depth = %d; want %d", st.Queued, gateway.DefaultOutboxMax)
	}
	r.run(gw)
	sent := r.srv.WaitSent(t, r.bot, aliceUser, gateway.DefaultOutboxMax)
	for i, s := range sent {
		if s.Text != fmt.Sprint("m", i) {
			t.Fatalf("Telegram's message %d is %q; want m%d (order, nothing lost)", i, s.Text, i)
		}
	}
}

// TestOutboxFiles: a message's files leave .choirtmp/send/ when it is
// queued and go out after its text; a file over the per-message cap is
// refused when queued, one removed from the queue meanwhile and one the
// agent replaced by a symlink to a host file are not sent; the closing
// notice lists all three, and the host file never reaches Telegram.
func TestOutboxFiles(t *testing.T) {
	r := newOutboxRig(t)
	ws, _ := r.fc.WorkspacePath("alpha")
	send := filepath.Join(ws, ".choirtmp", "send")
	os.MkdirAll(send, 0o755)
	for name, data := range map[string]string{"a.pdf": "%PDF a", "gone.pdf": "%PDF gone", "swapped.pdf": "%PDF swapped", "extra.pdf": "%PDF extra"} {
		os.WriteFile(filepath.Join(send, name), []byte(data), 0o644)
	}
	secret := filepath.Join(t.TempDir(), "host-secret")
	os.WriteFile(secret, []byte("host secret"), 0o600)
	gw := r.gateway(func(c *gateway.Config) { c.SendMaxFiles = 3 })
	err := r.deliver(gw, rpc.DMSend{ID: "f1", Kind: rpc.DMReply, Text: "three files", Files: []string{
		".choirtmp/send/a.pdf", ".choirtmp/send/gone.pdf", ".choirtmp/send/swapped.pdf", ".choirtmp/send/extra.pdf"}})
	if err != nil {
		t.Fatal(err)
	}
	if left, _ := os.ReadDir(send); len(left) != 0 {
		t.Errorf(".choirtmp/send/ holds %d files once the message is queued; want none", len(left))
	}
	// While queued: one file disappears, one becomes a symlink out.
	queued, _ := filepath.Glob(filepath.Join(ws, ".choirtmp", "outbox", "*", "*", "*.pdf"))
	for _, q := range queued {
		switch filepath.Base(q) {
		case "gone.pdf":
			os.Remove(q)
		case "swapped.pdf":
			os.Remove(q)
			os.Symlink(secret, q)
		}
	}
	r.run(gw)
	r.srv.Wait(t, "the outbox to be empty", func() bool { return r.stats().Queued == 0 })
	sent := r.srv.Sent(r.bot, aliceUser)
	if got := methods(sent); got != "sendMessage sendDocument sendMessage" {
		t.Fatalf("Telegram got %s %q; want the text, a.pdf, the notice", got, texts(sent))
	}
	if string(sent[1].File.Data) != "%PDF a" {
		t.Errorf("the file sent is %q; want a.pdf", sent[1].File.Data)
	}
	notice := sent[2].Text
	for _, want := range []string{"3 files", "gone.pdf: it was gone", "swapped.pdf", "extra.pdf: one message sends at most 3 files"} {
		if !strings.Contains(notice, want) {
			t.Errorf("the notice %q does not say %q", notice, want)
		}
	}
	for _, s := range sent {
		if s.File != nil && strings.Contains(string(s.File.Data), "host secret") {
			t.Errorf("a host file reached Telegram through a symlink in the outbox")
		}
	}
}

// stallingStore is the outbox whose record of one message's part never
// comes back: choird dies between Telegram accepting the part and the
// record (the window the sender's comment describes).
type stallingStore struct {
	gateway.OutboxStore
	stallID int64
	stalled chan struct{}
}

func (s *stallingStore) OutboxPartSent(ctx context.Context, id int64, part int, telegramID int64, note string, last bool) error {
	if id == s.stallID {
		close(s.stalled)
		<-ctx.Done()
		return ctx.Err()
	}
	return s.OutboxStore.OutboxPartSent(ctx, id, part, telegramID, note, last)
}

// TestOutboxCrashAfterTelegramAccepted pins down the guarantee's one
// exception: when the record of a part Telegram accepted is lost (choird
// stops before it reaches Postgres), the next choird sends that part again,
// logged as a possible duplicate; every other message is delivered once.
func TestOutboxCrashAfterTelegramAccepted(t *testing.T) {
	r := newOutboxRig(t)
	want := numbered(3)
	ids := map[string]int64{}
	setup := r.gateway(nil)
	for i, text := range want {
		if err := r.deliver(setup, rpc.DMSend{ID: fmt.Sprint("c", i), Kind: rpc.DMReply, Text: text}); err != nil {
			t.Fatal(err)
		}
		m, err := r.st.OutboxByKey(context.Background(), "alpha", fmt.Sprint("c", i))
		if err != nil {
			t.Fatal(err)
		}
		ids[text] = m.ID
	}
	stalling := &stallingStore{OutboxStore: r.st, stallID: ids["message 2"], stalled: make(chan struct{})}
	stop := r.run(r.gateway(func(c *gateway.Config) { c.Outbox = stalling; c.ShutdownGrace = 50 * time.Millisecond }))
	select {
	case <-stalling.stalled:
	case <-time.After(time.Minute):
		t.Fatal("message 2 was never sent")
	}
	stop()
	r.run(r.gateway(nil))
	r.srv.Wait(t, "the outbox to be empty", func() bool { return r.stats().Queued == 0 })
	if got, wantSent := texts(r.srv.Sent(r.bot, aliceUser)), []string{"message 1", "message 2", "message 2", "message 3"}; !slices.Equal(got, wantSent) {
		t.Errorf("Telegram got %q; want %q: only the part whose record was lost twice", got, wantSent)
	}
	if !strings.Contains(r.logs.String(), "may get it twice") {
		t.Errorf("the possible duplicate is not logged:\n%s", r.logs.String())
	}
}

// TestOutboxHostileMessages: what an agent may put in choir.dm.send. A
// refused message is refused before anything is queued (the depth does
// not move); an accepted one reaches the DM as sent.
func TestOutboxHostileMessages(t *testing.T) {
	r := newOutboxRig(t)
	ws, _ := r.fc.WorkspacePath("alpha")
	os.MkdirAll(filepath.Join(ws, ".choirtmp", "send"), 0o755)
	os.WriteFile(filepath.Join(ws, ".choirtmp", "send", "twice.txt"), []byte("once"), 0o644)
	gw := r.gateway(nil)
	r.run(gw)
	long := strings.Repeat("é", 9000) // 3 parts of at most 4096 characters
	for _, tc := range []struct {
		name    string
		msg     rpc.DMSend
		refused string   // a substring of the error; "" when it is queued
		want    []string // the texts the DM gets
	}{
		{"NUL in the text", rpc.DMSend{ID: "h1", Text: "a\x00b"}, "", []string{"a\x00b"}},
		{"invalid UTF-8", rpc.DMSend{ID: "h2", Text: "bad \xff byte"}, "", []string{"bad \ufffd byte"}},
		{"NUL in the id", rpc.DMSend{ID: "h\x003", Text: "x"}, "control character", nil},
		{"newline in the id", rpc.DMSend{ID: "h\n4", Text: "x"}, "control character", nil},
		{"id too long", rpc.DMSend{ID: strings.Repeat("k", 1000), Text: "x"}, "at most 200", nil},
		{"nothing to send", rpc.DMSend{ID: "h5", Text: " \n\t"}, "nothing to send", nil},
		{"a file outside send/", rpc.DMSend{ID: "h6", Text: "x", Files: []string{".choirtmp/send/../../secret"}}, "only files under", nil},
		{"an absolute host path", rpc.DMSend{ID: "h7", Text: "x", Files: []string{"/etc/passwd"}}, "only files under", nil},
		{"a missing file", rpc.DMSend{ID: "h8", Text: "x", Files: []string{".choirtmp/send/nope.txt"}}, "nope.txt", nil},
		{"a long text", rpc.DMSend{ID: "h9", Text: long}, "", []string{strings.Repeat("é", 4096), strings.Repeat("é", 4096), strings.Repeat("é", 808)}},
		{"a file named twice", rpc.DMSend{ID: "h10", Text: "twice", Files: []string{".choirtmp/send/twice.txt", "/workspace/.choirtmp/send/twice.txt"}}, "", []string{"twice", ""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := len(r.srv.Sent(r.bot, aliceUser))
			depth := r.stats().Queued
			tc.msg.Kind = rpc.DMReply
			err := r.deliver(gw, tc.msg)
			if tc.refused != "" {
				if err == nil || !strings.Contains(err.Error(), tc.refused) {
					t.Fatalf("Deliver() = %v; want a refusal saying %q", err, tc.refused)
				}
				if d := r.stats().Queued; d > depth {
					t.Errorf("a refused message was queued (depth %d → %d)", depth, d)
				}
				return
			}
			if err != nil {
				t.Fatalf("Deliver() = %v; want it queued", err)
			}
			sent := r.srv.WaitSent(t, r.bot, aliceUser, before+len(tc.want))
			r.srv.Wait(t, "the outbox to be empty", func() bool { return r.stats().Queued == 0 })
			if got := texts(r.srv.Sent(r.bot, aliceUser)[before:]); !slices.Equal(got, tc.want) {
				t.Errorf("the DM got %q; want %q", short(got), short(tc.want))
			}
			_ = sent
		})
	}
}

// TestOutboxRetriesServerErrors: Telegram in trouble (502, then a proxy's
// HTML page) delays a message, never loses or repeats one.
func TestOutboxRetriesServerErrors(t *testing.T) {
	r := newOutboxRig(t)
	gw := r.gateway(nil)
	r.srv.FailNext(r.bot, "sendMessage", 1, telegramtest.ServerError(502))
	r.srv.FailNext(r.bot, "sendMessage", 1, telegramtest.ProxyError(503))
	want := numbered(3)
	for i, text := range want {
		if err := r.deliver(gw, rpc.DMSend{ID: fmt.Sprint("c", i), Kind: rpc.DMReply, Text: text}); err != nil {
			t.Fatal(err)
		}
	}
	r.run(gw)
	r.srv.WaitSent(t, r.bot, aliceUser, 3)
	r.srv.Wait(t, "the outbox to be empty", func() bool { return r.stats().Queued == 0 })
	if got := texts(r.srv.Sent(r.bot, aliceUser)); !slices.Equal(got, want) {
		t.Errorf("Telegram got %q; want %q", got, want)
	}
	if st := r.stats(); st.Failed != 0 {
		t.Errorf("outbox = %+v; want nothing failed: a 5xx is retried", st)
	}
}

// TestOutboxSweepsOrphanedFiles: the file directories under
// .choirtmp/outbox/ that belong to no queued message (a choird stopped
// between moving a message's files and queueing it; a message Telegram
// refused) are removed once older than a few minutes; a queued message's
// files stay and still reach Telegram; a symlink the agent planted, as a
// message directory or as .choirtmp/outbox itself, removes nothing
// outside the workspace.
func TestOutboxSweepsOrphanedFiles(t *testing.T) {
	r := newOutboxRig(t)
	ws, _ := r.fc.WorkspacePath("alpha")
	hostile := t.TempDir() // a second workspace whose outbox is a symlink out
	r.fc.workspaces = []ctl.Workspace{{Name: "ws-alpha", Path: ws, Holder: "alpha"}, {Name: "ws-hostile", Path: hostile}}
	send := filepath.Join(ws, ".choirtmp", "send")
	os.MkdirAll(send, 0o755)
	os.WriteFile(filepath.Join(send, "kept.pdf"), []byte("%PDF kept"), 0o644)
	gw := r.gateway(nil)
	if err := r.deliver(gw, rpc.DMSend{ID: "q1", Kind: rpc.DMReply, Text: "queued with a file", Files: []string{".choirtmp/send/kept.pdf"}}); err != nil {
		t.Fatal(err)
	}
	outbox := filepath.Join(ws, ".choirtmp", "outbox")
	queued, _ := os.ReadDir(outbox)
	if len(queued) != 1 {
		t.Fatalf(".choirtmp/outbox holds %d entries after one message was queued; want 1", len(queued))
	}
	hour := time.Now().Add(-time.Hour)
	os.Chtimes(filepath.Join(outbox, queued[0].Name()), hour, hour) // old, but queued
	orphan := filepath.Join(outbox, "orphan", "0")
	os.MkdirAll(orphan, 0o700)
	os.WriteFile(filepath.Join(orphan, "x.pdf"), []byte("%PDF x"), 0o600)
	os.Chtimes(filepath.Join(outbox, "orphan"), hour, hour)
	os.MkdirAll(filepath.Join(outbox, "fresh", "0"), 0o700)
	host := t.TempDir()
	os.MkdirAll(filepath.Join(host, "old", "keep"), 0o700)
	os.WriteFile(filepath.Join(host, "old", "keep", "host.txt"), []byte("host"), 0o600)
	os.Chtimes(filepath.Join(host, "old"), hour, hour)
	os.Symlink(host, filepath.Join(outbox, "link"))
	os.MkdirAll(filepath.Join(hostile, ".choirtmp"), 0o700)
	os.Symlink(host, filepath.Join(hostile, ".choirtmp", "outbox"))

	left := func() []string {
		var names []string
		es, _ := os.ReadDir(outbox)
		for _, e := range es {
			names = append(names, e.Name())
		}
		return names
	}
	ctx := context.Background()
	gw.SweepOutboxFiles(ctx, time.Now())
	if got := left(); len(got) != 3 || slices.Contains(got, "orphan") || !slices.Contains(got, "fresh") || !slices.Contains(got, queued[0].Name()) {
		t.Errorf(".choirtmp/outbox after the sweep = %q; want the orphan gone, the fresh directory, the link and the queued message kept", got)
	}
	gw.SweepOutboxFiles(ctx, time.Now().Add(time.Hour))
	if got := left(); len(got) != 1 || got[0] != queued[0].Name() {
		t.Errorf(".choirtmp/outbox an hour later = %q; want only the queued message's directory", got)
	}
	if data, err := os.ReadFile(filepath.Join(host, "old", "keep", "host.txt")); err != nil || string(data) != "host" {
		t.Errorf("a host file behind a symlink in a workspace's outbox: %q, %v; want it untouched", data, err)
	}
	if !strings.Contains(r.logs.String(), "orphaned outbox files swept") {
		t.Errorf("the sweep is not in the log:\n%s", r.logs.String())
	}
	r.run(gw)
	sent := r.srv.WaitSent(t, r.bot, aliceUser, 2)
	if sent[1].File == nil || string(sent[1].File.Data) != "%PDF kept" {
		t.Errorf("Telegram got %s; want the queued message's text and its file", methods(sent))
	}
	r.srv.Wait(t, "the sent message's directory to go", func() bool { return len(left()) == 0 })
}
