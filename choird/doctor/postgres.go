package doctor

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"

	"choir/choird/store"
	"choir/internal/config"
)

// checkPostgres connects with the configured secret, as choird does, and
// asks for the server's version and the vector extension. It only reads.
func (d *Doctor) checkPostgres(ctx context.Context) Result {
	l := d.getLoaded()
	if l == nil {
		return skip("needs a valid config (see the config line)")
	}
	pg := l.Config.Postgres
	where := net.JoinHostPort(pg.Host, strconv.Itoa(pg.Port)) + "/" + pg.Database
	user, password := config.SplitCredentials(l.Secrets[pg.Secret])
	// Leave part of the deadline to say what went wrong.
	cctx, cancel := context.WithTimeout(ctx, d.inner())
	defer cancel()
	st, err := store.Open(cctx, store.Config{
		Host: pg.Host, Port: pg.Port, Database: pg.Database, User: user, Password: password,
		SSLMode: pg.SSLMode, MaxConns: 1, Namespace: pg.Namespace,
	})
	if err != nil {
		return d.postgresDown(where, err)
	}
	defer st.Close()
	si, err := st.ServerInfo(cctx)
	if err != nil {
		return d.postgresDown(where, err)
	}
	detail := fmt.Sprintf("Postgres %s at %s as %s", si.Version, where, user)
	switch {
	case si.VectorAvailable == "":
		return bad(Fail, "install pgvector for this server (https://github.com/pgvector/pgvector); choird needs it for memory",
			"%s: the vector extension is not available", detail)
	case si.VectorInstalled == "":
		detail += fmt.Sprintf(", vector %s available (choird creates it at start)", si.VectorAvailable)
	default:
		detail += fmt.Sprintf(", vector %s", si.VectorInstalled)
	}
	return ok("%s", detail)
}

// postgresDown words a failed connection. A one-connection server (PGlite
// with -m 1) that choird already holds refuses or queues a second client:
// when choird reports itself healthy, that is a warning, not a failure.
func (d *Doctor) postgresDown(where string, err error) Result {
	msg := err.Error()
	if strings.Contains(msg, "context deadline exceeded") {
		msg = fmt.Sprintf("postgres at %s did not answer within %s", where, d.inner())
	}
	if st := d.getStatus(); st != nil && st.Healthy && !degradedBy(st.Degraded, "Postgres") {
		return bad(Warn, "nothing to do if the server serves one connection at a time (PGlite -m 1); otherwise check its max_connections",
			"%s; but the running choird is connected to it and healthy, so its version and the vector extension were not checked", msg)
	}
	return bad(Fail, "start the server, or fix config.json's postgres block or its secret (choirctl secret set "+postgresSecret(d)+")", "%s", msg)
}

func postgresSecret(d *Doctor) string {
	if l := d.getLoaded(); l != nil && l.Config.Postgres.Secret != "" {
		return l.Config.Postgres.Secret
	}
	return "postgres"
}

func degradedBy(reasons []string, what string) bool {
	for _, r := range reasons {
		if strings.Contains(r, what) {
			return true
		}
	}
	return false
}
