package hostbench

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// StartPostgres keeps DBURL (CHOIR_DATABASE_URL) when it is set, else
// starts the embedded PGlite (testkit/pgtest/pglite.sh) in Work and sets
// DBURL, PGDir and DBPID.
func (h *Host) StartPostgres(ctx context.Context) error {
	if h.DBURL != "" {
		h.Say("Postgres: CHOIR_DATABASE_URL (its server's CPU is not measured)")
		return nil
	}
	h.Say("starting PGlite (Postgres 17 + pgvector)")
	h.PGDir = filepath.Join(h.Work, "pg")
	out, err := h.Script(ctx, "testkit/pgtest/pglite.sh", "start", h.PGDir)
	if err != nil {
		h.PGDir = ""
		return fmt.Errorf("cannot start PGlite (needs node and npm), or set CHOIR_DATABASE_URL: %w", err)
	}
	h.DBURL = strings.TrimPrefix(strings.TrimSpace(out), "CHOIR_TEST_DATABASE_URL=")
	pid, err := os.ReadFile(filepath.Join(h.PGDir, "pid"))
	if err != nil {
		return fmt.Errorf("PGlite's pid file: %w", err)
	}
	h.DBPID, _ = strconv.Atoi(strings.TrimSpace(string(pid)))
	return nil
}

// StopPostgres stops PGlite if StartPostgres started it.
func (h *Host) StopPostgres(ctx context.Context) {
	if h.PGDir != "" {
		h.Script(ctx, "testkit/pgtest/pglite.sh", "stop", h.PGDir)
	}
}

// Postgres is a postgres:// URL taken apart as choir's config wants it.
type Postgres struct {
	Host     string
	Port     int // 5432 when the URL names none
	Database string
	SSLMode  string // prefer when the URL names none
	User     string // postgres when the URL names none
	Password string
}

// ParsePostgres takes a postgres:// URL apart.
func ParsePostgres(raw string) (Postgres, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Hostname() == "" {
		return Postgres{}, fmt.Errorf("the database URL %q is not a postgres:// URL", raw)
	}
	p := Postgres{Host: u.Hostname(), Database: strings.TrimPrefix(u.Path, "/"), SSLMode: u.Query().Get("sslmode"), User: u.User.Username()}
	p.Port, _ = strconv.Atoi(u.Port())
	p.Password, _ = u.User.Password()
	if p.Port == 0 {
		p.Port = 5432
	}
	if p.SSLMode == "" {
		p.SSLMode = "prefer"
	}
	if p.User == "" {
		p.User = "postgres"
	}
	if p.Database == "" {
		p.Database = "postgres"
	}
	return p, nil
}

// Config is config.json's "postgres" object, its password in the secret
// named secret.
func (p Postgres) Config(poolSize int, secret string) map[string]any {
	return map[string]any{"host": p.Host, "port": p.Port, "database": p.Database, "sslmode": p.SSLMode, "pool_size": poolSize, "secret": secret}
}

// Secret is the value of that secret: user:password.
func (p Postgres) Secret() string { return p.User + ":" + p.Password }
