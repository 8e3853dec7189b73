// Package approval is choird's approval pipeline (§8.10, §19.6, §20): the
// one implementation behind every way a human decides an agent's
// capability-changing request, whether from a Telegram button, a gateway
// /approve command or `choirctl approval approve`.
//
// # Flow
//
//	agent REQUEST_APPROVAL
//	  → Service.Request: a pending row in pending_approvals (Store),
//	    its timeout armed, Notifier.Requested (the gateway sends the
//	    summary with [Approve] [Reject] to the agent's bound DM)
//	human (button, /approve, choirctl)
//	  → Service.Decide(id, approve, Decider): the Decider may decide for
//	    this agent? then Store.Resolve records the decision once;
//	    OnDecision tells the agent (an rpc.EventApproval push);
//	    Notifier.Decided edits the DM's message with the outcome and who
//	timeout (approval_timeout_ms after the request)
//	  → rejected by ByTimeout, said as "Approval timed out: <summary>.
//	    Rejected automatically."
//
// With two choird replicas on one store (Config.Handoff), a decision is
// handed on (the agent told, the DM's message edited, an approval applied)
// once, by the replica that runs the session that asked: in process when
// it decided, else by its RunHandoff, which looks for decisions the other
// replica recorded (choirctl there, a timeout it kept). One whose session
// no other replica runs is handed on where decided. A replica keeps the
// timeouts of the requests its own sessions made (and of those no other
// replica runs).
//
// A decision is recorded once: a second press, a late /approve or a
// timeout racing a human all find the row decided, change nothing, and get
// ErrAlreadyDecided with the decision that stands. Start re-arms the
// timeouts of the rows still pending when choird starts and rejects at once
// those already past due.
//
// Every request, decision, refusal and timeout is logged with who, what
// and when (§22.1 item 4).
//
// The Store is declared here, over this package's own Approval type; the
// subpackage postgres adapts choird/store to it, and approvaltest holds an
// in-memory Store and a hand-advanced Clock for tests.
package approval
