package store

import (
	"context"
	"errors"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"choir/testkit/pgnative"
	"choir/testkit/pgtest"
)

func TestMain(m *testing.M) {
	defer pgnative.Stop() // leader_test.go
	pgtest.Main(m)
}

// dims is the embedding size tests bootstrap with.
const dims = 3

// newStore opens a store in a namespace of its own, bootstraps the agents
// and drops everything at cleanup.
func newStore(t testing.TB, cfg Config, agents ...string) *Store {
	t.Helper()
	db := pgtest.DB(t)
	cfg.DSN, cfg.Namespace = db.DSN, db.Namespace
	ctx := context.Background()
	s, err := Open(ctx, cfg)
	if err != nil {
		t.Fatalf("Open(%s) = %v", db.Backend, err)
	}
	t.Cleanup(func() {
		if err := s.Drop(ctx); err != nil {
			t.Errorf("Drop() = %v", err)
		}
		s.Close()
	})
	if len(agents) > 0 {
		if err := s.Bootstrap(ctx, agents, dims); err != nil {
			t.Fatalf("Bootstrap(%q, %d) = %v", agents, dims, err)
		}
	}
	return s
}

// ctxT is a context that ends a hung operation (a pool waiting for a
// connection it will never get) with an error instead of a test timeout.
func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// closedPort is a loopback port nothing listens on.
func closedPort(t *testing.T) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	return port
}

func TestOpenUnreachable(t *testing.T) {
	const password = "s3cret-Pw-91"
	port := closedPort(t)
	where := "127.0.0.1:" + strconv.Itoa(port)
	for _, cfg := range []Config{
		{Host: "127.0.0.1", Port: port, Database: "choir", User: "choird", Password: password, SSLMode: "disable"},
		{DSN: "postgres://choird:" + password + "@" + where + "/choir?sslmode=disable"},
		{DSN: "host=127.0.0.1 port=" + strconv.Itoa(port) + " user=choird password=" + password + " sslmode=disable"},
	} {
		s, err := Open(context.Background(), cfg)
		if err == nil {
			s.Close()
			t.Fatalf("Open(%s) succeeded with nothing listening", where)
		}
		msg := err.Error()
		for _, want := range []string{"postgres at " + where + " is not reachable", "start it or fix config.json postgres"} {
			if !strings.Contains(msg, want) {
				t.Errorf("Open() = %q; want it to contain %q", msg, want)
			}
		}
		if strings.Contains(msg, password) {
			t.Errorf("Open() = %q; it shows the password", msg)
		}
	}
}

func TestOpenBadConfig(t *testing.T) {
	const password = "s3cret-Pw-92"
	for _, tc := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"dsn and fields", Config{DSN: "postgres://localhost/x", Host: "localhost"}, "either a DSN or"},
		{"bad namespace", Config{DSN: "postgres://localhost/x", Namespace: "Choir"}, "namespace"},
		{"bad dsn", Config{DSN: "postgres://u:" + password + "@localhost:notaport/x"}, "fix config.json postgres"},
		{"named prepared statements", Config{DSN: "postgres://u:" + password + "@localhost/x?default_query_exec_mode=cache_statement"}, "remove it from the DSN"},
		{"named prepared statements, key=value", Config{DSN: "host=localhost password=" + password + " default_query_exec_mode=cache_statement"}, "cache_statement"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Open(context.Background(), tc.cfg)
			if err == nil {
				s.Close()
				t.Fatal("Open() succeeded")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Open() = %q; want it to contain %q", err, tc.want)
			}
			if strings.Contains(err.Error(), password) {
				t.Errorf("Open() = %q; it shows the password", err)
			}
		})
	}
}

// Every operation works on a pool of one connection, also from several
// goroutines at once: no operation holds a connection while it waits for
// another.
func TestPoolOfOne(t *testing.T) {
	s := newStore(t, Config{MaxConns: 1}, "solo0", "solo1", "solo2", "solo3")
	if got := s.pool.Config().MaxConns; got != 1 {
		t.Fatalf("MaxConns = %d; want 1", got)
	}
	ctx := ctxT(t)
	errc := make(chan error, 4)
	for g := range 4 {
		go func() { errc <- everyOperation(ctx, s, g) }()
	}
	for range 4 {
		if err := <-errc; err != nil {
			t.Error(err)
		}
	}
}

// everyOperation runs each operation of the store once for session "s<g>".
func everyOperation(ctx context.Context, s *Store, g int) error {
	id := "s" + strconv.Itoa(g)
	at := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	step := func(name string, err error) error {
		if err != nil {
			return errors.New(id + ": " + name + ": " + err.Error())
		}
		return nil
	}
	agent := "solo" + strconv.Itoa(g)
	_, err := s.CreateSession(ctx, NewSession{SessionID: id, AgentID: agent, LeaseID: "l" + id, StartedAt: at,
		Leases: []Lease{{"workspace", id}}})
	if err := step("CreateSession", err); err != nil {
		return err
	}
	_, err = s.AppendEvents(ctx, id, events(1, 2)) // a chain as an agent makes it
	for _, e := range []error{
		step("AppendEvents", err),
		step("Heartbeat", s.Heartbeat(ctx, id, at, 1)),
		step("SaveSnapshot", s.SaveSnapshot(ctx, id, 2, []byte(`{}`))),
		step("LatestSnapshot", second(s.LatestSnapshot(ctx, id))),
		step("EventsAfter", second(s.EventsAfter(ctx, id, 0))),
		step("AckedRev", second(s.AckedRev(ctx, id))),
		step("ActiveSessions", second(s.ActiveSessions(ctx))),
		step("GetSession", second(s.GetSession(ctx, id))),
		step("LastSession", second(s.LastSession(ctx, agent))),
	} {
		if e != nil {
			return e
		}
	}
	a, err := s.CreateApproval(ctx, NewApproval{SessionID: id, AgentID: agent, RequestType: "t"})
	if err := step("CreateApproval", err); err != nil {
		return err
	}
	for _, e := range []error{
		step("PendingApprovals", second(s.PendingApprovals(ctx, ""))),
		step("ResolveApproval", second(s.ResolveApproval(ctx, a.ID, ApprovalApproved, "op"))),
		step("GetApproval", second(s.GetApproval(ctx, a.ID))),
		step("EndSession", s.EndSession(ctx, id, SessionStopped, at)),
		step("Bootstrap", s.Bootstrap(ctx, []string{agent}, dims)),
	} {
		if e != nil {
			return e
		}
	}
	return nil
}

func second[T any](_ T, err error) error { return err }
