package pgtest

import (
	"bufio"
	"context"
	"encoding/binary"
	"net"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"
)

func TestMain(m *testing.M) { Main(m) }

// relayAddr is the host:port in db's DSN.
func relayAddr(t *testing.T, db Database) string {
	t.Helper()
	u, err := url.Parse(db.DSN)
	if err != nil {
		t.Fatalf("url.Parse(%q): %v", db.DSN, err)
	}
	return u.Host
}

func dialT(t *testing.T, addr string) *client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), RelayWait+time.Minute)
	defer cancel()
	c, err := dial(ctx, addr)
	if err != nil {
		t.Fatalf("dial(%s) = %v", addr, err)
	}
	c.conn.SetDeadline(time.Time{})
	return c
}

func queryT(t *testing.T, c *client, sql string) [][]string {
	t.Helper()
	rows, err := c.query(sql)
	if err != nil {
		t.Fatalf("query(%q) = %v", sql, err)
	}
	return rows
}

func value(t *testing.T, c *client, sql string) string {
	t.Helper()
	rows := queryT(t, c, sql)
	if len(rows) != 1 || len(rows[0]) != 1 {
		t.Fatalf("query(%q) = %v; want one value", sql, rows)
	}
	return rows[0][0]
}

// isPGlite tells PGlite (built by emscripten) from a real server.
func isPGlite(t *testing.T, addr string) bool {
	c := dialT(t, addr)
	defer c.close()
	return strings.Contains(strings.ToLower(value(t, c, "SELECT version()")), "emscripten")
}

func TestDBHasPgvector(t *testing.T) {
	db := DB(t)
	t.Logf("backend: %s", db.Backend)
	c := dialT(t, relayAddr(t, db))
	defer c.close()
	queryT(t, c, "CREATE EXTENSION IF NOT EXISTS vector")
	if got := value(t, c, "SELECT '[1,0]'::vector <=> '[0,1]'::vector"); got != "1" {
		t.Errorf("cosine distance of orthogonal vectors = %q; want 1", got)
	}
}

func TestNamespacesAreUnique(t *testing.T) {
	a, b := DB(t), DB(t)
	re := regexp.MustCompile(`^pgt[0-9a-f]{12}$`)
	for _, ns := range []string{a.Namespace, b.Namespace} {
		if !re.MatchString(ns) {
			t.Errorf("Namespace = %q; want it to match %s", ns, re)
		}
	}
	if a.Namespace == b.Namespace {
		t.Errorf("two DB calls gave the same Namespace %q", a.Namespace)
	}
	if !strings.Contains(a.DSN, "pool_max_conns=1") || !strings.Contains(a.DSN, "sslmode=disable") {
		t.Errorf("DSN = %q; want pool_max_conns=1 and sslmode=disable", a.DSN)
	}
}

// Without the relay, PGlite refuses most connections that follow a closed
// one (293 of 300 in a quick loop here).
func TestRelaySequentialConnections(t *testing.T) {
	addr := relayAddr(t, DB(t))
	for i := range 50 {
		c := dialT(t, addr)
		if got := value(t, c, "SELECT 41 + 1"); got != "42" {
			t.Fatalf("connection %d: SELECT 41 + 1 = %q", i, got)
		}
		c.close()
	}
}

// The relay does not hide the server's habits: on PGlite, what a
// connection leaves in the one backend session (a prepared statement, a
// setting) is there for the next, as for a user of the stock server; a
// transaction left open is rolled back by the server. On a real Postgres
// each connection starts afresh.
func TestRelayKeepsServerSession(t *testing.T) {
	db := DB(t)
	addr := relayAddr(t, db)
	pglite := isPGlite(t, addr)
	stmt := db.Namespace + "_stmt"

	c := dialT(t, addr)
	queryT(t, c, "PREPARE "+stmt+" AS SELECT 1")
	queryT(t, c, "SET application_name = '"+db.Namespace+"'")
	c.close()

	c = dialT(t, addr)
	t.Cleanup(func() {
		c := dialT(t, addr)
		defer c.close()
		c.query("DEALLOCATE " + stmt)
		c.query("RESET application_name")
	})
	want := map[bool]string{true: "1", false: "0"}[pglite]
	if got := value(t, c, "SELECT count(*) FROM pg_prepared_statements WHERE name = '"+stmt+"'"); got != want {
		t.Errorf("prepared statements named %s after reconnect = %s; want %s (PGlite: %v)", stmt, got, want, pglite)
	}
	if got := value(t, c, "SHOW application_name") == db.Namespace; got != pglite {
		t.Errorf("application_name kept after reconnect = %v; want %v (PGlite: %v)", got, pglite, pglite)
	}

	table := db.Namespace + "_t"
	queryT(t, c, "BEGIN")
	queryT(t, c, "CREATE TABLE "+table+" (x int)")
	c.close() // leaves the transaction open

	c = dialT(t, addr)
	defer c.close()
	if got := value(t, c, "SELECT to_regclass('"+table+"') IS NULL"); got != "t" {
		t.Errorf("table %s of an unfinished transaction exists after reconnect", table)
	}
}

func TestRelayDeclinesSSL(t *testing.T) {
	addr := relayAddr(t, DB(t))
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(time.Minute))
	req := binary.BigEndian.AppendUint32([]byte{0, 0, 0, 8}, codeSSLRequest)
	if _, err := conn.Write(req); err != nil {
		t.Fatal(err)
	}
	var b [1]byte
	if _, err := conn.Read(b[:]); err != nil || b[0] != 'N' {
		t.Fatalf("answer to SSLRequest = %q, %v; want N", b[0], err)
	}
	if _, err := conn.Write(startupMessage("user", "postgres", "database", "postgres")); err != nil {
		t.Fatal(err)
	}
	typ, _, err := readMessage(bufio.NewReader(conn))
	if err != nil || typ != 'R' {
		t.Fatalf("first message after startup = %q, %v; want R", typ, err)
	}
}

// A second connection waits for the first instead of being refused.
func TestRelayWaitsForFreeSlot(t *testing.T) {
	addr := relayAddr(t, DB(t))
	first := dialT(t, addr)
	queryT(t, first, "SELECT 1")

	type result struct {
		user string
		err  error
	}
	second := make(chan result, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), RelayWait+time.Minute)
		defer cancel()
		c, err := dial(ctx, addr)
		if err != nil {
			second <- result{err: err}
			return
		}
		defer c.close()
		rows, err := c.query("SELECT current_user")
		if err == nil && len(rows) == 1 {
			second <- result{user: rows[0][0]}
			return
		}
		second <- result{err: err}
	}()
	first.close()
	r := <-second
	if r.err != nil || r.user != "postgres" {
		t.Fatalf("second connection: current_user = %q, %v; want postgres", r.user, r.err)
	}
}

// When the slot stays taken, the relay gives up with a message that says why.
func TestRelayGivesUpWithReason(t *testing.T) {
	db := DB(t)
	addr := relayAddr(t, db)
	if !isPGlite(t, addr) {
		t.Skip("the server takes more than one connection")
	}
	upstream := rel.upstream
	short, err := newRelay(upstream, 300*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	defer short.close()

	holder := dialT(t, addr)
	defer holder.close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := dial(ctx, short.addr())
	if err == nil {
		c.close()
		t.Fatal("second connection through a relay with a short wait succeeded while the first was open")
	}
	for _, want := range []string{"53300", "one connection at a time"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error = %q; want it to contain %q", err, want)
		}
	}
}

func TestListeningPort(t *testing.T) {
	for _, tc := range []struct {
		line string
		port int
		ok   bool
	}{
		{`PGLiteSocketServer listening on {"port":34863,"host":"127.0.0.1"}`, 34863, true},
		{`PGLiteSocketServer listening on {"path":"/tmp/s"}`, 0, false},
		{`Client connected from 127.0.0.1:50298`, 0, false},
	} {
		port, ok := listeningPort(tc.line)
		if port != tc.port || ok != tc.ok {
			t.Errorf("listeningPort(%q) = %d, %v; want %d, %v", tc.line, port, ok, tc.port, tc.ok)
		}
	}
}

// A client that dies with a reset (a process killed with unread data)
// while the server is still sending does not keep the server's only slot:
// the relay ends its side cleanly. (A reset reaching pglite-socket 0.0.22
// itself keeps the slot taken until it restarts.)
func TestRelayClientResetFreesSlot(t *testing.T) {
	addr := relayAddr(t, DB(t))
	for i := range 3 {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		conn.SetDeadline(time.Now().Add(RelayWait + time.Minute))
		conn.Write(startupMessage("user", "postgres", "database", "postgres"))
		c := &client{conn: conn, r: bufio.NewReader(conn)}
		ready := false
		for !ready {
			typ, body, err := readMessage(c.r)
			if err != nil {
				t.Fatalf("connection %d: startup: %v", i, err)
			}
			switch typ {
			case 'R':
				if binary.BigEndian.Uint32(body) == 5 {
					conn.Write(appendMessage(nil, 'p', query(md5Password("postgres", "postgres", body[4:8]))))
				}
			case 'E':
				t.Fatalf("connection %d: %v", i, parseError(body))
			case 'Z':
				ready = true
			}
		}
		// A big answer the client never reads, then a reset.
		conn.Write(appendMessage(nil, 'Q', query("SELECT repeat('x', 100) FROM generate_series(1, 100000)")))
		if _, _, err := readMessage(c.r); err != nil {
			t.Fatalf("connection %d: first row: %v", i, err)
		}
		conn.(*net.TCPConn).SetLinger(0)
		conn.Close()
	}
	c := dialT(t, addr)
	defer c.close()
	if got := value(t, c, "SELECT 1"); got != "1" {
		t.Errorf("SELECT 1 after three reset clients = %q", got)
	}
}
