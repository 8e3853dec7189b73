package memory

// State is what a working-memory snapshot keeps of one lane (design §13.4):
// its reference summary and where its event window begins. The window
// itself is rebuilt from the log's tail after a restart.
type State struct {
	Summary Summary `json:"reference_summary"`
	// Boundary is the revision of the oldest event in the window (not
	// folded), 0 when the window is empty.
	Boundary int64 `json:"event_window_boundary"`
	// FoldedThrough is the newest revision folded into the summary; Kept
	// lists the older revisions that are not (a message pinned while its
	// neighbours were folded).
	FoldedThrough int64   `json:"folded_through"`
	Kept          []int64 `json:"kept,omitempty"`
}

// State returns the memory's snapshot.
func (m *Memory) State() State {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := State{Summary: m.sum.Clone(), FoldedThrough: m.folded}
	if len(m.entries) > 0 {
		s.Boundary = m.entries[0].Rev
	}
	for _, e := range m.entries {
		if e.Rev > m.folded {
			break
		}
		s.Kept = append(s.Kept, e.Rev)
	}
	return s
}

// Restore puts back a snapshot's summary and boundary before the window is
// rebuilt: the events it folded are then ignored by Add. It drops what the
// memory held.
func (m *Memory) Restore(s State) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sum = s.Summary.Clone()
	m.folded = s.FoldedThrough
	m.kept = make(map[int64]bool, len(s.Kept))
	for _, r := range s.Kept {
		m.kept[r] = true
	}
	m.entries, m.pin = nil, 0
	m.writes++
}
