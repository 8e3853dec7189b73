package rpc

// Messages between a user and an agent travel as push events (choird →
// agent) and as the host tool choir.dm.send (agent → choird): no heartbeat
// is waited for in either direction.

// UserMessage is the data of a user_message event: one message from the
// agent's bound DM (Telegram, or choirctl chat), for the edge lane's queue.
// ID is unique per message; the agent drops a repeated ID, so delivery may
// be at-least-once.
type UserMessage struct {
	ID          string   `json:"id"`
	From        string   `json:"from"` // the DM name, or "console" for choirctl chat
	Text        string   `json:"text"`
	Attachments []string `json:"attachments,omitempty"` // workspace paths under .choirtmp/recv/
}

// Injection is the data of an inject event: text appended to the edge
// lane's context at its next safe point (/inject).
type Injection struct {
	ID   string `json:"id"`
	Text string `json:"text"`
}

// ApprovalDecision is the data of an approval event.
type ApprovalDecision struct {
	ApprovalID string `json:"approval_id"`
	Status     string `json:"status"` // approved or rejected
	By         string `json:"by,omitempty"`
}

// HostToolDMSend is the host tool an agent calls to send something to its
// bound DM: a reply, a core-job report, a notice (rate limited, compacting)
// or an error.
const HostToolDMSend = "choir.dm.send"

// DMSend is the input of choir.dm.send.
type DMSend struct {
	// ID is the message's key: a message sent again with the same ID is
	// delivered once. choird sets the call id of choir.dm.send when the
	// agent leaves it empty.
	ID      string   `json:"id,omitempty"`
	Kind    string   `json:"kind"`               // reply, core_report, notice, error
	ReplyTo string   `json:"reply_to,omitempty"` // the UserMessage.ID answered
	Text    string   `json:"text,omitempty"`
	Files   []string `json:"files,omitempty"` // workspace paths under .choirtmp/send/
	// Cores names the core jobs a reply's turn started; each later sends
	// one core_report naming itself in Core.
	Cores []string `json:"cores,omitempty"`
	Core  string   `json:"core,omitempty"`
	// Approval is set on the console's approval kinds.
	Approval string `json:"approval,omitempty"`
}

// DM message kinds.
const (
	DMReply      = "reply"
	DMCoreReport = "core_report"
	DMNotice     = "notice"
	DMError      = "error"
	// Kinds choird itself sends to the console DM of choirctl chat.
	DMApprovalRequest = "approval_request"
	DMApprovalOutcome = "approval_outcome"
)

// CancelCore is the data of a cancel event: the core job to stop.
type CancelCore struct {
	JobName string `json:"job_name"`
}
