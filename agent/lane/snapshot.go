package lane

import (
	"encoding/json"
	"fmt"

	"choir/agent/lock"
	"choir/agent/memory"
	"choir/agent/skill"
	"choir/internal/rpc"
)

// Snapshot is the working-memory snapshot heartbeats carry (design §13.4,
// rpc.Snapshot), exactly its members: each lane's reference summary, per
// lane the revision of the oldest event in its window, the skill runs by
// lane, the lanes' state with the budgets spent, and the open core jobs.
// Resume rebuilds the lanes from it and the stored events after it.
type Snapshot struct {
	// Rev is the log's head when the snapshot was taken (it travels beside
	// the snapshot, as the revision choird stores it under).
	Rev                  int64                     `json:"-"`
	ReferenceSummaryEdge memory.Summary            `json:"reference_summary_edge"`
	ReferenceSummaryCore map[string]memory.Summary `json:"reference_summary_core"` // by job name
	// EventWindowBoundary is, per lane ("edge", "core:<job>"), the
	// revision of the oldest event in its window (0: empty).
	EventWindowBoundary map[string]int64          `json:"event_window_boundary"`
	SkillState          map[string]skill.Snapshot `json:"skill_state"` // by lane
	LaneState           LaneState                 `json:"lane_state"`
	OpenJobs            []JobStatus               `json:"open_jobs"`
}

// LaneState is §13.4's lane_state: each lane's status with its budgets
// left, where each lane's working memory has folded to, and what the
// session's budgets have spent.
type LaneState struct {
	Lanes  []rpc.StatusReq           `json:"lanes"`
	Memory map[string]MemoryPosition `json:"memory"` // by lane
	Used   Used                      `json:"used"`
}

// MemoryPosition is how far a lane's reference summary reaches: the newest
// revision folded into it, and the older ones kept in the window (pinned).
type MemoryPosition struct {
	FoldedThrough int64   `json:"folded_through"`
	Kept          []int64 `json:"kept,omitempty"`
	// StartedRev is a core job's CoreStarted revision, where a resumed
	// job's log begins.
	StartedRev int64 `json:"started_rev,omitempty"`
}

// Used is what the session budgets have spent (design §7.6).
type Used struct {
	Tokens    int64 `json:"tokens"`
	ToolCalls int64 `json:"tool_calls"`
	CoreJobs  int64 `json:"core_jobs"`
}

// Snapshot takes the working-memory snapshot as JSON.
func (l *Lane) Snapshot() (json.RawMessage, error) {
	rev, _ := l.cfg.Arbiter.Head()
	s := Snapshot{
		Rev:                  rev,
		ReferenceSummaryCore: map[string]memory.Summary{},
		EventWindowBoundary:  map[string]int64{},
		SkillState:           map[string]skill.Snapshot{},
		LaneState:            LaneState{Lanes: l.Status(), Memory: map[string]MemoryPosition{}, Used: l.session.spentSoFar()},
		OpenJobs:             []JobStatus{},
	}
	add := func(a *actor) {
		st := a.mem.State()
		s.EventWindowBoundary[string(a.owner)] = st.Boundary
		pos := MemoryPosition{FoldedThrough: st.FoldedThrough, Kept: st.Kept}
		if a.job != nil {
			a.job.mu.Lock()
			pos.StartedRev = a.job.startedRev
			a.job.mu.Unlock()
		}
		s.LaneState.Memory[string(a.owner)] = pos
		if a.job == nil {
			s.ReferenceSummaryEdge = st.Summary
		} else {
			s.ReferenceSummaryCore[a.job.name] = st.Summary
		}
		if r := a.skill(); r != nil {
			s.SkillState[string(a.owner)] = r.Snapshot()
		}
	}
	add(l.edge)
	l.mu.Lock()
	running := make([]*job, 0, len(l.jobs))
	for _, j := range l.jobs {
		running = append(running, j)
	}
	l.mu.Unlock()
	for _, j := range running {
		add(j.a)
		s.OpenJobs = append(s.OpenJobs, j.status())
	}
	sortByName(s.OpenJobs)
	raw, err := json.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("lane: snapshot: %w", err)
	}
	return raw, nil
}

// memoryState is a lane's working memory as the snapshot keeps it.
func (s *Snapshot) memoryState(owner lock.Owner) memory.State {
	st := memory.State{Boundary: s.EventWindowBoundary[string(owner)]}
	if owner == lock.Edge {
		st.Summary = s.ReferenceSummaryEdge
	} else {
		st.Summary = s.ReferenceSummaryCore[owner.Job()]
	}
	pos, ok := s.LaneState.Memory[string(owner)]
	if ok {
		st.FoldedThrough, st.Kept = pos.FoldedThrough, pos.Kept
	} else if st.Boundary > 0 {
		st.FoldedThrough = st.Boundary - 1
	}
	return st
}

// spentSoFar is what the session budgets have spent.
func (s *session) spentSoFar() Used {
	s.mu.Lock()
	defer s.mu.Unlock()
	return Used{Tokens: s.tokens, ToolCalls: s.tools, CoreJobs: s.jobs}
}
