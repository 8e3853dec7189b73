package logs

import (
	"bufio"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

var day0 = time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)

func ago(days float64) time.Time { return day0.Add(-time.Duration(days * float64(24*time.Hour))) }

func TestPlan(t *testing.T) {
	files := []Archived{
		{"choird/c1.log.gz", 400, ago(40)},
		{"agent-1/a1.log.gz", 300, ago(35)},
		{"choird/c2.log.gz", 200, ago(10)},
		{"agent-2/b1.log.gz", 100, ago(5)},
		{"agent-1/a2.log.gz", 50, ago(1)},
	}
	tests := []struct {
		name string
		r    Retention
		keep string
		want []string // "name reason", in deletion order
	}{
		{"by age", Retention{MaxAge: 30 * 24 * time.Hour}, "", []string{"choird/c1.log.gz age", "agent-1/a1.log.gz age"}},
		{"by size, oldest first across sources", Retention{MaxBytes: 300}, "",
			[]string{"choird/c1.log.gz size", "agent-1/a1.log.gz size", "choird/c2.log.gz size"}},
		{"size exactly at the limit keeps everything", Retention{MaxBytes: 1050}, "", nil},
		{"age then size", Retention{MaxAge: 30 * 24 * time.Hour, MaxBytes: 200}, "",
			[]string{"choird/c1.log.gz age", "agent-1/a1.log.gz age", "choird/c2.log.gz size"}},
		{"zero is unlimited", Retention{}, "", nil},
		{"the archive just written survives the age limit", Retention{MaxAge: time.Hour}, "agent-1/a2.log.gz",
			[]string{"choird/c1.log.gz age", "agent-1/a1.log.gz age", "choird/c2.log.gz age", "agent-2/b1.log.gz age"}},
		{"the archive just written survives alone over the size limit", Retention{MaxBytes: 10}, "choird/c1.log.gz",
			[]string{"agent-1/a1.log.gz size", "choird/c2.log.gz size", "agent-2/b1.log.gz size", "agent-1/a2.log.gz size"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, d := range Plan(files, tc.r, day0, tc.keep) {
				got = append(got, d.Name+" "+d.Reason)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Plan(%+v, keep %q) = %q; want %q", tc.r, tc.keep, got, tc.want)
			}
		})
	}
}

// writeArchive puts an archive of size bytes under dir/archive/name, dated at.
func writeArchive(t *testing.T, dir, name string, size int, at time.Time) string {
	t.Helper()
	p := filepath.Join(dir, "archive", filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, make([]byte, size), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(p, at, at); err != nil {
		t.Fatal(err)
	}
	return p
}

func exists(p string) bool { _, err := os.Lstat(p); return err == nil }

// retentionLines returns choird.log's log-retention lines as maps.
func retentionLines(t *testing.T, dir string) []map[string]any {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, "choird.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []map[string]any
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var line map[string]any
		if json.Unmarshal(sc.Bytes(), &line) == nil && strings.HasPrefix(line["msg"].(string), "log retention") {
			out = append(out, line)
		}
	}
	return out
}

func newTestManager(t *testing.T, threshold int) (*Manager, string) {
	t.Helper()
	dir := t.TempDir()
	m, err := NewManager(dir, threshold, slog.LevelInfo, NewRedactor())
	if err != nil {
		t.Fatal(err)
	}
	m.now = func() time.Time { return day0 }
	t.Cleanup(func() { m.Close() })
	return m, dir
}

func TestSetRetentionPrunesAndLogsEachDeletion(t *testing.T) {
	m, dir := newTestManager(t, 1000)
	old := writeArchive(t, dir, "choird/20260901T000000.000Z.log.gz", 500, ago(60))
	big := writeArchive(t, dir, "agent-1/20261020T000000.000Z.log.gz", 2<<20, ago(12))
	recent := writeArchive(t, dir, "agent-2/20261030T000000.000Z.log.gz", 1<<20, ago(2))
	al, _ := m.Agent("agent-1")
	al.Info("active agent log") // the active logs are never candidates

	m.SetRetention(Retention{MaxAge: 30 * 24 * time.Hour, MaxBytes: 2 << 20})

	if exists(old) || exists(big) {
		t.Errorf("after pruning: %s exists %v, %s exists %v; want both deleted", old, exists(old), big, exists(big))
	}
	if !exists(recent) {
		t.Errorf("%s was deleted; want kept (within age and size)", recent)
	}
	for _, name := range []string{"choird.log", "agent-1.log"} {
		if !exists(filepath.Join(dir, name)) {
			t.Errorf("active log %s was deleted", name)
		}
	}
	lines := retentionLines(t, dir)
	got := map[string]string{}
	for _, l := range lines {
		got[l["file"].(string)] = l["reason"].(string)
		if l["system"] != "logs" || l["bytes"] == nil {
			t.Errorf("retention line %v; want system logs and bytes", l)
		}
	}
	want := map[string]string{
		"choird/20260901T000000.000Z.log.gz":  "older than 30 days",
		"agent-1/20261020T000000.000Z.log.gz": "archive over 2 MiB",
	}
	if len(lines) != 2 || !reflect.DeepEqual(got, want) {
		t.Errorf("choird.log retention lines = %v; want one per deletion: %v", lines, want)
	}

	m.Prune() // nothing left to delete: nothing more logged
	if n := len(retentionLines(t, dir)); n != 2 {
		t.Errorf("a prune with nothing to delete logged %d lines in all; want still 2", n)
	}
}

func TestZeroRetentionKeepsEverything(t *testing.T) {
	m, dir := newTestManager(t, 1000)
	p := writeArchive(t, dir, "choird/20200101T000000.000Z.log.gz", 5<<20, ago(3000))
	m.SetRetention(Retention{})
	if !exists(p) {
		t.Errorf("retention 0/0 deleted %s; want no limit", p)
	}
}

func TestArchivingPrunesButKeepsTheNewArchive(t *testing.T) {
	m, dir := newTestManager(t, 1000)
	m.SetRetention(Retention{MaxBytes: 10}) // smaller than any archive
	older := writeArchive(t, dir, "choird/20261001T000000.000Z.log.gz", 100, ago(30))
	al, _ := m.Agent("agent-1")
	for i := 0; i < 50; i++ {
		al.Info("a line long enough to compress to more than ten bytes", "i", i)
	}
	if err := m.ArchiveAgent("agent-1"); err != nil {
		t.Fatal(err)
	}
	if exists(older) {
		t.Errorf("%s survived an archive past the size limit; want deleted", older)
	}
	fresh, _ := filepath.Glob(filepath.Join(dir, "archive", "agent-1", "*.log.gz"))
	if len(fresh) != 1 {
		t.Fatalf("agent-1 archives = %v; want the one just written, kept although over the limit", fresh)
	}

	// choird.log archiving past its threshold prunes likewise.
	m.SetThreshold(5)
	log := m.Choird()
	for i := 0; i < 10; i++ {
		log.Info("filler", "i", i)
	}
	if exists(fresh[0]) {
		t.Errorf("%s survived choird.log's archive past the size limit; want deleted", fresh[0])
	}
	if got, _ := filepath.Glob(filepath.Join(dir, "archive", "choird", "*.log.gz")); len(got) != 1 {
		t.Errorf("choird archives = %v; want the newest only", got)
	}
}

func TestSymlinksInTheArchiveAreNotFollowed(t *testing.T) {
	m, dir := newTestManager(t, 1000)
	outside := t.TempDir()
	victim := filepath.Join(outside, "20200101T000000.000Z.log.gz")
	if err := os.WriteFile(victim, []byte("keep me"), 0o600); err != nil {
		t.Fatal(err)
	}
	os.Chtimes(victim, ago(3000), ago(3000))
	writeArchive(t, dir, "choird/20261031T000000.000Z.log.gz", 10, ago(1))
	// A source directory and a file that are symlinks out of the archive.
	if err := os.Symlink(outside, filepath.Join(dir, "archive", "evil")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, filepath.Join(dir, "archive", "choird", "20190101T000000.000Z.log.gz")); err != nil {
		t.Fatal(err)
	}

	m.SetRetention(Retention{MaxAge: time.Hour, MaxBytes: 1})
	if !exists(victim) {
		t.Fatalf("%s outside the archive was deleted through a symlink", victim)
	}
	files, err := ListArchive(filepath.Join(dir, "archive"))
	if err != nil || len(files) != 0 {
		t.Errorf("ListArchive after pruning = %v, %v; want no regular archives left and symlinks unlisted", files, err)
	}

	for _, name := range []string{"evil/20200101T000000.000Z.log.gz", "../x.log.gz", "/etc/passwd", "choird/20190101T000000.000Z.log.gz", "choird"} {
		if err := removeArchived(filepath.Join(dir, "archive"), name); err == nil {
			t.Errorf("removeArchived(%q) = nil; want refused", name)
		}
	}
	if !exists(victim) {
		t.Errorf("%s was deleted by removeArchived", victim)
	}
}

func TestDailyPruningStopsOnClose(t *testing.T) {
	m, dir := newTestManager(t, 1000)
	ticks := make(chan time.Time)
	var stopped atomic.Bool
	m.startPruning(ticks, func() { stopped.Store(true) })
	m.SetRetention(Retention{MaxAge: 30 * 24 * time.Hour})

	p := writeArchive(t, dir, "agent-1/20261015T000000.000Z.log.gz", 10, ago(20))
	ticks <- day0 // still within 30 days
	clock := day0.Add(11 * 24 * time.Hour)
	m.pruneMu.Lock()
	m.now = func() time.Time { return clock }
	m.pruneMu.Unlock()
	ticks <- clock
	waitFor(t, "the daily prune deleting a 31-day-old archive", func() bool { return !exists(p) })

	m.Close()
	if !stopped.Load() {
		t.Error("Close did not stop the ticker")
	}
	select {
	case ticks <- clock:
		t.Error("the pruner still takes ticks after Close")
	default:
	}
}

func TestDirSize(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "choird.log"), make([]byte, 100), 0o600)
	writeArchive(t, dir, "choird/a.log.gz", 1000, day0)
	big := filepath.Join(t.TempDir(), "big")
	os.WriteFile(big, make([]byte, 1<<20), 0o600)
	os.Symlink(big, filepath.Join(dir, "archive", "link"))
	got, err := DirSize(dir)
	if err != nil || got != 1100 {
		t.Errorf("DirSize = %d, %v; want 1100 (symlinked files not counted)", got, err)
	}
	if _, err := DirSize(filepath.Join(dir, "missing")); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Errorf("DirSize(missing) = %v; want an error naming the directory", err)
	}
}
