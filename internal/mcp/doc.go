// Package mcp is a client for the Model Context Protocol (revisions
// 2025-11-25 and 2025-06-18, modelcontextprotocol.io), written on the
// standard library (and internal/jsonlimit): JSON-RPC 2.0 over stdio or Streamable HTTP. It knows
// the wire and nothing of choir; the tools it yields live in agent/tool/mcp.
//
// # Use
//
//	t := mcp.NewStdio(exec.Command("/usr/bin/mcp-server-everything"), func(line string) { log.Info(line) })
//	// or: t := mcp.NewHTTP("https://host/mcp", http.Header{"Authorization": {"Bearer …"}}, nil)
//	c, err := mcp.Connect(ctx, t, mcp.Options{ClientName: "choir", ClientVersion: v})
//	defer c.Close()
//	tools, err := c.ListTools(ctx)                        // every page
//	res, err := c.CallTool(ctx, "echo", json.RawMessage(`{"message":"hi"}`), onProgress)
//	// res.Content: text, image, audio, resource_link, resource blocks; res.StructuredContent; res.IsError
//
// Errors name the server and the method ("mcp stdio server x (pid 7):
// tools/call: …"). A server's JSON-RPC error is an *RPCError, an HTTP
// refusal an *HTTPError (errors.As). After the connection is lost every
// call fails with an error wrapping ErrClosed and the reason (the
// process's exit status and its last stderr lines, the HTTP failure);
// Client.Done and Client.Err tell a supervisor. Over HTTP there is no
// connection to lose: each request fails on its own, and Done closes only
// with Close. The client never restarts a
// server itself: whoever started it decides (agent/tool/mcp restarts with
// backoff).
//
// # Lifecycle
//
// Connect sends initialize with the first of Options.Versions (default
// 2025-11-25), the client's capabilities (elicitation {"form":{}} when
// Options.Elicit is set, sampling {} when Options.Sample is set; nothing
// else) and clientInfo. The server's protocolVersion must be one of
// Options.Versions (default 2025-11-25, 2025-06-18, and 2025-03-26, whose
// messages only add JSON-RPC batches, which the client reads), else Connect
// fails naming both. Then notifications/initialized. Close ends the
// connection (below); there is no shutdown message.
//
// # Requests and cancellation
//
// Request ids are integers from 1. A request whose context has no
// deadline gets Options.RequestTimeout (default 2 minutes). When a
// request's context ends before the answer (cancelled, or its deadline),
// the client sends notifications/cancelled {requestId, reason} and returns
// the context's cause; a late answer is then dropped. CallTool with an
// onProgress function sends _meta.progressToken (the request id) and
// hands each notifications/progress for it to that function. ListTools,
// ListResources and ListPrompts follow nextCursor to the end (a cursor seen
// twice, or more than 1000 pages, is an error).
//
// # What the server may send
//
// Notifications: notifications/message goes to Options.OnLog,
// notifications/tools/list_changed to Options.OnToolsChanged,
// notifications/progress to the call it names, notifications/cancelled
// cancels the server's own request in flight, anything else to
// Options.OnNotification. Requests, each answered on its own goroutine:
// ping; elicitation/create (Options.Elicit, or decline; ElicitRequest.Fields
// and Defaults read the form's schema); sampling/createMessage
// (Options.Sample, or error -1 "sampling declined"); anything else
// -32601. Every message is checked with internal/jsonlimit first (nesting
// at most 64 deep, valid UTF-8): a refused answer fails its request at once.
// A message that is not JSON-RPC 2.0 or a response to no waiting request is
// logged (Options.Logger) and skipped.
//
// # stdio
//
// NewStdio starts the command at Connect with three pipes. Messages are one
// JSON object per line, in both directions. stderr lines go to the
// function given (cut at 4 KiB) and the last eight are kept for the error
// when the process dies. A stdout line longer than Options.MaxMessageBytes
// (default 16 MiB) ends the connection and kills the process: its id cannot
// be read, so no single request could be failed instead. A write the
// server does not take within 1 s after the request's context ended also
// ends the connection (a half-written line breaks the framing). Close closes the
// server's stdin, waits 2 s for it to exit, sends SIGTERM, waits 2 s,
// then SIGKILL. NewStdioPipes runs the same framing over any reader and
// writer.
//
// # Streamable HTTP
//
// Every message is a POST to the endpoint with Accept: application/json,
// text/event-stream, the caller's headers, Mcp-Session-Id once the server
// gave one (in the initialize answer; visible ASCII only) and
// MCP-Protocol-Version once negotiated. Notifications and responses expect
// 202. A request is answered with one JSON message, or with an SSE stream
// whose events carry the server's requests and notifications about it and
// finally its response. If the stream ends before the response, the client
// waits the stream's last "retry" time (default 1 s) and resumes with a GET
// carrying Last-Event-ID, up to 5 attempts in a row that bring nothing; a
// stream closed without any event id fails the request. A 404 to a request
// carrying a session id means the session ended: the client initializes a
// new session, calls Options.OnToolsChanged, and retries the request once.
// After notifications/initialized the client opens a GET stream for the
// server's own messages (a new one for each new session) and waits up to
// 3 s for the server to answer it before Connect returns, since some
// servers send their requests (an elicitation) only there; the stream is
// reopened after its retry time when it ends (growing to 30 s
// while streams come back empty); 405 means the server has none, and any
// other refusal stops it with a log line. Responses are looked up by id
// whatever stream carries them. An SSE event or JSON body over
// Options.MaxMessageBytes fails its request. Close sends DELETE with the
// session id (405 accepted) and stops every stream. The URL in errors and
// logs keeps scheme, host and path only (no query, no user info).
//
// OAuth authorization (the spec's authorization section) is not
// implemented: credentials are fixed headers the caller supplies.
package mcp
