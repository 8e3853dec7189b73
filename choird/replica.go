package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"choir/choird/leader"
	"choir/choird/store"
	"choir/internal/logs"
)

// Two choird replicas, one leader (issue 26; DESIGN.md "Replicas and the
// leader"). With --replica, choird serves choirctl and its agents at once,
// like any choird, but runs the leader's parts (the Telegram pollers and
// outbox senders, the headless director and scheduler) only while it
// holds the leader lock in Postgres (choird/leader, choird/store's
// leader.go). Without --replica nothing changes: choird takes no lock and
// is the one leader.

// replicaOutboxPoll is how often a replica's senders look for messages
// queued by the other replica.
const replicaOutboxPoll = time.Second

// outboxPoll is the gateway's OutboxPoll: only replicas poll.
func outboxPoll(replica bool) time.Duration {
	if replica {
		return replicaOutboxPoll
	}
	return 0
}

// replicaKeepalive bounds how long Postgres takes to notice that a
// leader's host or network is gone (three TCP keepalive probes this far
// apart after this long idle).
const replicaKeepalive = 2 * time.Second

// storeLocker is the store's leader lock as the election takes it.
type storeLocker struct {
	st     *store.Store
	holder string
}

var _ leader.Locker = storeLocker{}

func (l storeLocker) TryLead(ctx context.Context) (leader.Lead, error) {
	ld, err := l.st.TryLead(ctx, store.LeadOptions{Holder: l.holder, IdleTimeout: leader.DefaultIdleTimeout, Keepalive: replicaKeepalive})
	if err != nil {
		return nil, err
	}
	return ld, nil
}

// startElection campaigns for the lead until stop is called; while this
// replica leads, parts runs (until its context ends). A lead lost while
// choird runs is sent on lost: the replica stops, and its supervisor
// starts it again as a follower. stop ends the campaign, stopping the
// parts and releasing the lock first if it leads, so that the other
// replica takes over at once.
func startElection(st *store.Store, log *slog.Logger, parts func(ctx context.Context, term int64), lost chan<- error) (stop func()) {
	host, _ := os.Hostname()
	e := &leader.Elector{
		Lock:   storeLocker{st: st, holder: fmt.Sprintf("%s pid %d", host, os.Getpid())},
		IsBusy: func(err error) bool { return errors.Is(err, store.ErrNotLeader) },
		Lead:   parts,
		Log:    log,
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := e.Run(ctx); err != nil {
			log.Error("choird stopping: this replica lost the lead", logs.KeyError, err.Error())
			lost <- err
		}
	}()
	return func() {
		cancel()
		<-done
	}
}
