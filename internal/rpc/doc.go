// Package rpc is the control protocol between choir-agent (in its container)
// and choird (on the host): the eight verbs of the design (§12.5) as Go
// structs, which are the schema's source of truth, and the one HTTP binding
// that both transports carry unchanged.
//
// # Transports
//
// The same http.Handler (Server) is mounted on a Unix socket
// (~/.choir.d/socks/choird.sock, mode 0600, bind-mounted by its directory so
// the agent sees /run/choir.sock) and, for multi-host scaffolding, on TCP
// with TLS (`choird --transport=http --listen=:9400 --tls-cert --tls-key`;
// plaintext is refused unless the address is loopback). The agent picks its
// client once at start (Dial); nothing above this package branches on
// transport.
//
// # Requests
//
//	POST /rpc/<VERB>
//	Content-Type: application/json
//	X-Choir-Request-Id: <uuid>          the envelope's request_id
//	X-Choir-Session-Id: <session id>    the envelope's session_id
//	Authorization: Bearer <lease token> the envelope's lease_token
//
//	<the verb's request payload as JSON>
//
// The answer is 200 with the verb's response payload as JSON, echoing
// X-Choir-Request-Id, or an error status with the body
//
//	{"error": {"code": "<code>", "message": "<what and what to do>"}}
//
// Every call is checked in this order: the lease token (compared in constant
// time; unknown, revoked or missing → 401 "unauthorized" with no detail), the
// per-session rate limit (→ 429 "rate_limited" with Retry-After in seconds),
// the verb (unknown → 404 "unknown_verb"), the method (→ 405), the payload
// size (→ 413 "payload_too_large"), the JSON (malformed, trailing data or an
// unknown field → 400 "bad_request"). Messages are stateless: nothing depends
// on the connection a request arrives on.
//
// # Verbs (agent → choird)
//
//	INIT_HELLO            InitHelloReq → InitHelloResp
//	GET_SECRETS           SecretReq → SecretResp
//	HEARTBEAT             HeartbeatReq → HeartbeatResp
//	REQUEST_APPROVAL      ApprovalReq → ApprovalResp
//	REPORT_STATUS         StatusReq → StatusResp
//	TERMINATE_SELF        TerminateReq → TerminateResp
//	FETCH_DYNAMIC_CONFIG  ConfigReq → ConfigResp
//	EXECUTE_HOST_TOOL     HostToolReq → HostToolResp
//
// No verb performs a host-destructive operation.
//
// # Server push (choird → agent)
//
//	GET /events
//	Accept: text/event-stream
//	X-Choir-Session-Id, Authorization as above
//	Last-Event-ID: <id>                 optional: resume after this event
//
// The answer is a Server-Sent Events stream. Each event has an id (a
// decimal sequence number per session), an event type (cancel, inject,
// user_message, config_changed, secrets_changed, shutdown, approval,
// compact, or gap)
// and one
// JSON data line. choird keeps the most recent events of each session, so
// an agent that reconnects with Last-Event-ID receives what it missed; when
// the events it missed are no longer kept, the stream starts with a gap
// event and the agent resynchronises (for example with FETCH_DYNAMIC_CONFIG).
// Comment lines (": keepalive") are sent while idle.
package rpc
