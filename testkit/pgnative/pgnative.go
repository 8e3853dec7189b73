// Package pgnative gives tests a native Postgres (Debian's postgresql-15
// with pgvector compiled in), for what PGlite cannot do: several
// connections with sessions of their own, so advisory locks, two choird
// processes against one database, and a session that dies and frees its
// locks. Import it only from _test.go files.
//
// # Where the server comes from
//
// DB looks for a server once per test binary:
//
//  1. CHOIR_TEST_NATIVE_PG_URL, a postgres:// URL of a native Postgres with
//     pgvector whose user may CREATE DATABASE;
//  2. otherwise a private server: initdb and pg_ctl of the newest
//     /usr/lib/postgresql/<major>/bin, run as the postgres user when the
//     test runs as root (initdb refuses root), with its data and its unix
//     socket in a temporary directory, listening on a free loopback port.
//     It starts in about a second and is stopped by Main.
//  3. otherwise the test is Unavailable (testkit): skipped under go test,
//     failed under make test (testkit/ci.sh installs postgresql-15 and
//     builds pgvector from the Go module proxy's copy of its source).
//
// Each call of DB creates a database of its own (CREATE DATABASE through
// psql: only choird/store imports pgx) and drops it at cleanup, so tests
// need no namespace and may run in parallel.
//
// A package whose tests call DB declares
//
//	func TestMain(m *testing.M) { pgnative.Main(m) }
package pgnative

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"choir/testkit"
)

// EnvURL names the environment variable holding the URL of a native
// Postgres to use instead of a private one.
const EnvURL = "CHOIR_TEST_NATIVE_PG_URL"

// Database is one test's database on the server.
type Database struct {
	// DSN is a postgres:// URL of the test's own database (sslmode=disable).
	DSN string
	// Name is the database's name.
	Name string
	// Backend says which server this is, for logs.
	Backend string
}

var (
	mu       sync.Mutex
	setupErr error
	ready    bool
	base     *url.URL // the server's URL, database "postgres"
	backend  string
	srv      *server
)

// DB returns a fresh database for t, starting the server on first use, or
// stops t with testkit.Unavailable when there is none.
func DB(t testing.TB) Database {
	t.Helper()
	if err := setup(); err != nil {
		testkit.Unavailable(t, "pgnative: no native Postgres with pgvector: %v", err)
	}
	b := make([]byte, 6)
	rand.Read(b)
	name := "pgn" + hex.EncodeToString(b)
	if err := Exec(base.String(), "CREATE DATABASE "+name); err != nil {
		t.Fatalf("pgnative: %v", err)
	}
	t.Cleanup(func() {
		if err := Exec(base.String(), "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			t.Logf("pgnative: %v", err)
		}
	})
	u := *base
	u.Path = "/" + name
	return Database{DSN: u.String(), Name: name, Backend: backend}
}

// Exec runs SQL statements with psql against dsn and returns psql's
// complaint when one fails.
func Exec(dsn, sql string) error {
	_, err := Query(dsn, sql)
	return err
}

// Query runs one SQL statement with psql against dsn and returns its rows,
// one a line, columns separated by "|".
func Query(dsn, sql string) (string, error) {
	psql, err := binary("psql")
	if err != nil {
		return "", err
	}
	cmd := exec.Command(psql, "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-d", dsn, "-c", sql)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("psql %q: %v: %s", sql, err, strings.TrimSpace(string(out)))
	}
	return strings.TrimSpace(string(out)), nil
}

// Main runs the tests, then stops the private server, if any.
func Main(m *testing.M) {
	code := m.Run()
	Stop()
	os.Exit(code)
}

// Stop stops the private server, if one was started.
func Stop() {
	mu.Lock()
	defer mu.Unlock()
	if srv != nil {
		srv.stop()
		srv = nil
	}
	ready = false
	setupErr = errors.New("pgnative.Stop was called")
}

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
		if env := os.Getenv(EnvURL); env != "" {
			u, err := url.Parse(env)
			if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") || u.Host == "" {
				return fmt.Errorf("%s is not a postgres://host:port/db URL", EnvURL)
			}
			q := u.Query()
			q.Set("sslmode", "disable")
			u.RawQuery = q.Encode()
			u.Path = "/postgres"
			if err := Exec(u.String(), "SELECT 1"); err != nil {
				return fmt.Errorf("%s does not answer: %v", EnvURL, err)
			}
			base, backend = u, "native Postgres at "+u.Host+" ("+EnvURL+")"
			return nil
		}
		s, err := start()
		if err != nil {
			return err
		}
		srv = s
		base = &url.URL{Scheme: "postgres", User: url.User(superuser), Host: s.addr, Path: "/postgres", RawQuery: "sslmode=disable"}
		backend = "private native Postgres at " + s.addr
		return nil
	}()
	if setupErr == nil {
		ready = true
	}
	return setupErr
}

// superuser is the role initdb makes for the private server.
const superuser = "choir"

// binDir is the newest /usr/lib/postgresql/<major>/bin with initdb.
func binDir() (string, error) {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	if len(dirs) == 0 {
		return "", errors.New("no /usr/lib/postgresql/*/bin/initdb: apt-get install postgresql-15 postgresql-server-dev-15, then build pgvector (testkit/ci.sh does both)")
	}
	sort.Slice(dirs, func(i, j int) bool { return major(dirs[i]) > major(dirs[j]) })
	return filepath.Dir(dirs[0]), nil
}

func major(initdb string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(initdb))))
	return n
}

func binary(name string) (string, error) {
	dir, err := binDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, name), nil
}

// server is a private Postgres.
type server struct {
	dir, data, pgctl string
	addr             string
	asUser           string // run its commands as this user ("" = as we are)
}

// start makes a cluster in a temporary directory and starts it.
func start() (*server, error) {
	dir, err := binDir()
	if err != nil {
		return nil, err
	}
	share, err := exec.Command(filepath.Join(dir, "pg_config"), "--sharedir").Output()
	if err != nil {
		return nil, fmt.Errorf("pg_config --sharedir: %v (apt-get install postgresql-server-dev-15)", err)
	}
	if _, err := os.Stat(filepath.Join(strings.TrimSpace(string(share)), "extension", "vector.control")); err != nil {
		return nil, fmt.Errorf("pgvector is not installed in %s: build it from the Go module proxy's source (testkit/ci.sh does)", strings.TrimSpace(string(share)))
	}
	s := &server{pgctl: filepath.Join(dir, "pg_ctl")}
	// A short path: the unix socket's must fit in 107 bytes.
	if s.dir, err = os.MkdirTemp("", "pgn"); err != nil {
		return nil, err
	}
	s.data = filepath.Join(s.dir, "data")
	if os.Geteuid() == 0 {
		pg, err := user.Lookup("postgres")
		if err != nil {
			os.RemoveAll(s.dir)
			return nil, errors.New("running as root, and there is no postgres user to run initdb as (apt-get install postgresql-15 makes it)")
		}
		uid, _ := strconv.Atoi(pg.Uid)
		gid, _ := strconv.Atoi(pg.Gid)
		if err := os.Chown(s.dir, uid, gid); err != nil {
			os.RemoveAll(s.dir)
			return nil, err
		}
		s.asUser = "postgres"
	}
	if out, err := s.run(filepath.Join(dir, "initdb"), "-D", s.data, "-A", "trust", "-U", superuser, "-E", "UTF8", "--no-sync"); err != nil {
		os.RemoveAll(s.dir)
		return nil, fmt.Errorf("initdb: %v: %s", err, out)
	}
	// A free port: another test binary may take it between the probe and
	// the start; then the start fails and is tried again on another.
	for attempt := 0; ; attempt++ {
		port, err := freePort()
		if err != nil {
			os.RemoveAll(s.dir)
			return nil, err
		}
		opts := fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200", port, s.dir)
		out, err := s.run(s.pgctl, "-D", s.data, "-o", opts, "-l", filepath.Join(s.dir, "log"), "-w", "-t", "60", "start")
		if err == nil {
			s.addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
			break
		}
		if attempt == 3 {
			log, _ := os.ReadFile(filepath.Join(s.dir, "log"))
			os.RemoveAll(s.dir)
			return nil, fmt.Errorf("pg_ctl start: %v: %s\n%s", err, out, tail(string(log)))
		}
	}
	return s, nil
}

func (s *server) run(name string, args ...string) ([]byte, error) {
	var cmd *exec.Cmd
	if s.asUser != "" {
		cmd = exec.Command("runuser", append([]string{"-u", s.asUser, "--", name}, args...)...)
	} else {
		cmd = exec.Command(name, args...)
	}
	cmd.Dir = s.dir
	return cmd.CombinedOutput()
}

func (s *server) stop() {
	s.run(s.pgctl, "-D", s.data, "-m", "immediate", "-w", "-t", "30", "stop")
	os.RemoveAll(s.dir)
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func tail(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > 20 {
		lines = lines[len(lines)-20:]
	}
	return strings.Join(lines, "\n")
}

// Terminate ends every session of a database but the caller's: what a
// server does to a client it finds dead. Tests use it to take a leader's
// lock away.
func Terminate(db Database, where string) error {
	return Exec(db.DSN, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()"+where)
}
