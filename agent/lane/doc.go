// Package lane runs a lane of choir-agent's cognition: the loop that turns a
// user message into model calls and tool calls (design §7, §8.9, §11.3). This
// first version is the edge lane without core jobs, injection, budgets or
// working-memory compaction, which come with later issues.
//
// # A turn
//
// Handle commits the user message (UserMsg), then loops: build the prompt,
// call the model, commit its reply (ModelOutput); if the reply calls tools,
// propose each call to the arbiter in order, whose committed results become
// role "tool" messages, and call the model again; a reply without tool calls
// is the answer. MaxSteps bounds the model calls of a turn. The settings
// (model, temperature, reasoning_effort, rate-limit wait) are read before
// every call.
//
// Every message a prompt shows comes from the commit log: the lane reads its
// own committed events (arbiter.Events) and renders user messages, model
// replies and tool results as chat messages, so the prompt is what the log
// says happened and can be rebuilt from it after a crash.
//
// # The prompt (§11.3, edge)
//
//	system   lane instructions + "name: description" of each skill
//	         (+ the running skill's state, objective and transitions)
//	system   # USER.md
//	system   # SOUL.md
//	system   reference summary (left out while it is empty; compaction comes later)
//	...      the event window: the last EventWindow rendered events before this message
//	user     the current message
//	...      this turn so far
//
// Empty identity files are left out. Tool schemas go only in the tools
// parameter, under wire-safe names (openai.NameMap: choir.fs.read is
// choir_fs_read) built per request and used to map the model's calls back.
// The window keeps calls and results paired as the API demands: a result
// whose call rolled out is dropped, a call without a result (a turn cut
// short) gets an error result.
//
// # Tool calls
//
// Each call goes to the arbiter with an invocation id made from the
// ModelOutput's revision and the call's index (edge/<rev>/<i>), unique and
// stable across a replay, with the lane's allowlist (the tools exposed to
// the edge) and its running skill. Everything the model gets wrong comes back
// as a structured tool result and the loop goes on: arguments that are not
// JSON (invalid_input), a name that was not offered (unknown_tool, naming
// nothing else), a schema failure, a skill violation.
//
// # Skills
//
// With Config.Skills set, the lane offers arbiter.StartTool
// (choir.skill.start {"skill", "input"}) and lists the skills in the system
// prompt. While a skill runs, the lane offers only the current state's tools
// (those also exposed to the edge) plus the engine's control tools
// (run.Tools(): choir.skill.transition, or choir.skill.finish), and puts the
// state's objective in the system prompt. It counts each model call with
// run.Step; a run past its max_steps, or one the arbiter ended (terminal
// state, retry budget spent), is dropped and the lane offers its usual tools
// again. One skill runs at a time.
//
// # Model errors (§7.7)
//
// A failed call ends the turn: the reply is "the model failed: <error>",
// recorded as a ModelOutput with its error (left out of later prompts), and
// the lane is idle again; nothing is retried except a 429, which
// openai.Client.ChatWithRateLimitRetry retries once after telling the user
// through Config.Notify.
package lane
