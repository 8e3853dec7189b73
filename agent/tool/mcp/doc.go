// Package mcp makes the tools of MCP servers choir tools (issue 24): each
// server declared in /choir/mcp (internal/mcpdecl) is started (stdio, as a
// tool process of agent/sandbox: the workspace owner's uid, the tools'
// limits and allowlisted environment plus only the variables its
// declaration names) or connected to (Streamable HTTP) through
// internal/mcp, supervised (a dead server restarts with backoff; meanwhile
// its tools answer server_unavailable), and each of its tools becomes
// mcp.<server>.<tool> (mcpdecl.ToolName), offered only when its schema
// compiles with internal/jsonschema, its name is free, and its definition is
// the one pinned at the image's build (/choir/mcp-pins.json, when present).
// Every call goes through the arbiter like any tool (locks: by default one
// exclusive ext:mcp.<server> lock; timeout: the declaration's, under the
// session's cap); a result is the server's untrusted data, capped like an
// external tool's output; a cancelled or timed-out call is cancelled at the
// server. A server's text (instructions, descriptions) never reaches a
// system message: descriptions are capped and go only into the tools
// parameter.
package mcp
