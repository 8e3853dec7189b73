package lane

import (
	"encoding/json"
	"errors"
	"fmt"

	"choir/agent/lock"
	"choir/agent/memory"
	"choir/agent/skill"
	"choir/internal/rpc"
)

// Snapshot is the working-memory snapshot heartbeats carry (design §13.4,
// rpc.HeartbeatReq.Snapshot), under the design's names, plus each lane's
// whole memory state, which Restore needs.
type Snapshot struct {
	// Rev is the log's head when the snapshot was taken.
	Rev                  int64                     `json:"rev"`
	ReferenceSummaryEdge memory.Summary            `json:"reference_summary_edge"`
	ReferenceSummaryCore map[string]memory.Summary `json:"reference_summary_core"` // by job name
	// EventWindowBoundary is, per lane ("edge", "core:<job>"), the
	// revision of the oldest event in its window.
	EventWindowBoundary map[string]int64          `json:"event_window_boundary"`
	WorkingMemory       map[string]memory.State   `json:"working_memory"`
	SkillState          map[string]skill.Snapshot `json:"skill_state,omitempty"`
	LaneState           []rpc.StatusReq           `json:"lane_state"`
	OpenJobs            []JobStatus               `json:"open_jobs"`
}

// Snapshot takes the working-memory snapshot as JSON.
func (l *Lane) Snapshot() (json.RawMessage, error) {
	rev, _ := l.cfg.Arbiter.Head()
	s := Snapshot{
		Rev:                  rev,
		ReferenceSummaryCore: map[string]memory.Summary{},
		EventWindowBoundary:  map[string]int64{},
		WorkingMemory:        map[string]memory.State{},
		SkillState:           map[string]skill.Snapshot{},
		LaneState:            l.Status(),
		OpenJobs:             []JobStatus{},
	}
	add := func(a *actor) {
		st := a.mem.State()
		s.WorkingMemory[string(a.owner)] = st
		s.EventWindowBoundary[string(a.owner)] = st.Boundary
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

// Restore puts back the edge lane's working memory (reference summary and
// window boundary) and running skill from a snapshot, before Run; the
// window is then rebuilt from the log's tail. Core jobs are not resumed
// after a restart: Restore returns those that were open, for the user to be
// told.
func (l *Lane) Restore(raw json.RawMessage) ([]JobStatus, error) {
	l.mu.Lock()
	running := l.running
	l.mu.Unlock()
	if running {
		return nil, errors.New("lane: Restore after Run")
	}
	var s Snapshot
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("lane: restore snapshot: %w", err)
	}
	if st, ok := s.WorkingMemory[string(lock.Edge)]; ok {
		l.edge.mem.Restore(st)
	} else {
		l.edge.mem.Restore(memory.State{Summary: s.ReferenceSummaryEdge})
	}
	if ss, ok := s.SkillState[string(lock.Edge)]; ok && l.cfg.Skills != nil {
		run, err := l.cfg.Skills.Restore(ss)
		if err != nil {
			return s.OpenJobs, fmt.Errorf("lane: restore the edge's skill: %w", err)
		}
		l.edge.setSkill(run)
	}
	return s.OpenJobs, nil
}
