package logs

import (
	"fmt"
	"path/filepath"
	"time"
)

// PruneInterval is how often StartPruning applies the retention while
// choird runs (archives also prune as they are written).
const PruneInterval = 24 * time.Hour

// SetRetention installs the retention of logs/archive/ (from config.json's
// log_retention_days and log_retention_mb) and applies it at once.
func (m *Manager) SetRetention(r Retention) {
	m.mu.Lock()
	m.retention = r
	m.mu.Unlock()
	m.Prune()
}

// StartPruning applies the retention every PruneInterval until Close.
func (m *Manager) StartPruning() {
	t := time.NewTicker(PruneInterval)
	m.startPruning(t.C, t.Stop)
}

func (m *Manager) startPruning(ticks <-chan time.Time, stopTicks func()) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.stopPruning != nil || m.closed {
		stopTicks()
		return // already running, or closed
	}
	stop := make(chan struct{})
	m.stopPruning = stop
	m.pruning.Add(1)
	go func() {
		defer m.pruning.Done()
		defer stopTicks()
		for {
			select {
			case <-stop:
				return
			case <-ticks:
				m.Prune()
			}
		}
	}()
}

// Prune deletes the archived logs that the retention no longer allows.
func (m *Manager) Prune() { m.prune("") }

// afterArchive prunes once an archive is written, sparing that archive.
func (m *Manager) afterArchive(path string) {
	archive := filepath.Join(m.dir, "archive")
	rel, err := filepath.Rel(archive, path)
	if err != nil {
		rel = ""
	}
	m.prune(filepath.ToSlash(rel))
}

// prune applies the retention, sparing keep (a name relative to
// logs/archive/). Every deletion and error is logged in choird.log once;
// none is fatal. The lines are written after pruneMu is released, since a
// line can itself archive choird.log and prune again.
func (m *Manager) prune(keep string) {
	m.mu.Lock()
	r := m.retention
	m.mu.Unlock()
	if r.MaxAge <= 0 && r.MaxBytes <= 0 {
		return
	}
	archive := filepath.Join(m.dir, "archive")
	type outcome struct {
		d   Deletion
		err error
	}
	var done []outcome
	var listErr error
	func() {
		m.pruneMu.Lock()
		defer m.pruneMu.Unlock()
		files, err := ListArchive(archive)
		if err != nil {
			listErr = err // prune what could be listed
		}
		for _, d := range Plan(files, r, m.now(), keep) {
			done = append(done, outcome{d, removeArchived(archive, d.Name)})
		}
	}()
	// A fresh handler, with its own mutex: when a choird.log line archived
	// the file, the handler that wrote it still holds its lock here.
	log := m.Choird().With(KeySystem, "logs")
	if listErr != nil {
		log.Warn("log retention: cannot list the archive", KeyError, listErr.Error())
	}
	for _, o := range done {
		why := "older than " + formatAge(r.MaxAge)
		if o.d.Reason == ReasonSize {
			why = "archive over " + formatMiB(r.MaxBytes)
		}
		if o.err != nil {
			log.Warn("log retention: cannot delete an archived log", "file", o.d.Name, "bytes", o.d.Size, "reason", why, KeyError, o.err.Error())
			continue
		}
		log.Info("log retention: deleted an archived log", "file", o.d.Name, "bytes", o.d.Size, "reason", why)
	}
}

func formatAge(d time.Duration) string {
	if d%(24*time.Hour) == 0 {
		return fmt.Sprintf("%d days", d/(24*time.Hour))
	}
	return d.String()
}

func formatMiB(n int64) string {
	if n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}

// ArchiveUsage counts the archived logs under logs/archive/ and their
// bytes, for choirctl status.
func (m *Manager) ArchiveUsage() (files int, bytes int64, err error) {
	list, err := ListArchive(filepath.Join(m.dir, "archive"))
	for _, f := range list {
		files, bytes = files+1, bytes+f.Size
	}
	return files, bytes, err
}
