// Package pgtest gives tests a real Postgres with pgvector, as httptest gives
// them an HTTP server. Import it only from _test.go files.
//
// # Where the database comes from
//
// DB looks for a server once per test binary, in this order:
//
//  1. CHOIR_TEST_DATABASE_URL, a postgres:// URL: your own Postgres with
//     pgvector, or the PGlite server `make test` starts for the whole run
//     with pglite.sh (see there).
//  2. Otherwise a private PGlite (Postgres 17.5 compiled to WebAssembly, with
//     pgvector 0.8.0): node runs pglite-socket's own server script, as npm
//     ships it in the packages package.json pins (-e vector -m 1), in
//     memory, on a free loopback port. It starts in 1.5-5 s, takes ~400 MB,
//     and is stopped by Main (and killed by Linux if the test binary dies).
//  3. Otherwise the test is Unavailable (testkit): skipped under go test,
//     failed under make test, with what is missing and how to get it.
//
// A package whose tests call DB declares
//
//	func TestMain(m *testing.M) { pgtest.Main(m) }
//
// # Isolation: one namespace per test
//
// PGlite serves one database: a CREATE DATABASE succeeds, but every
// connection lands in the same one whatever its URL names. Roles are global
// in any Postgres. So DB isolates tests by name, not by database: each call
// returns a fresh Namespace (like "pgt3f9c01d2a4b7"), which the test passes
// to store.Config.Namespace; the store then names its schemas and roles
// <namespace>_control and <namespace>_<agent> instead of choir_control and
// choir_<agent>. The test drops them at cleanup with store.Drop:
//
//	db := pgtest.DB(t)
//	st, err := store.Open(ctx, store.Config{DSN: db.DSN, Namespace: db.Namespace})
//	if err != nil { t.Fatal(err) }
//	t.Cleanup(func() { st.Drop(context.Background()); st.Close() })
//
// Only the store imports pgx, so this package runs no SQL of its own beyond a
// readiness probe.
//
// # One connection at a time
//
// PGlite has one backend session. Its socket server serves one connection
// at a time (allowing more would let them interleave in that one session),
// refuses a second one instead of queueing it, and keeps the session, with
// its prepared statements and SET ROLE, from one connection to the next.
// The DSN that DB returns therefore points at a relay inside the test binary
// (see relay.go) that waits for the server's free slot before connecting
// (for up to RelayWait) and closes cleanly towards the server however the
// client leaves. It does not reset the session: what one connection leaves
// there, the next finds, as on the server users run. The DSN also carries
// pool_max_conns=1, which the store's pool obeys unless told otherwise. So:
//
//   - use a pool of one (the DSN's default) and close it before the test
//     ends (t.Cleanup);
//   - never hold a connection while opening another: that waits RelayWait
//     and then fails with a message saying so;
//   - tests may call t.Parallel, and test binaries run in parallel against
//     the one server of make test, but their connections take turns (the
//     relays of all test binaries on the machine share a lock file per
//     server); a test that keeps a connection for long makes the others
//     wait.
//
// The relay speaks to the server without TLS, whatever sslmode the URL in
// CHOIR_TEST_DATABASE_URL names.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"net/url"
	"os"
	"sync"
	"testing"
	"time"

	"choir/testkit"
)

// EnvURL names the environment variable holding a postgres:// URL of a
// server with pgvector to use instead of a private PGlite.
const EnvURL = "CHOIR_TEST_DATABASE_URL"

// RelayWait is how long a connection waits for the server's one slot.
const RelayWait = 2 * time.Minute

// Database is one test's share of the server.
type Database struct {
	// DSN is a postgres:// URL for pgxpool (it carries pool_max_conns=1).
	DSN string
	// Namespace is unique to this test: pass it to store.Config.Namespace.
	Namespace string
	// Backend says which server this is, for logs and benchmarks.
	Backend string
}

var (
	mu       sync.Mutex
	setupErr error  // why there is no backend, once known
	ready    bool   // setup succeeded
	dsn      string // template DSN pointing at the relay
	backend  string
	rel      *relay
	srv      *server
)

// DB returns a Database for t, starting the backend on first use, or stops t
// with testkit.Unavailable when no backend can be had.
func DB(t testing.TB) Database {
	t.Helper()
	if err := setup(); err != nil {
		if os.Getenv(EnvURL) != "" {
			testkit.Unavailable(t, "pgtest: no Postgres with pgvector: %v", err)
		}
		testkit.Unavailable(t, "pgtest: no Postgres with pgvector: %v; or set %s to the URL of one", err, EnvURL)
	}
	return Database{DSN: dsn, Namespace: newNamespace(), Backend: backend}
}

// Main runs the tests, then stops what DB started. Use it from TestMain.
func Main(m *testing.M) {
	defer Stop()
	m.Run()
}

// Stop stops the relay and the private PGlite server, if any. Main calls it;
// a TestMain that combines several harnesses may call it itself. Safe to
// call when nothing was started.
func Stop() {
	mu.Lock()
	defer mu.Unlock()
	if rel != nil {
		rel.close()
		rel = nil
	}
	if srv != nil {
		srv.stop()
		srv = nil
	}
	ready = false
	setupErr = fmt.Errorf("pgtest.Stop was called")
}

// setup finds or starts the server and the relay, once.
func setup() error {
	mu.Lock()
	defer mu.Unlock()
	if ready || setupErr != nil {
		return setupErr
	}
	if testkit.NoBackends() {
		setupErr = testkit.ErrNoBackends
		return setupErr
	}
	setupErr = func() error {
		var upstream string
		var u *url.URL
		if env := os.Getenv(EnvURL); env != "" {
			var err error
			u, err = url.Parse(env)
			if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") || u.Host == "" {
				return fmt.Errorf("%s is not a postgres://host:port/db URL", EnvURL)
			}
			upstream = u.Host
			if u.Port() == "" {
				upstream = net.JoinHostPort(u.Hostname(), "5432")
			}
			c, err := net.DialTimeout("tcp", upstream, 10*time.Second)
			if err != nil {
				return fmt.Errorf("nothing listens at %s (from %s): start it (testkit/pgtest/pglite.sh start DIR) or unset %s", upstream, EnvURL, EnvURL)
			}
			c.Close()
			backend = "Postgres at " + upstream + " (" + EnvURL + ")"
		} else {
			s, err := startServer()
			if err != nil {
				return err
			}
			srv = s
			upstream = s.addr
			u = &url.URL{Scheme: "postgres", User: url.UserPassword("postgres", "postgres"), Path: "/postgres"}
			backend = "private PGlite at " + upstream
		}
		r, err := newRelay(upstream, RelayWait)
		if err != nil {
			return err
		}
		rel = r
		d := *u
		d.Host = r.addr()
		q := d.Query()
		q.Set("sslmode", "disable")
		if q.Get("pool_max_conns") == "" {
			q.Set("pool_max_conns", "1")
		}
		if q.Get("connect_timeout") == "" {
			// A connection waits at the relay for its turn (up to
			// RelayWait) while other test binaries hold the server's one
			// slot; the client must wait as long, not the store's 10 s.
			q.Set("connect_timeout", fmt.Sprint(int(RelayWait.Seconds())))
		}
		d.RawQuery = q.Encode()
		dsn = d.String()
		if srv != nil {
			ctx, cancel := context.WithTimeout(context.Background(), RelayWait+time.Minute)
			defer cancel()
			if err := probe(ctx, r.addr()); err != nil {
				return fmt.Errorf("PGlite listens at %s but does not answer SELECT 1: %v; %s", upstream, err, srv.logTail())
			}
		}
		return nil
	}()
	if setupErr != nil {
		if rel != nil {
			rel.close()
			rel = nil
		}
		if srv != nil {
			srv.stop()
			srv = nil
		}
		return setupErr
	}
	ready = true
	return nil
}

// newNamespace returns a name no other test uses: "pgt" and 12 hex digits.
func newNamespace() string {
	b := make([]byte, 6)
	rand.Read(b)
	return "pgt" + hex.EncodeToString(b)
}
