package store

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"choir/testkit/pgtest"
)

// Environment of the child process TestRestartAfterKill starts: the test
// binary again, running only TestKilledClient.
const (
	envChild     = "CHOIR_STORE_TEST_CHILD"      // "1" in the child
	envChildDSN  = "CHOIR_STORE_TEST_CHILD_DSN"  // the parent's database
	envChildNS   = "CHOIR_STORE_TEST_CHILD_NS"   // its namespace
	envChildMode = "CHOIR_STORE_TEST_CHILD_MODE" // "" (the store's) or a pgx exec mode
)

// childReady is the line the child prints once it is inside its
// transaction.
const childReady = "in the transaction"

// A client dies with kill -9 in the middle of a transaction, after it ran
// every operation of the store, and a new store on the same server works:
// every operation again, and the session the dead client was writing to
// takes the events it did not commit. On PGlite (and behind a pooler in
// transaction mode) the dead client's server session lives on, with the
// prepared statements it made: the child runs once as choird does and once
// as a client using pgx's default statement cache, which names one
// prepared statement per query (the 42P05 "prepared statement
// stmtcache_... already exists" of issue 13 when the next choird made the
// same ones).
func TestRestartAfterKill(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a child process")
	}
	for _, mode := range []string{"", "cache_statement"} {
		name := "as choird"
		if mode != "" {
			name = "with pgx's statement cache"
		}
		t.Run(name, func(t *testing.T) {
			db := pgtest.DB(t)
			ctx := ctxT(t)
			agents := []string{"solo0", "solo1", "solo2"}

			// The namespace, made before the child runs; the pool is
			// closed so that the child gets PGlite's one connection.
			s, err := Open(ctx, Config{DSN: db.DSN, Namespace: db.Namespace})
			if err != nil {
				t.Fatalf("Open(%s) = %v", db.Backend, err)
			}
			err = s.Bootstrap(ctx, agents, dims)
			s.Close()
			if err != nil {
				t.Fatalf("Bootstrap = %v", err)
			}

			killChild(t, db, mode)

			s, err = Open(ctx, Config{DSN: db.DSN, Namespace: db.Namespace})
			if err != nil {
				t.Fatalf("Open after the kill = %v", err)
			}
			t.Cleanup(func() {
				if err := s.Drop(context.Background()); err != nil {
					t.Errorf("Drop() = %v", err)
				}
				s.Close()
			})
			if mode != "" && isPGlite(ctx, t, s) {
				// The premise: the dead client's statements are still there.
				var n int
				if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM pg_prepared_statements WHERE name LIKE 'stmtcache\_%'`).Scan(&n); err != nil || n == 0 {
					t.Fatalf("PGlite has %d stmtcache_ statements after the kill (%v); want the dead client's", n, err)
				}
			}
			if err := s.Bootstrap(ctx, agents, dims); err != nil {
				t.Fatalf("Bootstrap after the kill = %v", err)
			}
			if err := everyOperation(ctx, s, 2); err != nil {
				t.Errorf("after the kill: %v", err)
			}
			// The dead client's uncommitted event 3 is gone and its lock
			// on the session released: event 3 is ours to append.
			if got, err := s.AckedRev(ctx, "live"); err != nil || got != 2 {
				t.Errorf("AckedRev(live) = %d, %v; want 2 (the killed transaction's event rolled back)", got, err)
			}
			acked, err := s.AppendEvents(ctx, "live", events(3, 4))
			if err != nil || acked != 4 {
				t.Fatalf("AppendEvents(live, 3-4) = %d, %v; want 4", acked, err)
			}
			got, err := s.EventsAfter(ctx, "live", 2)
			if want := events(3, 3)[0]; err != nil || len(got) != 2 || got[0].Hash != want.Hash || got[0].Type != want.Type {
				t.Errorf("EventsAfter(live, 2) = %+v, %v; want the new events 3 and 4", got, err)
			}
		})
	}
}

// isPGlite tells PGlite (built by emscripten) from a real server.
func isPGlite(ctx context.Context, t *testing.T, s *Store) bool {
	t.Helper()
	var v string
	if err := s.pool.QueryRow(ctx, "SELECT version()").Scan(&v); err != nil {
		t.Fatalf("SELECT version() = %v", err)
	}
	return strings.Contains(strings.ToLower(v), "emscripten")
}

// killChild runs TestKilledClient in a child process, waits until it is
// inside its transaction, and kills it with SIGKILL.
func killChild(t *testing.T, db pgtest.Database, mode string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestKilledClient$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), envChild+"=1", envChildDSN+"="+db.DSN, envChildNS+"="+db.Namespace, envChildMode+"="+mode)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("start the child: %v", err)
	}
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	var seen []string
	timeout := time.After(pgtest.RelayWait + time.Minute)
wait:
	for {
		select {
		case line, ok := <-lines:
			if !ok {
				cmd.Wait()
				t.Fatalf("the child ended before its transaction:\n%s\n%s", strings.Join(seen, "\n"), stderr.String())
			}
			seen = append(seen, line)
			if line == childReady {
				break wait
			}
		case <-timeout:
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("the child did not reach its transaction:\n%s\n%s", strings.Join(seen, "\n"), stderr.String())
		}
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatalf("kill -9 the child: %v", err)
	}
	go func() {
		for range lines {
		}
	}()
	if err := cmd.Wait(); err == nil || !strings.Contains(err.Error(), "killed") {
		t.Fatalf("the child's end = %v; want killed", err)
	}
}

// TestKilledClient is the child of TestRestartAfterKill (it does nothing
// in a normal run): it opens a store on the parent's database, runs every
// operation (which leaves prepared statements in a pgx statement cache if
// the mode makes them), opens a session and commits two events, then
// writes a third in a transaction, holding the session's row lock, says
// so on stdout and waits to be killed.
func TestKilledClient(t *testing.T) {
	if os.Getenv(envChild) != "1" {
		t.Skip("the child process of TestRestartAfterKill")
	}
	ctx := context.Background()
	var tweak func(*pgxpool.Config)
	if mode := os.Getenv(envChildMode); mode != "" {
		tweak = func(c *pgxpool.Config) {
			m, ok := map[string]pgx.QueryExecMode{"cache_statement": pgx.QueryExecModeCacheStatement}[mode]
			if !ok {
				t.Fatalf("unknown mode %q", mode)
			}
			c.ConnConfig.DefaultQueryExecMode = m
			// The statements an earlier child left would stop this one
			// before it has made its own.
			c.AfterConnect = func(ctx context.Context, conn *pgx.Conn) error {
				_, err := conn.Exec(ctx, "DEALLOCATE ALL")
				return err
			}
		}
	}
	s, err := open(ctx, Config{DSN: os.Getenv(envChildDSN), Namespace: os.Getenv(envChildNS)}, tweak)
	if err != nil {
		t.Fatal(err)
	}
	if err := everyOperation(ctx, s, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateSession(ctx, NewSession{SessionID: "live", AgentID: "solo1", LeaseID: "l", StartedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AppendEvents(ctx, "live", events(1, 2)); err != nil {
		t.Fatal(err)
	}
	s.inTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, s.q(`SELECT 1 FROM choir_control.sessions WHERE session_id = $1 FOR UPDATE`), "live"); err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(ctx, s.q(`INSERT INTO choir_control.session_events (session_id, rev, event_type, hash, payload)
			VALUES ($1, 3, 'CHILD', 'child-h3', '{}')`), "live"); err != nil {
			t.Fatal(err)
		}
		fmt.Println(childReady)
		select {} // until killed
	})
}

// The store's exec mode binds parameters with the types the server
// describes, as pgx's default mode does: pgvector's vector (a type pgx
// does not know) from its text form, jsonb from a string, from bytes
// and from a map, arrays from slices, under an agent's role. The exec and
// simple-protocol modes, which send every parameter as untyped text, fail
// on the bytes and the map.
func TestParamsBindAsServerTypes(t *testing.T) {
	s := newStore(t, Config{}, "vec")
	ctx := ctxT(t)
	var dist float64
	var tags []string
	err := s.asAgent(ctx, "vec", func(tx pgx.Tx) error {
		n, _ := s.agentNames("vec")
		var ids []string
		for _, meta := range []any{`{"tags": ["string"]}`, []byte(`{"tags": ["bytes"]}`), map[string]any{"tags": []string{"map"}}} {
			var id string
			if err := tx.QueryRow(ctx, `INSERT INTO `+n.Schema+`.memory_documents (session_id, tier, chunk_index, text, metadata)
				VALUES ($1, $2, $3, $4, $5) RETURNING id`, "s1", "mid_term", len(ids), "alpha beta", meta).Scan(&id); err != nil {
				return fmt.Errorf("metadata %T: %w", meta, err)
			}
			ids = append(ids, id)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO `+n.Schema+`.memory_embeddings (document_id, embedding) VALUES ($1, $2)`, ids[0], "[1,0,0]"); err != nil {
			return err
		}
		if err := tx.QueryRow(ctx, `SELECT e.embedding <=> $1 FROM `+n.Schema+`.memory_embeddings e WHERE e.document_id = $2`,
			"[0,1,0]", ids[0]).Scan(&dist); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `SELECT metadata->'tags'->>0 FROM `+n.Schema+`.memory_documents
			WHERE tier = ANY($1) ORDER BY chunk_index`, []string{"mid_term", "long_term_summary"})
		if err != nil {
			return err
		}
		tags, err = pgx.CollectRows(rows, pgx.RowTo[string])
		return err
	})
	if err != nil {
		t.Fatalf("round trip: %v", err)
	}
	if dist != 1 || strings.Join(tags, ",") != "string,bytes,map" {
		t.Errorf("distance, tags = %v, %q; want 1, string,bytes,map", dist, tags)
	}
}
