// Package arbiter owns a session's commit log (design §7.4): the one
// authority through which lanes cause side effects. Lanes propose tool calls
// and record their other events; the arbiter validates, locks, executes and
// commits.
//
// # The log
//
// One goroutine, Run, appends every event. Each has a revision (1, 2, 3, …
// without gaps) and a hash chaining it to the one before:
//
//	hash_n = hex(SHA-256(hash_{n-1} ‖ canonical(event_n)))    hash_0 = ""
//
// canonical(event) is the event without its hash as one JSON object,
// {"lane","payload","rev","time","type"}, with the payload in Canonical form
// (members sorted at every depth, no whitespace) and the time in TimeLayout
// (UTC microseconds); see Hash. Sorting makes the chain survive a jsonb
// round trip in choird's store; Verify recomputes it. Events returns the log
// as rpc.Event values for heartbeat replication, HashAt gives a heartbeat's
// hash_prev, and Wait blocks until a revision is committed.
//
// Event types are §7.4's: UserMsg, ModelOutput, ToolCallRequested,
// ToolCallCommitted, ToolResultCommitted, MemoryWriteCommitted, CoreStarted,
// CoreStopped, InjectedInstruction, Cancelled, plus SkillTransition (§13.1).
// Lanes append the non-tool ones with Record; the three tool events come only
// from proposals. An event's lane is "edge", "core" (the job name is in the
// payload as "job") or "" (none), as choird's store takes it.
//
// # A tool call (§8.9)
//
// Submit sends a Proposal: an invocation id, the lane, the tool and its
// arguments, the lane's allowlist and its active skill run. The pure work
// (canonical input, registry lookup, schema validation, lock computation)
// happens in the submitter's goroutine. Then, in the Run goroutine:
//
//  1. An id that already committed a result gets that result back
//     (Outcome.Replayed) and nothing runs again; an id still running waits for
//     the same result.
//  2. ToolCallRequested is committed.
//  3. The proposal is checked: the skill engine (choir.skill.transition and
//     finish go to the run; any other tool must be allowed by the current
//     state, else the *skill.Violation is the answer), then the lane's
//     allowlist and the registry (both answer unknown_tool, naming nothing
//     the lane was not offered), then the input. A refused proposal goes
//     straight to step 6 with its structured error as the result.
//  4. The lockset (tool.LockReq translated with lock.ParseKey/ParseMode) is
//     taken with lock.Manager.TryAcquire. If it is free, ToolCallCommitted is
//     committed and the invocation is handed to a worker goroutine of its
//     own, which runs the tool (tool.Call.Run; host tools delegate to choird
//     through their HostFunc).
//  5. If it is not free, the invocation's worker waits in
//     lock.Manager.Acquire, under the proposal's context; once granted it
//     reports back over a channel, Run commits ToolCallCommitted and lets it
//     run.
//  6. The worker reports the result; Run commits ToolResultCommitted, then
//     releases the lockset, then answers the submitter.
//
// So a proposal waiting for a lock never stops the arbiter: Run only
// sequences commits, and every wait and every execution happens in the
// invocation's worker. (Workers are kept when idle and reused, so their
// stacks are warm; there are never more than the invocations in flight at
// once, at most one per lane.) Conflicting calls are serialised by the lock
// manager; calls that do not conflict run side by side; the log stays totally
// ordered because only Run appends. Since locks are released after the result
// is committed, a call's ToolCallCommitted always follows the result of the
// call whose locks it waited for. Each lane's calls run one at a time, in the
// order submitted (an owner holds one lockset at a time).
//
// Locks are released on every path: Run releases them after the result
// commit; the worker releases them itself if Run has stopped; a panicking
// tool (caught by Call.Run) or a panic anywhere in the worker becomes an
// internal error result; a cancelled context
// ends a wait for locks (cancelled result, nothing held) or a running tool
// (its result is committed and its locks released).
//
// # Skills (§10.2)
//
// StartTool (choir.skill.start) starts a skill of Config.Skills and returns
// the run in Outcome.Started; the lane keeps it and passes it with later
// proposals, which the arbiter checks against it. Start, transition, finish
// and a violation that ends the run commit SkillTransition events. One skill
// runs per lane: skill states cannot allow choir.skill.* tools, so a running
// skill cannot start another.
package arbiter
