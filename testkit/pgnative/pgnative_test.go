package pgnative

import (
	"strings"
	"testing"
)

func TestMain(m *testing.M) { Main(m) }

// TestDBHasPgvectorAndSessions: a test's database has pgvector, and two
// connections are two sessions: an advisory lock one holds, the other
// cannot take.
func TestDBHasPgvectorAndSessions(t *testing.T) {
	db := DB(t)
	if err := Exec(db.DSN, "CREATE EXTENSION vector; SELECT '[1,2]'::vector <=> '[2,1]'::vector"); err != nil {
		t.Fatal(err)
	}
	got, err := Query(db.DSN, "SELECT current_database()")
	if err != nil || got != db.Name {
		t.Fatalf("current_database() = %q, %v; want %q", got, err, db.Name)
	}
	other := DB(t)
	if other.Name == db.Name {
		t.Fatalf("two calls of DB gave one database %s", db.Name)
	}
	// psql's session ends with the command: its lock is freed.
	if got, err := Query(db.DSN, "SELECT pg_try_advisory_lock(42)"); err != nil || !strings.Contains(got, "t") {
		t.Fatalf("pg_try_advisory_lock = %q, %v", got, err)
	}
	if got, err := Query(db.DSN, "SELECT pg_try_advisory_lock(42)"); err != nil || !strings.Contains(got, "t") {
		t.Fatalf("pg_try_advisory_lock after the first session ended = %q, %v; want t", got, err)
	}
}
