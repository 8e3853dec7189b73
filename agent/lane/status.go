package lane

import (
	"slices"
	"strings"
	"time"

	"choir/agent/lock"
	"choir/agent/skill"
	"choir/internal/rpc"
)

// JobStatus is what choir.core.list, Status and snapshots say of a job.
type JobStatus struct {
	Name       string           `json:"job_name"`
	ID         string           `json:"job_id"`
	State      string           `json:"state"`
	Ended      bool             `json:"ended"`
	Skill      string           `json:"skill,omitempty"`
	Steps      int              `json:"steps"`
	ToolCalls  int              `json:"tool_calls"`
	Injections int              `json:"injections"`
	InFlight   string           `json:"tool_in_flight,omitempty"`
	Remaining  map[string]int64 `json:"budget_remaining,omitempty"`
	Last       *CoreEvent       `json:"last_event,omitempty"`
	Error      *JobError        `json:"error,omitempty"`
	Start      CoreJobStart     `json:"start"`
}

func (j *job) status() JobStatus {
	st := j.state()
	j.mu.Lock()
	defer j.mu.Unlock()
	s := JobStatus{Name: j.name, ID: j.id, State: st.String(), Ended: st.Ended(), Steps: j.steps, ToolCalls: j.tools,
		Injections: j.injections, InFlight: j.inFlight, Last: j.last, Error: j.failure, Start: j.start}
	if r := j.a.skill(); r != nil {
		s.Skill = r.Skill()
	}
	if !s.Ended {
		wall := j.lim.wall - time.Since(j.begun)
		s.Remaining = map[string]int64{
			BudgetJobSteps:      int64(max(0, j.lim.steps-j.steps)),
			BudgetJobToolCalls:  int64(max(0, j.lim.tools-j.tools)),
			BudgetJobInjections: int64(max(0, j.lim.injections-j.injections)),
			BudgetJobWallTime:   max(0, wall.Milliseconds()),
		}
	}
	return s
}

// Jobs lists the running core jobs by name, then the last ones that ended,
// oldest first.
func (l *Lane) Jobs() []JobStatus {
	l.mu.Lock()
	running := make([]*job, 0, len(l.jobs))
	for _, j := range l.jobs {
		running = append(running, j)
	}
	ended := append([]*job(nil), l.ended...)
	l.mu.Unlock()
	out := make([]JobStatus, 0, len(running)+len(ended))
	for _, j := range running {
		out = append(out, j.status())
	}
	sortByName(out)
	for _, j := range ended {
		out = append(out, j.status())
	}
	return out
}

func sortByName(s []JobStatus) {
	for i := 1; i < len(s); i++ {
		for k := i; k > 0 && s[k].Name < s[k-1].Name; k-- {
			s[k], s[k-1] = s[k-1], s[k]
		}
	}
}

// Status reports the lanes for REPORT_STATUS (session.Hooks.Status): the
// edge (its state, skill, the model calls of its turn, the session's
// remaining budgets and the session's tokens and tool calls so far, every
// lane's) and each running core job by name (its state, skill, steps,
// remaining job budgets, and its own tokens and tool calls).
func (l *Lane) Status() []rpc.StatusReq {
	tokens, tools := l.session.used()
	out := []rpc.StatusReq{{
		Lane:            string(lock.Edge),
		State:           l.sm.get().String(),
		Skill:           skillName(l.edge.skill()),
		Step:            l.edge.step(),
		BudgetRemaining: l.session.remaining(),
		TokensUsed:      tokens,
		ToolCalls:       tools,
	}}
	l.mu.Lock()
	running := make([]*job, 0, len(l.jobs))
	for _, j := range l.jobs {
		running = append(running, j)
	}
	l.mu.Unlock()
	cores := make([]rpc.StatusReq, 0, len(running))
	for _, j := range running {
		js := j.status()
		if js.Ended {
			continue
		}
		cores = append(cores, rpc.StatusReq{Lane: "core:" + js.Name, State: js.State, Skill: js.Skill, Step: js.Steps,
			BudgetRemaining: js.Remaining, TokensUsed: j.a.meter.used(), ToolCalls: int64(js.ToolCalls)})
	}
	slices.SortFunc(cores, func(a, b rpc.StatusReq) int { return strings.Compare(a.Lane, b.Lane) })
	return append(out, cores...)
}

func skillName(r *skill.Run) string {
	if r == nil {
		return ""
	}
	return r.Skill()
}

// resolve maps an event reference (a hash, or a prefix of at least 8 hex
// digits naming one event) to the event's full hash.
func (l *Lane) resolve(ref string) (string, bool) {
	ref = strings.ToLower(strings.TrimSpace(ref))
	if len(ref) < 8 {
		return "", false
	}
	found := ""
	for _, e := range l.cfg.Arbiter.Events(0) {
		if strings.HasPrefix(e.Hash, ref) {
			if found != "" {
				return "", false // ambiguous
			}
			found = e.Hash
		}
	}
	return found, found != ""
}
