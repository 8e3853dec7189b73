package mcp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// JSON-RPC 2.0 error codes used by MCP.
const (
	CodeParseError     = -32700
	CodeInvalidRequest = -32600
	CodeMethodNotFound = -32601
	CodeInvalidParams  = -32602
	CodeInternalError  = -32603
	// CodeUserRejected is what MCP clients answer a sampling request the
	// user (or the configuration) declined.
	CodeUserRejected = -1
)

// RPCError is a JSON-RPC error the server answered a request with.
// Use errors.As to read its code.
type RPCError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func (e *RPCError) Error() string {
	msg := fmt.Sprintf("JSON-RPC error %d: %s", e.Code, e.Message)
	if len(e.Data) > 0 && len(e.Data) <= 200 {
		msg += " (data: " + string(e.Data) + ")"
	}
	return msg
}

// ErrSessionExpired is the HTTP transport's answer to 404 on a request that
// carried an Mcp-Session-Id: the server ended the session. The client starts
// a new one (initialize again) and retries the request once, as the spec
// says; callers see it only when that new session fails too.
var ErrSessionExpired = errors.New("the server ended the MCP session (HTTP 404)")

// ErrClosed is returned by calls on a client after Close or after its
// connection was lost; the error that ended the connection is wrapped beside it.
var ErrClosed = errors.New("MCP connection closed")

// message is one JSON-RPC 2.0 message as read from the wire: a request
// (method and id), a notification (method, no id) or a response (id with
// result or error).
type message struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *RPCError       `json:"error,omitempty"`
}

func (m *message) isRequest() bool      { return m.Method != "" && hasID(m.ID) }
func (m *message) isNotification() bool { return m.Method != "" && !hasID(m.ID) }
func (m *message) isResponse() bool     { return m.Method == "" && hasID(m.ID) }

func hasID(id json.RawMessage) bool {
	id = bytes.TrimSpace(id)
	return len(id) > 0 && !bytes.Equal(id, []byte("null"))
}

// idKey is the key under which a request id is matched with its response:
// the id's JSON text, with a string id's quotes kept so "1" and 1 differ.
func idKey(id json.RawMessage) string { return string(bytes.TrimSpace(id)) }

// outgoing is one message for a transport to send.
type outgoing struct {
	data   []byte
	id     string // idKey of a request; "" for notifications and responses
	method string // for requests and notifications
}

func encodeRequest(id int64, method string, params any) (outgoing, error) {
	p, err := encodeParams(params)
	if err != nil {
		return outgoing{}, fmt.Errorf("encode %s params: %w", method, err)
	}
	data, err := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      int64           `json:"id"`
		Method  string          `json:"method"`
		Params  json.RawMessage `json:"params,omitempty"`
	}{"2.0", id, method, p})
	if err != nil {
		return outgoing{}, fmt.Errorf("encode %s: %w", method, err)
	}
	return outgoing{data: data, id: fmt.Sprint(id), method: method}, nil
}

func encodeNotification(method string, params any) (outgoing, error) {
	p, err := encodeParams(params)
	if err != nil {
		return outgoing{}, fmt.Errorf("encode %s params: %w", method, err)
	}
	data, err := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		Method  string          `json:"method"`
		Params  json.RawMessage `json:"params,omitempty"`
	}{"2.0", method, p})
	if err != nil {
		return outgoing{}, fmt.Errorf("encode %s: %w", method, err)
	}
	return outgoing{data: data, method: method}, nil
}

func encodeResponse(id json.RawMessage, result any, rpcErr *RPCError) (outgoing, error) {
	var data []byte
	var err error
	if rpcErr != nil {
		data, err = json.Marshal(struct {
			JSONRPC string          `json:"jsonrpc"`
			ID      json.RawMessage `json:"id"`
			Error   *RPCError       `json:"error"`
		}{"2.0", id, rpcErr})
	} else {
		var r json.RawMessage
		r, err = json.Marshal(result)
		if err == nil {
			data, err = json.Marshal(struct {
				JSONRPC string          `json:"jsonrpc"`
				ID      json.RawMessage `json:"id"`
				Result  json.RawMessage `json:"result"`
			}{"2.0", id, r})
		}
	}
	if err != nil {
		return outgoing{}, fmt.Errorf("encode response to request %s: %w", id, err)
	}
	return outgoing{data: data}, nil
}

func encodeParams(params any) (json.RawMessage, error) {
	switch p := params.(type) {
	case nil:
		return nil, nil
	case json.RawMessage:
		return p, nil
	}
	return json.Marshal(params)
}

// preview shortens a server's bytes for a log line or an error.
func preview(b []byte) string {
	const n = 120
	if len(b) > n {
		return fmt.Sprintf("%q… (%d bytes)", b[:n], len(b))
	}
	return fmt.Sprintf("%q", b)
}
