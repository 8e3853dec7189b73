package control

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// The running config's log retention reaches the logs: loading it prunes
// logs/archive/, and status counts what is left.
func TestConfigRetentionPrunesTheLogArchive(t *testing.T) {
	p, home, _, _ := hostileHome(t)
	write := func(name string, size int, age time.Duration) string {
		path := filepath.Join(home.LogsDir(), "archive", name)
		os.MkdirAll(filepath.Dir(path), 0o700)
		if err := os.WriteFile(path, make([]byte, size), 0o600); err != nil {
			t.Fatal(err)
		}
		at := time.Now().Add(-age)
		os.Chtimes(path, at, at)
		return path
	}
	old := write("agent-1/20200101T000000.000Z.log.gz", 300, 40*24*time.Hour) // example: 30 days
	recent := write("choird/20990101T000000.000Z.log.gz", 200, time.Hour)
	if st := p.Status().LogArchive; st.Files != 2 || st.Bytes != 500 {
		t.Errorf("status log archive = %+v; want 2 files, 500 bytes", st)
	}

	p.SetConfig(p.Config()) // as at start or on apply

	if _, err := os.Stat(old); err == nil {
		t.Errorf("%s (40 days old) survived log_retention_days 30", old)
	}
	if _, err := os.Stat(recent); err != nil {
		t.Errorf("recent archive: %v; want kept", err)
	}
	if st := p.Status().LogArchive; st.Files != 1 || st.Bytes != 200 {
		t.Errorf("status log archive after pruning = %+v; want 1 file, 200 bytes", st)
	}
}
