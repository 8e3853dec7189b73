package rpc

import "context"

// ControlPlane is the agent's view of choird (§12.2): one method per verb,
// plus the server-push stream. *Client implements it over either transport.
type ControlPlane interface {
	InitHello(ctx context.Context, req InitHelloReq) (InitHelloResp, error)
	GetSecrets(ctx context.Context, req SecretReq) (SecretResp, error)
	Heartbeat(ctx context.Context, req HeartbeatReq) (HeartbeatResp, error)
	RequestApproval(ctx context.Context, req ApprovalReq) (ApprovalResp, error)
	ReportStatus(ctx context.Context, req StatusReq) (StatusResp, error)
	Terminate(ctx context.Context, req TerminateReq) (TerminateResp, error)
	FetchDynamicConfig(ctx context.Context, req ConfigReq) (ConfigResp, error)
	ExecuteHostTool(ctx context.Context, req HostToolReq) (HostToolResp, error)
	FetchEvents(ctx context.Context, req FetchEventsReq) (FetchEventsResp, error)
	Events(ctx context.Context, lastEventID string) (*EventStream, error)
}

// ControlPlaneHandler is choird's side (§12.2). Server authenticates,
// limits and decodes each call before it reaches the handler; the caller's
// authenticated identity is in the context (see CallFrom). An error of type
// *Error chooses the status and code the agent sees; any other error is a
// 500 "internal".
type ControlPlaneHandler interface {
	HandleInitHello(ctx context.Context, req InitHelloReq) (InitHelloResp, error)
	HandleSecrets(ctx context.Context, req SecretReq) (SecretResp, error)
	HandleHeartbeat(ctx context.Context, req HeartbeatReq) (HeartbeatResp, error)
	HandleApproval(ctx context.Context, req ApprovalReq) (ApprovalResp, error)
	HandleStatus(ctx context.Context, req StatusReq) (StatusResp, error)
	HandleTerminate(ctx context.Context, req TerminateReq) (TerminateResp, error)
	HandleFetchConfig(ctx context.Context, req ConfigReq) (ConfigResp, error)
	HandleHostTool(ctx context.Context, req HostToolReq) (HostToolResp, error)
	HandleFetchEvents(ctx context.Context, req FetchEventsReq) (FetchEventsResp, error)
}

// Call is the authenticated envelope of the request being handled.
type Call struct {
	RequestID string
	SessionID string
}

type callKey struct{}

// CallFrom returns the authenticated call a handler is serving.
func CallFrom(ctx context.Context) (Call, bool) {
	c, ok := ctx.Value(callKey{}).(Call)
	return c, ok
}

// WithCall returns a context carrying c; Server uses it, and tests of
// handlers may too.
func WithCall(ctx context.Context, c Call) context.Context {
	return context.WithValue(ctx, callKey{}, c)
}
