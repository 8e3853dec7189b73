// Package lane is choir-agent's cognition (design §7, §11.3, §12.6-12.8):
// the edge lane, which talks with the user, and the core jobs it spawns,
// each a lane of its own running in its own goroutine. Every event goes
// through the arbiter's commit log; every prompt is rebuilt from the log
// through the lane's working memory (agent/memory).
//
// # Serving
//
// Run serves a Lane until its context ends. Post queues a user message;
// the edge drains the queue only when idle, one full cycle per message,
// in order, and delivers each answer through Config.Reply (Handle posts and
// waits instead). Inject appends /inject text to the edge's context at its
// next safe point (when idle, at once; mid-turn, once the model's tool calls
// are answered, before the next model call), without queueing. Cancel
// stops a core job by name (the cancel push event), Compact compacts the
// edge's working memory (/compact, choirctl session compact), Status
// reports every lane for REPORT_STATUS, and Snapshot/Restore carry the
// §13.4 working memory across heartbeats and restarts. When Run's context
// ends, every core job is cancelled and reported, then the edge is
// TERMINATED.
//
// # State machines
//
// The edge follows EdgeTransitions (§7.2: IDLE -> CONTEXT_READY ->
// REASONING ⇄ WAITING_TOOL -> FINALIZING -> IDLE; REASONING -> REASONING on
// choir.core.spawn; no WAITING_CORE), each core job CoreTransitions (§7.3:
// IDLE -> CREATED -> INITIALIZING -> REASONING ⇄ WAITING_TOOL -> COMPLETED or
// TERMINATED; REASONING -> REASONING on an injected instruction). A move
// outside its table is refused with ErrIllegalTransition and logged.
//
// # A cycle
//
// The edge commits the UserMsg (pinned in its window: never compacted),
// then loops: deliver injections, build the prompt, call the model, commit
// its reply (ModelOutput); run each tool call through the arbiter, whose
// committed results become role "tool" messages; a reply without tool calls
// is the answer. MaxSteps bounds a turn. Invocation ids are
// <owner>/<reply revision>/<index>, unique and stable across a replay.
// Everything the model gets wrong comes back as a structured tool result.
//
// # Core jobs
//
// choir.core.spawn (edge only) takes a CoreJobStart (§12.7) written by the
// edge: job_name, task_spec, context_bundle, tool_constraints, output_schema,
// verbosity. It is checked whole (a safe, unused name; allowed tools core
// lanes have; an output_schema that compiles; max_core_jobs) before the job
// starts; every fault is one structured invalid_input error naming its JSON
// pointer. The job gets an id, its token: "job-" and 16 hex digits of
// SHA-256 over the session id, the name and the job's number; it is void
// once the job ends, and injecting into or cancelling an ended job is
// refused with job_ended.
//
// A job runs as lock owner core:<name> under the session's context, with
// its own prompt (§11.3, core):
//
//	system   core instructions + skill summaries (+ the running skill)
//	system   SOUL-CORE.md
//	system   reference summary (when there is one)
//	...      event window: the job's own replies, tool results, injections
//	user     CoreJobStart, always last
//
// It never sees the user's messages, USER.md or SOUL.md. It reports with
// choir.core.report (progress, plan, thought_summary, need_info,
// partial_result) and ends with choir.core.finish {summary, result}, the
// result checked against output_schema, or with a reply that has no tool
// call (§7.3, REASONING -> COMPLETED on FinalResult): that text is the
// final result's summary, after one model call, never another. With an
// output_schema the text must be the result itself (JSON, bare or in one
// fenced block, that satisfies it), else the job terminates with
// invalid_result quoting it; an empty reply terminates it with llm_error.
// Its other model text (beside tool calls) never leaves it.
// The runtime adds tool_proposal events and the final_result or error
// event. Events travel to the edge on an unbounded in-order stream; the
// edge relays them to the user through Config.Report: the final one always
// (ReportCompleted or ReportTerminated), need_info unless the job is quiet,
// progress, plan and partial results when it is verbose. The report text is
// rendered deterministically, not by a model call: a report is mandatory,
// so it must not depend on the edge model, the token budget or the session
// still running. The edge's next prompt carries a note of the job's end
// (and of a need_info), so it can talk about it.
//
// While any job runs, the edge is offered only read-only tools
// (choir.fs.read, choir.fs.search, choir.web.search, choir.memory.query) and
// choir.core.spawn, inject, cancel and list; a side-effect call it makes
// anyway is refused with cores_running. choir.core.inject queues text for
// the job's next safe point, recorded as InjectedInstruction there;
// choir.core.cancel waits until the job has terminated.
//
// # Budgets (§7.6)
//
// Session budgets (Config.Budgets): max_core_jobs counts jobs spawned,
// total_session_tokens the tokens of every model call (edge, cores,
// compaction; as the provider reports them, else bytes/4), and
// max_tool_calls_per_session every tool call of every lane. Past one, the
// new spawn, tool call or model call is refused (budget_exceeded; a refused
// edge model call is an error reply, a refused core model call terminates
// the job). Job budgets, fixed when the job is created: per_job_max_steps
// (model calls), per_job_max_tool_calls, per_job_wall_time_ms (the smaller
// of it and time_budget_ms) and per_job_max_injections; past one, the job
// is terminated with the budget named. Nothing resets a counter, injection
// included. A refused tool call is committed as a Cancelled event carrying
// the structured error, which the lane shows as the call's result.
//
// # Model calls (§7.7)
//
// Settings (CoreSettings for core jobs, CompactionSettings for compaction)
// are read at the start of each call: a change applies to the next call.
// CallTimeout (llm_call_timeout_ms) bounds a call. A 429 is retried once
// after telling the user (Config.Notify); any other failure ends the edge's
// turn with an error reply (Reply.Error) and the edge is idle again, or
// terminates a core job with an error event (llm_error, llm_timeout) that
// the edge reports.
//
// # Tools of the lanes
//
// Tools returns choir.core.spawn, inject, cancel, list, finish and report,
// choir.memory.compact and choir.memory.query, to register with the
// workspace tools in tool.Load. They hold no lock; the arbiter runs them
// like any tool (committed, replayable), and each finds the lane that
// proposed it in the proposal's context. choir.memory.query answers store
// "working" (the session's log, by keywords or event hash; a core job sees
// only core events) and passes the other stores to a host function, or
// answers not_available without one.
package lane
