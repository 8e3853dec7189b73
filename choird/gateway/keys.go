package gateway

import "choir/internal/logs"

// Log keys: the shared ones from internal/logs, and the gateway's own.
const (
	keySystem   = logs.KeySystem
	keyAgent    = logs.KeyAgent
	keyError    = logs.KeyError
	keyGateway  = "gateway"
	keyDM       = "dm"
	keyUser     = "user_id"
	keyUpdate   = "update_id"
	keyCommand  = "command"
	keyApproval = "approval_id"
)
