package gateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"time"

	"choir/internal/config"
	"choir/internal/telegram"
)

// Defaults of Config's tunables.
const (
	DefaultPollTimeout   = 30 * time.Second
	DefaultStallGrace    = 15 * time.Second // StallAfter is PollTimeout + this
	DefaultBackoffMin    = time.Second
	DefaultBackoffMax    = time.Minute
	DefaultMaxFileSize   = telegram.MaxDownloadSize
	DefaultShutdownGrace = 10 * time.Second
	// DefaultTranscribeTimeout bounds one transcription of a voice note.
	DefaultTranscribeTimeout = 2 * time.Minute
	// The caps on the file exchange directories (§19.5): .choirtmp/recv/
	// of one agent as a whole, and the files of one message an agent sends.
	DefaultRecvMaxFiles = 100
	DefaultRecvMaxBytes = 512 << 20
	DefaultSendMaxFiles = 20
	DefaultSendMaxBytes = 200 << 20
)

// maxUploadSize is the Bot API's limit on a file a bot sends (50 MB).
const maxUploadSize = 50 << 20

// Config builds a Gateway.
type Config struct {
	// Gateways and DMs are config.json's; every gateway is a bot, and the
	// DMs naming it are its allowlist.
	Gateways map[string]config.Gateway
	DMs      map[string]config.DM
	// Secrets holds the bot tokens, by the gateways' secret names.
	Secrets config.Secrets
	Control Control
	// Log is choird's logger; the gateway adds system=gateway.
	Log *slog.Logger

	// PollTimeout is getUpdates' long-poll timeout (DefaultPollTimeout).
	PollTimeout time.Duration
	// StallAfter is how long one getUpdates may stay open before the
	// watchdog abandons it and polls again (PollTimeout + DefaultStallGrace).
	StallAfter time.Duration
	// BackoffMin and BackoffMax bound the wait, doubled on each failure and
	// jittered, before polling again after an error.
	BackoffMin, BackoffMax time.Duration
	// Limiter paces each bot's sends (telegram.Limiter's defaults: Telegram's
	// limits).
	Limiter telegram.LimiterConfig
	// MaxFileSize bounds an inbound file (DefaultMaxFileSize, the most the
	// Bot API lets a bot download).
	MaxFileSize int64
	// Transcriber, when set (config.json "transcription"), turns a voice
	// note or audio file into the text of the user's message; the audio is
	// attached all the same. Nil passes them on as files only.
	Transcriber Transcriber
	// TranscribeTimeout bounds one transcription (DefaultTranscribeTimeout).
	TranscribeTimeout time.Duration
	// RecvMaxFiles and RecvMaxBytes cap what one agent's .choirtmp/recv/
	// holds; a new file makes room by removing the oldest
	// (DefaultRecvMaxFiles, DefaultRecvMaxBytes).
	RecvMaxFiles int
	RecvMaxBytes int64
	// SendMaxFiles and SendMaxBytes cap the files of one message an agent
	// sends; the files beyond are removed unsent and the DM is told
	// (DefaultSendMaxFiles, DefaultSendMaxBytes).
	SendMaxFiles int
	SendMaxBytes int64
	// ShutdownGrace bounds how long Run's end waits for messages being
	// handled.
	ShutdownGrace time.Duration
	// HTTPClient, when set, carries the Bot API calls.
	HTTPClient *http.Client
	// Outbox, when set, is the durable outbox (outbox.go): Deliver queues
	// a message there and returns, and one sender per DM delivers it.
	// Without one, Deliver sends to Telegram before it returns.
	Outbox OutboxStore
	// OutboxMax is an agent's cap on messages waiting in the outbox
	// (config.json agents.<id>.outbox_max); nil or 0 is DefaultOutboxMax.
	OutboxMax func(agentID string) int
	// OutboxPoll, when set, makes the senders look for queued messages
	// that often as well as when this process queues one: with two
	// replicas (choird/leader), the follower queues what the leader's
	// senders deliver. The Outbox must then be a QueuedLister.
	OutboxPoll time.Duration
	// Inbox, when set, is the DM inbox of two replicas (inbox.go): an
	// update for a DM whose agent another replica runs is queued there
	// instead of handled, and RunInbox takes those of this replica's
	// agents. Instance names this replica as its sessions record it.
	Inbox    InboxStore
	Instance string
	// InboxPoll is how often RunInbox looks for queued updates
	// (DefaultInboxPoll).
	InboxPoll time.Duration
}

// Gateway is choird's Telegram gateway: one poller per bot, the allowlist,
// commands, files and the approval UX. It is safe for concurrent use.
type Gateway struct {
	cfg     Config
	log     *slog.Logger
	control Control
	bots    []*bot
	byName  map[string]*bot
	dms     map[string]dmInfo // by DM name
	// consoleDMs are the DMs of console gateways: choirctl chat, no bot.
	consoleDMs map[string]bool

	mu        sync.Mutex
	approvals Approvals
	apMsgs    map[string]msgRef // approval id → its request message
	apByMsg   map[msgRef]string // request message → approval id
	choices   map[chatKey]choice
	acks      ackBook // received files awaiting the agent's acknowledgement

	workCtx  context.Context // the chat workers'; ended after ShutdownGrace
	stopWork context.CancelFunc
	workers  sync.WaitGroup

	senders map[string]*sender // by DM name, with an Outbox (sender.go)
	inbox   inboxState         // updates taken from the Inbox (inbox.go)
}

// dmInfo is one configured DM.
type dmInfo struct {
	name  string
	bot   *bot
	user  int64 // = its private chat's id
	admin bool
}

type chatKey struct {
	bot  string
	chat int64
}

type msgRef struct {
	bot  string
	chat int64
	id   int64
}

// New builds the gateway's bots from the configuration. It refuses a
// gateway of a type other than telegram, a missing token and a DM whose
// user id is not a number.
func New(cfg Config) (*Gateway, error) {
	if cfg.Control == nil {
		return nil, errors.New("gateway: a Control is required")
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.PollTimeout <= 0 {
		cfg.PollTimeout = DefaultPollTimeout
	}
	if cfg.StallAfter <= 0 {
		cfg.StallAfter = cfg.PollTimeout + DefaultStallGrace
	}
	if cfg.BackoffMin <= 0 {
		cfg.BackoffMin = DefaultBackoffMin
	}
	if cfg.BackoffMax < cfg.BackoffMin {
		cfg.BackoffMax = max(DefaultBackoffMax, cfg.BackoffMin)
	}
	if cfg.MaxFileSize <= 0 {
		cfg.MaxFileSize = DefaultMaxFileSize
	}
	if cfg.ShutdownGrace <= 0 {
		cfg.ShutdownGrace = DefaultShutdownGrace
	}
	if cfg.InboxPoll <= 0 {
		cfg.InboxPoll = DefaultInboxPoll
	}
	if cfg.TranscribeTimeout <= 0 {
		cfg.TranscribeTimeout = DefaultTranscribeTimeout
	}
	if cfg.RecvMaxFiles <= 0 {
		cfg.RecvMaxFiles = DefaultRecvMaxFiles
	}
	if cfg.RecvMaxBytes <= 0 {
		cfg.RecvMaxBytes = DefaultRecvMaxBytes
	}
	if cfg.SendMaxFiles <= 0 {
		cfg.SendMaxFiles = DefaultSendMaxFiles
	}
	if cfg.SendMaxBytes <= 0 {
		cfg.SendMaxBytes = DefaultSendMaxBytes
	}
	workCtx, stop := context.WithCancel(context.Background())
	g := &Gateway{
		cfg: cfg, log: cfg.Log.With(keySystem, "gateway"), control: cfg.Control,
		byName: map[string]*bot{}, dms: map[string]dmInfo{},
		apMsgs: map[string]msgRef{}, apByMsg: map[msgRef]string{}, choices: map[chatKey]choice{},
		workCtx: workCtx, stopWork: stop, consoleDMs: map[string]bool{},
		inbox: inboxState{taken: map[int64]bool{}},
	}
	for _, name := range config.SortedNames(cfg.Gateways) {
		gw := cfg.Gateways[name]
		if gw.Type == config.GatewayConsole {
			continue // the operator's DMs through choirctl chat: no bot
		}
		if gw.Type != "telegram" {
			return nil, fmt.Errorf("gateways.%s.type: %q: only \"telegram\" is supported", name, gw.Type)
		}
		token := cfg.Secrets[gw.Secret]
		if token == "" {
			return nil, fmt.Errorf("gateways.%s.secret: no secret named %q in secrets.json: add the bot token there", name, gw.Secret)
		}
		opts := []telegram.Option{}
		if cfg.HTTPClient != nil {
			opts = append(opts, telegram.WithHTTPClient(cfg.HTTPClient))
		}
		c, err := telegram.New(gw.APIBase, token, opts...)
		if err != nil {
			return nil, fmt.Errorf("gateways.%s: %w", name, err)
		}
		b := &bot{g: g, name: name, client: c, limiter: telegram.NewLimiter(cfg.Limiter),
			users: map[int64]string{}, chats: map[int64]*chatQueue{}, sendMu: map[int64]*sync.Mutex{},
			log: g.log.With(keyGateway, name)}
		g.bots = append(g.bots, b)
		g.byName[name] = b
	}
	for _, name := range config.SortedNames(cfg.DMs) {
		dm := cfg.DMs[name]
		if cfg.Gateways[dm.Gateway].Type == config.GatewayConsole {
			g.consoleDMs[name] = true
			continue
		}
		b, ok := g.byName[dm.Gateway]
		if !ok {
			return nil, fmt.Errorf("dms.%s.gateway: no gateway named %q", name, dm.Gateway)
		}
		user, err := strconv.ParseInt(dm.UserID, 10, 64)
		if err != nil || user <= 0 {
			return nil, fmt.Errorf("dms.%s.user_id: %q is not a Telegram user id (a positive number)", name, dm.UserID)
		}
		if other, dup := b.users[user]; dup {
			return nil, fmt.Errorf("dms.%s: user %d on gateway %s is already DM %s", name, user, dm.Gateway, other)
		}
		b.users[user] = name
		g.dms[name] = dmInfo{name: name, bot: b, user: user, admin: dm.Admin}
	}
	if cfg.Outbox != nil {
		g.senders = map[string]*sender{}
		for name, dm := range g.dms {
			g.senders[name] = &sender{g: g, dm: dm, wake: make(chan struct{}, 1)}
		}
	}
	return g, nil
}

// SetApprovals connects the approval pipeline (which needs the gateway as
// its Notifier, hence after New). Until then approval commands say they are
// not available.
func (g *Gateway) SetApprovals(a Approvals) {
	g.mu.Lock()
	g.approvals = a
	g.mu.Unlock()
}

func (g *Gateway) approvalService() Approvals {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.approvals
}

// Bots is the number of configured bots.
func (g *Gateway) Bots() int { return len(g.bots) }

// Run polls every bot (and sets its command menus) until ctx ends, then lets the messages being handled
// finish (up to ShutdownGrace), confirms the updates handled, and stops
// sending. Call it once. Deliver works from New until Run returns; close
// the approval Service before Run returns, so that its last outcomes can
// still be shown.
func (g *Gateway) Run(ctx context.Context) error {
	var polls sync.WaitGroup
	for _, b := range g.bots {
		polls.Go(func() { b.setMenus(ctx) })
		polls.Go(func() { b.poll(ctx) })
	}
	var sending sync.WaitGroup
	g.startSenders(ctx, &sending) // sender.go
	g.log.Info("gateway polling", "bots", len(g.bots), "dms", len(g.dms))
	<-ctx.Done()
	polls.Wait()

	drained := make(chan struct{})
	go func() { g.workers.Wait(); sending.Wait(); close(drained) }()
	select {
	case <-drained:
	case <-time.After(g.cfg.ShutdownGrace):
		g.log.Warn("gateway stopping with messages still being handled; they are cancelled", "grace", g.cfg.ShutdownGrace)
	}
	g.stopWork()
	<-drained
	for _, b := range g.bots {
		b.confirm()
		b.limiter.Close()
	}
	g.log.Info("gateway stopped")
	return nil
}

// dmOf returns the DM a user is on a bot, if configured.
func (b *bot) dmOf(user int64) (dmInfo, bool) {
	name, ok := b.users[user]
	if !ok {
		return dmInfo{}, false
	}
	return b.g.dms[name], true
}

// dmOfAgent returns the DM an agent is bound to, if it is a Telegram DM.
func (g *Gateway) dmOfAgent(agentID string) (dmInfo, bool) {
	for _, name := range config.SortedNames(g.dms) {
		if a, ok := g.control.AgentForDM(name); ok && a == agentID {
			return g.dms[name], true
		}
	}
	return dmInfo{}, false
}
