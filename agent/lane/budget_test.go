package lane

import (
	"strings"
	"testing"

	"choir/internal/config"
	"choir/internal/openai"
)

// Past a session budget the new spawn, tool call or model call is refused
// with the budget named; a spent max_core_jobs leaves the lane usable, the
// others end the session after the turn.
func TestSessionBudgets(t *testing.T) {
	t.Run("max_core_jobs", func(t *testing.T) {
		e, s := coreEnv(t, envOptions{budgets: config.Budgets{MaxCoreJobs: 1}})
		s.on("edge", use(SpawnTool, spawnArgs("a", "x"), SpawnTool, spawnArgs("b", "y")),
			check(func(req openai.ChatRequest) {
				if out := toolResult(t, req, "choir_core_spawn_0"); out["status"] != "success" {
					t.Errorf("first spawn = %v", out)
				}
				if out := toolResult(t, req, "choir_core_spawn_1"); errCode(out) != CodeBudgetExceeded || !strings.Contains(out["summary"].(string), "max_core_jobs") {
					t.Errorf("second spawn = %v", out)
				}
			}, say("One started.")))
		s.on("a", use(FinishTool, finishArgs("a done")))
		e.handle("two jobs")
		if r := e.nextReport(); r.job != "a" {
			t.Errorf("report = %+v", r)
		}
		if js := e.lane.Jobs(); len(js) != 1 {
			t.Errorf("Jobs = %+v", js)
		}
		// A spent max_core_jobs only refuses spawns: the session goes on.
		s.on("edge", say("Still here."))
		if got := e.handle("still there?"); got != "Still here." {
			t.Errorf("reply after max_core_jobs was spent = %q", got)
		}
	})
	t.Run("max_tool_calls_per_session", func(t *testing.T) {
		e, s := coreEnv(t, envOptions{budgets: config.Budgets{MaxToolCallsPerSession: 1}})
		e.write("a.txt", "a")
		s.on("edge", use("choir.fs.read", `{"path":"a.txt"}`, "choir.fs.read", `{"path":"a.txt"}`),
			check(func(req openai.ChatRequest) {
				if out := toolResult(t, req, "choir_fs_read_0"); out["status"] != "success" {
					t.Errorf("first call = %v", out)
				}
				if out := toolResult(t, req, "choir_fs_read_1"); errCode(out) != CodeBudgetExceeded {
					t.Errorf("second call = %v", out)
				}
			}, say("Read once.")))
		if got := e.handle("read twice"); got != "Read once." {
			t.Errorf("reply = %q", got)
		}
		if rem := e.lane.Status()[0].BudgetRemaining[BudgetSessionTools]; rem != 0 {
			t.Errorf("remaining tool calls = %d", rem)
		}
	})
	t.Run("total_session_tokens", func(t *testing.T) {
		e, s := coreEnv(t, envOptions{budgets: config.Budgets{TotalSessionTokens: 1}})
		s.on("edge", use(SpawnTool, spawnArgs("a", "x"))) // the only call the budget allows
		e.lane.Post(rpcMsg("m1", "go"))
		r := e.nextReply()
		if !r.Error || !strings.Contains(r.Text, "total_session_tokens") {
			t.Errorf("reply = %+v", r)
		}
		rep := e.nextReport()
		if rep.job != "a" || rep.kind != ReportTerminated || !strings.Contains(rep.text, "total_session_tokens") {
			t.Errorf("report = %+v", rep)
		}
		// The session ends (TestSpentSessionBudgetEndsTheSession).
		e.waitRun()
		e.noLocks()
	})
}

// Past a job budget the job is terminated with the budget named, and the
// user gets the report.
func TestJobBudgets(t *testing.T) {
	tests := []struct {
		name    string
		budgets config.Budgets
		spawn   string
		core    []answer
		edge    []answer // after the spawn turn
		want    string
	}{
		{name: "per_job_max_steps", budgets: config.Budgets{PerJobMaxSteps: 2},
			core: []answer{use("choir.fs.search", `{"pattern":"x"}`), use("choir.fs.search", `{"pattern":"y"}`)}, want: BudgetJobSteps},
		{name: "per_job_max_tool_calls", budgets: config.Budgets{PerJobMaxToolCalls: 1},
			core: []answer{use("choir.fs.search", `{"pattern":"x"}`, "choir.fs.search", `{"pattern":"y"}`)}, want: BudgetJobToolCalls},
		{name: "per_job_wall_time_ms", spawn: `{"job_name":"job","task_spec":"x","tool_constraints":{"time_budget_ms":20}}`,
			core: []answer{hang()}, want: BudgetJobWallTime},
		{name: "per_job_max_injections", budgets: config.Budgets{PerJobMaxInjections: 1},
			core: []answer{hang()},
			edge: []answer{use(InjectTool, `{"job_name":"job","content":"one"}`, InjectTool, `{"job_name":"job","content":"two"}`), say("Injected.")},
			want: BudgetJobInjections},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, s := coreEnv(t, envOptions{budgets: tt.budgets})
			spawn := tt.spawn
			if spawn == "" {
				spawn = spawnArgs("job", "work")
			}
			s.on("edge", use(SpawnTool, spawn), say("Started."))
			s.on("job", tt.core...)
			e.handle("start")
			if tt.edge != nil {
				e.waitFor("the job's first call", func() bool { return len(s.requests("job")) == 1 })
				s.on("edge", tt.edge...)
				e.handle("tell it")
			}
			r := e.nextReport()
			if r.job != "job" || r.kind != ReportTerminated || !strings.Contains(r.text, CodeBudgetExceeded) || !strings.Contains(r.text, tt.want) {
				t.Errorf("report = %+v; want terminated for %s", r, tt.want)
			}
			js := e.lane.Jobs()
			if len(js) != 1 || js[0].State != "CORE_TERMINATED" || js[0].Error == nil || js[0].Error.Code != CodeBudgetExceeded {
				t.Errorf("Jobs = %+v", js)
			}
			e.noLocks()
		})
	}
}
