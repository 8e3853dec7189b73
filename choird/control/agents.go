package control

import (
	"context"
	"net/http"

	"choir/internal/rpc"
)

// AgentHandler is choird's side of the agent protocol. No session is ever
// opened before the agent lifecycle exists, so the rpc.Server refuses every
// call with 401 before it reaches these methods; each still answers
// honestly that it is not implemented.
type AgentHandler struct{}

var _ rpc.ControlPlaneHandler = AgentHandler{}

func notYet(verb rpc.Verb) error {
	return rpc.Errorf(http.StatusNotImplemented, rpc.CodeUnavailable, "%s is not implemented in this choird yet", verb)
}

func (AgentHandler) HandleInitHello(context.Context, rpc.InitHelloReq) (rpc.InitHelloResp, error) {
	return rpc.InitHelloResp{}, notYet(rpc.VerbInitHello)
}
func (AgentHandler) HandleSecrets(context.Context, rpc.SecretReq) (rpc.SecretResp, error) {
	return rpc.SecretResp{}, notYet(rpc.VerbGetSecrets)
}
func (AgentHandler) HandleHeartbeat(context.Context, rpc.HeartbeatReq) (rpc.HeartbeatResp, error) {
	return rpc.HeartbeatResp{}, notYet(rpc.VerbHeartbeat)
}
func (AgentHandler) HandleApproval(context.Context, rpc.ApprovalReq) (rpc.ApprovalResp, error) {
	return rpc.ApprovalResp{}, notYet(rpc.VerbRequestApproval)
}
func (AgentHandler) HandleStatus(context.Context, rpc.StatusReq) (rpc.StatusResp, error) {
	return rpc.StatusResp{}, notYet(rpc.VerbReportStatus)
}
func (AgentHandler) HandleTerminate(context.Context, rpc.TerminateReq) (rpc.TerminateResp, error) {
	return rpc.TerminateResp{}, notYet(rpc.VerbTerminateSelf)
}
func (AgentHandler) HandleFetchConfig(context.Context, rpc.ConfigReq) (rpc.ConfigResp, error) {
	return rpc.ConfigResp{}, notYet(rpc.VerbFetchDynamicConfig)
}
func (AgentHandler) HandleHostTool(context.Context, rpc.HostToolReq) (rpc.HostToolResp, error) {
	return rpc.HostToolResp{}, notYet(rpc.VerbExecuteHostTool)
}
