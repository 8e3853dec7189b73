package store

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Config says where Postgres is and how to use it. Give either DSN or the
// separate fields (what config.json's "postgres" block and its secret hold).
type Config struct {
	// DSN is a postgres:// URL or a key=value connection string.
	DSN string

	Host     string // default localhost
	Port     int    // default 5432
	Database string // default postgres
	User     string
	Password string
	SSLMode  string // disable, prefer (default), require, verify-ca, verify-full

	// MaxConns caps the pool. 0 takes the DSN's pool_max_conns, else 4.
	// Every operation holds at most one connection at a time, so 1 works.
	MaxConns int

	// Namespace prefixes every schema and role name: <ns>_control and
	// <ns>_<agent>. Empty means "choir", the names of the spec; tests use
	// the unique namespace pgtest gives them.
	Namespace string
}

// DefaultNamespace is the namespace of the spec's choir_control and
// choir_<agent_id>.
const DefaultNamespace = "choir"

// connectTimeout bounds a connection attempt when the config sets none.
const connectTimeout = 10 * time.Second

// Sentinel errors for domain states; test with errors.Is.
var (
	ErrNotFound        = errors.New("not found")
	ErrSessionExists   = errors.New("session already exists")
	ErrAgentActive     = errors.New("agent already has an active session")
	ErrLeaseHeld       = errors.New("resource is leased to another session")
	ErrSessionEnded    = errors.New("session has ended")
	ErrRevGap          = errors.New("revision gap")
	ErrRevFork         = errors.New("revision fork")
	ErrSnapshotAhead   = errors.New("snapshot revision is ahead of the event log")
	ErrAlreadyResolved = errors.New("approval already resolved")
	ErrApprovalExists  = errors.New("an approval with that id exists")
)

// Store is choird's connection to Postgres: a pool plus the names of the
// schemas in its namespace. It is safe for concurrent use.
type Store struct {
	// CallsStored, when set (before the store is used), is told each row
	// the usage ledger added, once, after its transaction committed.
	CallsStored func([]CallRow)

	pool    *pgxpool.Pool
	ns      string
	control string       // quoted control schema name
	batch   int          // agents per bootstrap transaction; 0 is BootstrapBatch
	fence   atomic.Int64 // the leader's term for leader-only writes (leader.go); 0 unfenced
}

var namespaceRE = regexp.MustCompile(`^[a-z][a-z0-9_]{0,29}$`)

// Open connects to Postgres and checks that it answers. A server that cannot
// be reached is an error naming host and port (never the password).
func Open(ctx context.Context, cfg Config) (*Store, error) {
	return open(ctx, cfg, nil)
}

// open is Open with a last change to the pool's config (tests use it to
// behave as an older client would).
func open(ctx context.Context, cfg Config, tweak func(*pgxpool.Config)) (*Store, error) {
	ns := cfg.Namespace
	if ns == "" {
		ns = DefaultNamespace
	}
	if !namespaceRE.MatchString(ns) {
		return nil, fmt.Errorf("store namespace %q: want a lowercase letter, then up to 29 of [a-z0-9_]", ns)
	}
	pcfg, err := poolConfig(cfg)
	if err != nil {
		return nil, err
	}
	if tweak != nil {
		tweak(pcfg)
	}
	where := describeHost(pcfg.ConnConfig)
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return nil, fmt.Errorf("postgres at %s: %s", where, redact(err, pcfg.ConnConfig.Password))
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, connectError(where, err, pcfg.ConnConfig.Password)
	}
	return &Store{
		pool:    pool,
		ns:      ns,
		control: pgx.Identifier{ns + "_control"}.Sanitize(),
	}, nil
}

// Close closes the pool, waiting for connections in use to be returned.
func (s *Store) Close() { s.pool.Close() }

// Namespace is the prefix of the store's schema and role names.
func (s *Store) Namespace() string { return s.ns }

func poolConfig(cfg Config) (*pgxpool.Config, error) {
	conn := cfg.DSN
	if conn != "" {
		if cfg.Host != "" || cfg.Port != 0 || cfg.Database != "" || cfg.User != "" || cfg.Password != "" || cfg.SSLMode != "" {
			return nil, errors.New("postgres config: give either a DSN or host/port/database/user/password/sslmode, not both")
		}
	} else {
		host := orDefault(cfg.Host, "localhost")
		port := cfg.Port
		if port == 0 {
			port = 5432
		}
		u := url.URL{
			Scheme: "postgres",
			Host:   net.JoinHostPort(host, strconv.Itoa(port)),
			Path:   "/" + orDefault(cfg.Database, "postgres"),
		}
		if cfg.User != "" {
			u.User = url.UserPassword(cfg.User, cfg.Password)
		}
		if cfg.SSLMode != "" {
			u.RawQuery = url.Values{"sslmode": {cfg.SSLMode}}.Encode()
		}
		conn = u.String()
	}
	pcfg, err := pgxpool.ParseConfig(conn)
	if err != nil {
		return nil, fmt.Errorf("postgres config: %s; fix config.json postgres", redact(err, cfg.Password))
	}
	if cfg.MaxConns > 0 {
		pcfg.MaxConns = int32(cfg.MaxConns)
	} else if !strings.Contains(conn, "pool_max_conns") {
		pcfg.MaxConns = 4
	}
	pcfg.ConnConfig.Tracer = errorTracer{} // choir_postgres_errors_total
	if pcfg.ConnConfig.ConnectTimeout == 0 {
		pcfg.ConnConfig.ConnectTimeout = connectTimeout
	}
	// No named prepared statements (see execMode), unless the DSN chose
	// another mode that makes none.
	if !strings.Contains(conn, "default_query_exec_mode") {
		pcfg.ConnConfig.DefaultQueryExecMode = execMode
	} else if pcfg.ConnConfig.DefaultQueryExecMode == pgx.QueryExecModeCacheStatement {
		return nil, errors.New("postgres config: default_query_exec_mode=cache_statement names prepared statements, " +
			"which outlive a choird that dies on servers that keep its session (PGlite, poolers in transaction mode) and break its next start; " +
			"remove it from the DSN (choird uses cache_describe)")
	}
	return pcfg, nil
}

// execMode is how every query runs: the extended protocol on the unnamed
// statement, its parameter and result types cached per connection, so one
// round trip a query once it has been seen. It never names a prepared
// statement, so nothing a dead choird left in a server session that
// outlives it (PGlite keeps its one session across connections; so do
// poolers in transaction mode) can collide with what the next one sends,
// and a pooler may move the connection between queries. Parameters keep
// their server-side types, so pgvector's vector, jsonb and arrays bind as
// in the default mode, unlike the exec and simple-protocol modes, which
// guess types from Go values.
const execMode = pgx.QueryExecModeCacheDescribe

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// describeHost names the server for messages: host:port, or the socket
// directory.
func describeHost(c *pgx.ConnConfig) string {
	if strings.HasPrefix(c.Host, "/") {
		return c.Host
	}
	return net.JoinHostPort(c.Host, strconv.Itoa(int(c.Port)))
}

// connectError says why the first connection failed, on one line: the
// server refused the login, or could not be reached at all.
func connectError(where string, err error, password string) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return fmt.Errorf("postgres at %s refused the connection: %s (SQLSTATE %s); fix config.json postgres or its secret",
			where, redact(pe, password), pe.Code)
	}
	var ne *net.OpError
	if errors.As(err, &ne) {
		err = ne
	}
	msg := strings.Join(strings.Fields(redact(err, password)), " ")
	return fmt.Errorf("postgres at %s is not reachable: %s; start it or fix config.json postgres", where, msg)
}

// redact returns err's text with the password masked, whatever the driver
// put in it.
func redact(err error, password string) string {
	msg := err.Error()
	if pe, ok := err.(*pgconn.PgError); ok {
		msg = pe.Message
	}
	if password != "" {
		msg = strings.ReplaceAll(msg, password, "xxxxx")
	}
	return msg
}

// q puts the store's control schema into a query written with
// choir_control.
func (s *Store) q(sql string) string {
	return strings.ReplaceAll(sql, "choir_control.", s.control+".")
}

// pgCode returns the SQLSTATE and constraint of a Postgres error.
func pgCode(err error) (code, constraint string) {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code, pe.ConstraintName
	}
	return "", ""
}

// inTx runs fn in a transaction, committing if it returns nil.
func (s *Store) inTx(ctx context.Context, fn func(pgx.Tx) error) error {
	return pgx.BeginFunc(ctx, s.pool, fn)
}

// asAgent runs fn in a transaction under the agent's role (spec 23.0), so
// that what fn reads and writes is limited to the agent's own schema.
func (s *Store) asAgent(ctx context.Context, agentID string, fn func(pgx.Tx) error) error {
	n, err := s.agentNames(agentID)
	if err != nil {
		return err
	}
	return s.inTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SET LOCAL ROLE "+n.Role); err != nil {
			return fmt.Errorf("set role %s: %w", n.bare, err)
		}
		return fn(tx)
	})
}
