package mcp

import (
	"context"
	"fmt"
)

// Transport carries JSON-RPC messages between a Client and one server. The
// package offers two: Stdio (NewStdio, NewStdioPipes) and HTTP (NewHTTP,
// Streamable HTTP). A Transport serves one Connect; it cannot be reused.
type Transport interface {
	// String names the server for errors and logs ("stdio server
	// mcp-server-everything (pid 42)", "http server https://host/mcp"),
	// without secrets.
	String() string

	start(ctx context.Context, s sink, lim limits) error
	send(ctx context.Context, m outgoing) error
	// negotiated is told the protocol version after initialize.
	negotiated(version string)
	// opened is told the session is ready (notifications/initialized sent).
	opened(ctx context.Context)
	// abandon is told a request will not be waited for any longer.
	abandon(id string)
	close() error
}

// sink is what a transport delivers to: the Client.
type sink interface {
	// receive takes one message (or a JSON-RPC batch) as read.
	receive(raw []byte)
	// waiting reports whether a request id still waits for its response.
	waiting(id string) bool
	// failRequest ends one request with err (HTTP: its stream broke).
	failRequest(id string, err error)
	// lost ends the connection: every waiting request fails with err.
	lost(err error)
	// warn logs a protocol problem the connection survives.
	warn(msg string, args ...any)
}

type limits struct {
	maxMessage int // bytes of one JSON-RPC message
}

// errTooLarge says a message was over the limit.
func errTooLarge(where string, max int) error {
	return fmt.Errorf("%s: a message is larger than %d bytes (Options.MaxMessageBytes)", where, max)
}
