package logs

import (
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"sync"
	"time"
)

// Manager owns the files under .choir.d/logs/: choird.log and one file per
// agent, all sharing one Redactor.
type Manager struct {
	dir       string
	threshold int
	level     slog.Leveler
	Redactor  *Redactor

	mu        sync.Mutex
	choird    *File
	agents    map[string]*File
	retention Retention

	pruneMu     sync.Mutex       // one prune at a time
	now         func() time.Time // the clock retention ages by
	stopPruning chan struct{}    // closed by Close; nil until StartPruning
	closed      bool
	pruning     sync.WaitGroup
}

// NewManager opens choird.log under dir, archiving it past threshold lines.
// Nothing is pruned until SetRetention.
func NewManager(dir string, threshold int, level slog.Leveler, redactor *Redactor) (*Manager, error) {
	m := &Manager{dir: dir, threshold: threshold, level: level, Redactor: redactor, agents: map[string]*File{}, now: time.Now}
	f, err := OpenFile(filepath.Join(dir, "choird.log"), filepath.Join(dir, "archive", "choird"), threshold, redactor)
	if err != nil {
		return nil, err
	}
	f.archived = m.afterArchive
	m.choird = f
	return m, nil
}

// Choird is choird's own logger.
func (m *Manager) Choird() *slog.Logger { return NewLogger(m.choird, SourceChoird, m.level) }

// ChoirdFile is the active choird.log.
func (m *Manager) ChoirdFile() *File { return m.choird }

// Path returns the active log file of a source (choird or an agent id).
func (m *Manager) Path(source string) string {
	return filepath.Join(m.dir, source+".log")
}

// Agent returns the logger writing to <agent-id>.log, opening it on first use.
// Agent logs are archived at session end, not by size.
func (m *Manager) Agent(id string) (*slog.Logger, error) {
	f, err := m.agentFile(id)
	if err != nil {
		return nil, err
	}
	return NewLogger(f, id, m.level), nil
}

func (m *Manager) agentFile(id string) (*File, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if f := m.agents[id]; f != nil {
		return f, nil
	}
	if id == SourceChoird || filepath.Base(id) != id || id == "" || id == "." || id == ".." || id == "archive" {
		return nil, fmt.Errorf("logs: %q is not a usable agent id for a log file", id)
	}
	f, err := OpenFile(m.Path(id), filepath.Join(m.dir, "archive", id), 0, m.Redactor)
	if err != nil {
		return nil, err
	}
	f.archived = m.afterArchive
	m.agents[id] = f
	return f, nil
}

// ArchiveAgent compresses an agent's log into logs/archive/<agent-id>/ and
// starts it afresh; the lifecycle calls it when a session ends.
func (m *Manager) ArchiveAgent(id string) error {
	f, err := m.agentFile(id)
	if err != nil {
		return err
	}
	return f.Archive()
}

// Close stops the daily pruning and closes every file.
func (m *Manager) Close() error {
	m.mu.Lock()
	stop := m.stopPruning
	m.stopPruning, m.closed = nil, true
	m.mu.Unlock()
	if stop != nil {
		close(stop)
		m.pruning.Wait()
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, f := range m.agents {
		f.Close()
	}
	return m.choird.Close()
}

// SetThreshold changes choird.log's archive threshold (config is read after
// the log is opened).
func (m *Manager) SetThreshold(lines int) { m.choird.SetThreshold(lines) }

// AgentWriter returns the raw writer of <agent-id>.log, for lines that are
// already JSON (the agent's own output). Writes are still redacted.
func (m *Manager) AgentWriter(id string) (io.Writer, error) { return m.agentFile(id) }
