package email

import (
	"choir/agent/tool"
	"choir/internal/config"
)

// Tools returns the email tools, reading the session's account from
// dynamic per call.
func Tools(dynamic func() config.Dynamic) []tool.Tool {
	return []tool.Tool{NewSend(dynamic), NewReceive(dynamic), NewCheck(dynamic)}
}
