// Package ctl is the admin protocol between choirctl and choird: JSON over
// HTTP on choird's admin socket, ~/.choir.d/socks/ctl.sock (mode 0600 in a
// 0700 directory; never mounted into a container, and distinct from the
// agents' socket, so an agent can never reach an admin command).
//
//	GET  /v1/status               → Status
//	GET  /v1/config               → the running config.json (secret names only)
//	GET  /v1/logs/<source>        → text/plain: the log's current contents,
//	                                 then, with ?follow=1, new lines as they
//	                                 are written until the client disconnects
//	GET  /v1/agents               → []AgentStatus, every configured agent
//	GET  /v1/agents/<id>          → AgentStatus
//	POST /v1/agents/<id>/start    StartRequest → AgentStatus, once it said hello
//	POST /v1/agents/<id>/stop     → {} once the session has ended
//	POST /v1/agents/<id>/restart  → AgentStatus (same bindings)
//	POST /v1/secrets/apply        → SecretsApplied: secrets.json reloaded,
//	                                 running agents told to fetch theirs again
//	POST /v1/agents/<id>/messages ChatMessage → ChatSent: a user message from
//	                                 the console DM to the agent's edge lane
//	POST /v1/agents/<id>/inject   ChatMessage → {}: /inject
//	GET  /v1/agents/<id>/outbox   → application/x-ndjson: every message the
//	                                 agent sends from now on (ConsoleMessage:
//	                                 rpc.DMSend with its files attached), and
//	                                 a session_ended line when its session
//	                                 ends (the last line after a crash)
//	POST /v1/agents/<id>/build    → application/x-ndjson: BuildEvent lines,
//	                                 progress as it happens, then one result
//	                                 or error
//	POST /v1/agents/<id>/update   → application/x-ndjson: UpdateEvent lines,
//	                                 progress, then the agent's UpdateResult
//	POST /v1/agents/update-all    → application/x-ndjson: UpdateEvent lines,
//	                                 one UpdateResult per agent as it ends
//	POST /v1/config/load          → ConfigDiff of the snapshot now staged
//	                                 (422 listing every problem: nothing staged)
//	GET  /v1/config/diff          → ConfigDiff (Staged false: nothing staged)
//	POST /v1/config/apply         → ConfigApplied (409 naming each change
//	                                 that blocks it: nothing applied)
//	GET  /v1/approvals[?agent=]   → []Approval
//	GET  /v1/approvals/<id>       → Approval
//	POST /v1/approvals/<id>/approve|reject → Approval as decided (409 when
//	                                 it was already decided, saying by whom)
//	GET  /v1/sessions[?agent=]    → []SessionInfo, newest first
//	GET  /v1/sessions/<id>        → SessionDetail: why it ended, its summary
//	GET  /v1/sessions/<id>/events?after=<rev> → []SessionEvent
//	GET  /v1/sessions/<id>/cores  → []rpc.StatusReq of its core jobs
//	POST /v1/sessions/<id>/cancel CancelRequest → {}
//	POST /v1/sessions/<id>/compact → {}
//	POST /v1/memory/<agent>/search rpc.MemoryQuery → rpc.MemoryAnswer
//	POST /v1/memory/<agent>/upsert rpc.MemoryUpsert → rpc.MemoryAnswer
//	                                 (written as that agent)
//	GET  /v1/memory/<agent>/knowledge[?limit=] → rpc.MemoryAnswer
//	GET  /v1/models               → ModelCatalog
//	GET  /v1/agents/<id>/model    → ModelChoice
//	POST /v1/agents/<id>/model    ModelChoice → ModelChoice (until restart)
//	GET  /v1/workspaces           → []Workspace with lease holders
//	POST /v1/workspaces/<n>/reset → ResetResult (stops the holder first)
//	headless runs (work items, runs, receipts, the AHDB state): headless.go
//
// Errors are {"error":{"code","message"}} with a fitting HTTP status, the
// same shape as the agent protocol's. The socket's file mode is the
// authentication: only choird's user can connect.
package ctl
