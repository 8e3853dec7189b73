// Package rpc is the control protocol between choir-agent (in its container)
// and choird (on the host): the eight verbs of the design (§12.5) as Go
// structs, which are the schema's source of truth, and the one HTTP binding
// that both transports carry unchanged.
//
// # Transports
//
// The same http.Handler (Server) is mounted on one Unix socket per agent
// (Server.ListenAgent: socks/agent/<agent-id>/choird.sock, directory 0711,
// socket 0666, bind-mounted read-only by its directory into that agent's
// container only), which admits only sessions opened for that agent, and,
// for multi-host scaffolding, on one shared TCP listener with TLS
// (Server.Serve; `choird --transport=http --listen=:9400 --tls-cert
// --tls-key`; plaintext is refused unless the address is loopback), which
// admits any open session. The agent picks its client once at start
// (Dial); nothing above this package branches on transport.
//
// A shared listener made with client CAs (ListenTCP's clientCAs: choird
// does so for the swarm runtime, whose agents run on other hosts) is
// mutual TLS: a connection without a client certificate those CAs signed,
// or with an expired one, ends in the handshake, and a call is admitted
// only when its certificate's subject common name is the session id its
// lease token opens (certs.go). A session's certificate lasts 12 hours;
// the agent renews it half-way with RENEW_CERT, sending a PKCS #10
// request for an ECDSA key it made (the key never leaves it); choird
// names the session in the certificate itself.
//
// # Limits
//
// Every listener is limited (Limits, DefaultLimits): 64 connections per
// agent socket, 1024 per shared listener, 64 per session on a shared
// listener (counted from its first authenticated request: 429 and the
// connection closed), 4096 for all listeners together (or half the file
// descriptor limit); a connection over a cap is closed as soon as it is
// accepted. Limits.ForAgents grows the shared listener's and the total
// caps to ConnsPerAgent per configured agent plus 1024, within what the
// file descriptor limit leaves; the per-agent and per-session caps stay. Headers must arrive within 10 s (the TLS handshake too) and
// fit in 16 KiB (431); a body within 60 s (408) and 4 MiB (413); an idle
// kept-alive connection is closed after 2 min; a session holds at most 4
// event streams and 4 heartbeat streams (429); each write to either must
// complete within 30 s.
// Each request's fields are bounded (bounds.go: MaxIDBytes and the
// others; 400 naming the field and the limit).
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
// Every call is checked in this order: the lease token (exactly one
// "Authorization: Bearer <token>" header, that scheme and case, one space, a
// non-empty token; its hash compared in constant time; unknown, revoked,
// missing, malformed, or a session of another agent on an agent's socket →
// 401 "unauthorized" with no detail), the per-session rate limit (→ 429
// "rate_limited" with Retry-After in seconds), the session's connection cap
// (→ 429), the verb (unknown → 404 "unknown_verb"), the method (→ 405), the
// payload size (→ 413 "payload_too_large"), the JSON (malformed, trailing
// data or an unknown field → 400 "bad_request"), the fields' bounds (→ 400).
// Messages are stateless: nothing depends on the connection a request
// arrives on (a heartbeat on the heartbeat stream, below, is checked and
// answered exactly as its POST).
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
//	RENEW_CERT            RenewCertReq → RenewCertResp   (mutual TLS only; 404 otherwise)
//
// No verb performs a host-destructive operation. A HEARTBEAT whose events
// do not follow the session's stored log (a gap, or hashes that do not
// chain from the stored head) is refused whole with 409
// "replication_refused", the error carrying "head" ({"rev","hash"}): the
// agent resends from head.rev+1.
//
// # Model calls (agent → choird → model)
//
//	POST /v1/model/<model name>/chat/completions
//
// When INIT_HELLO answers model_proxy, the agent sends its model calls
// here with the envelope headers above and no key; choird adds the
// model's endpoint, key and template headers (modelproxy.go).
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
// A Last-Event-ID that is not a decimal id, or is beyond the session's
// newest event, is a 400 naming the newest id (Follow then starts over
// with a gap event). Comment lines (": keepalive") are sent while idle.
//
// # Heartbeat stream (agent → choird)
//
//	POST /heartbeats
//	Transfer-Encoding: chunked
//	X-Choir-Request-Id, X-Choir-Session-Id, Authorization as above
//
// An idle agent's heartbeat, every few seconds, is all the work choird
// does for it, and as a POST each costs choird a whole HTTP exchange; so
// the client sends its heartbeats on one long request instead, a frame
// each. The stream is checked like a verb (the token, the rate limit, the
// connection cap; a session holds at most 4 streams, 429). The answer is
// 200 at once, before any frame, with X-Choir-Frame-Max, the largest frame
// body the stream takes (64 KiB, or the payload cap when smaller); then
// the request's body carries heartbeats and the answer's body their
// answers, one per heartbeat, in order:
//
//	HEARTBEAT <length>\n<length bytes: a HeartbeatReq as JSON>
//	<status> <length> <retry-after seconds>\n<length bytes: JSON>
//
// The answer's JSON is the HeartbeatResp (200) or the error body above.
// Each heartbeat is checked and answered as POST /rpc/HEARTBEAT with the
// same body would be: the session still open (401, which ends the stream),
// the rate limit (429, retry-after set), strict JSON and the fields'
// bounds (400), then the handler. A frame that is not one (another header
// line, another verb (404), a body over the frame cap (413) or not
// received within 60 s (408)) is answered and ends the stream. The stream
// also ends when the agent ends its body, after 2 min without a heartbeat,
// when the session is closed and when choird stops; its connection closes
// with it. The client (Client.Heartbeat) sends a heartbeat over the frame
// cap as POST /rpc/HEARTBEAT, and so every heartbeat when the server
// answers the stream 404 (or, for Retry-After, 429).
package rpc
