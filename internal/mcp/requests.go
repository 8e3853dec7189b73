package mcp

import (
	"context"
	"encoding/json"
	"fmt"
)

// serverRequest answers a request the server sent the client (ping,
// elicitation/create, sampling/createMessage) on its own goroutine, so a
// question to the user does not stop the reading of other messages.
func (c *Client) serverRequest(m message) {
	key := idKey(m.ID)
	ctx, cancel := context.WithCancel(c.baseCtx)
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		cancel()
		return
	}
	c.serverReqs[key] = cancel
	c.mu.Unlock()
	go func() {
		defer func() {
			c.mu.Lock()
			delete(c.serverReqs, key)
			c.mu.Unlock()
			cancel()
		}()
		res, rpcErr := c.answer(ctx, m)
		if ctx.Err() != nil && c.Err() == nil {
			// The server cancelled it: no response is sent (spec: cancellation).
			return
		}
		out, err := encodeResponse(m.ID, res, rpcErr)
		if err != nil {
			out, _ = encodeResponse(m.ID, nil, &RPCError{Code: CodeInternalError, Message: err.Error()})
		}
		sctx, scancel := context.WithTimeout(c.baseCtx, cancelNoticeTimeout*5)
		defer scancel()
		if err := c.t.send(sctx, out); err != nil {
			c.log.Warn("could not answer the server's request", "method", m.Method, "err", err)
		}
	}()
}

func (c *Client) answer(ctx context.Context, m message) (any, *RPCError) {
	switch m.Method {
	case "ping":
		return struct{}{}, nil
	case "elicitation/create":
		var req ElicitRequest
		if err := json.Unmarshal(m.Params, &req); err != nil {
			return nil, &RPCError{Code: CodeInvalidParams, Message: "elicitation/create params: " + err.Error()}
		}
		if req.Mode == "" {
			req.Mode = "form"
		}
		if c.opts.Elicit == nil {
			return ElicitResult{Action: ActionDecline}, nil
		}
		res, err := c.opts.Elicit(ctx, req)
		if err != nil {
			return nil, &RPCError{Code: CodeInternalError, Message: "elicitation failed: " + err.Error()}
		}
		if res.Action == "" {
			res.Action = ActionDecline
		}
		if res.Action != ActionAccept {
			res.Content = nil
		}
		return res, nil
	case "sampling/createMessage":
		if c.opts.Sample == nil {
			return nil, &RPCError{Code: CodeUserRejected, Message: "sampling declined: this client is not configured to sample for this server"}
		}
		var req SampleRequest
		if err := json.Unmarshal(m.Params, &req); err != nil {
			return nil, &RPCError{Code: CodeInvalidParams, Message: "sampling/createMessage params: " + err.Error()}
		}
		req.Raw = m.Params
		res, err := c.opts.Sample(ctx, req)
		if err != nil {
			return nil, &RPCError{Code: CodeUserRejected, Message: "sampling declined: " + err.Error()}
		}
		if res.Role == "" {
			res.Role = "assistant"
		}
		return res, nil
	}
	return nil, &RPCError{Code: CodeMethodNotFound, Message: fmt.Sprintf("method %q is not supported by this client", m.Method)}
}
