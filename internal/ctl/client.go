package ctl

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"syscall"

	"choir/internal/rpc"
)

// ErrNotRunning means nothing answers on the admin socket.
var ErrNotRunning = errors.New("choird is not running")

// Client talks to choird's admin socket.
type Client struct {
	socket string
	hc     *http.Client
}

// NewClient returns a client for the admin socket at path.
func NewClient(socket string) *Client {
	tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", socket)
	}}
	return &Client{socket: socket, hc: &http.Client{Transport: tr}}
}

// Status fetches choird's status.
func (c *Client) Status(ctx context.Context) (*Status, error) {
	var s Status
	if err := c.getJSON(ctx, "/v1/status", &s); err != nil {
		return nil, err
	}
	return &s, nil
}

// Config fetches the running config.json.
func (c *Client) Config(ctx context.Context) (json.RawMessage, error) {
	var raw json.RawMessage
	if err := c.getJSON(ctx, "/v1/config", &raw); err != nil {
		return nil, err
	}
	return raw, nil
}

// Logs copies a log to w: its contents, then new lines until ctx ends when
// follow is set.
func (c *Client) Logs(ctx context.Context, source string, follow bool, w io.Writer) error {
	path := "/v1/logs/" + url.PathEscape(source)
	if follow {
		path += "?follow=1"
	}
	resp, err := c.get(ctx, path)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, err = io.Copy(w, resp.Body)
	if ctx.Err() != nil {
		return nil // the user stopped following
	}
	return err
}

func (c *Client) getJSON(ctx context.Context, path string, v any) error {
	resp, err := c.get(ctx, path)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		return fmt.Errorf("decode choird's answer to %s: %w", path, err)
	}
	return nil
}

func (c *Client) get(ctx context.Context, path string) (*http.Response, error) {
	return c.send(ctx, http.MethodGet, path, nil)
}

// send makes a request; any answer but 200 becomes an error.
func (c *Client) send(ctx context.Context, method, path string, body io.Reader) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, "http://choird"+path, body)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		if errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ECONNREFUSED) {
			return nil, fmt.Errorf("%w: nothing answers on %s (start it with `choird`)", ErrNotRunning, c.socket)
		}
		if errors.Is(err, syscall.EACCES) {
			return nil, fmt.Errorf("cannot connect to %s: permission denied (run choirctl as the user that runs choird)", c.socket)
		}
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		var eb ErrorBody
		data, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		if json.Unmarshal(data, &eb) == nil && eb.Error != nil {
			eb.Error.Status = resp.StatusCode
			return nil, eb.Error
		}
		return nil, &Error{Status: resp.StatusCode, Code: "internal", Message: fmt.Sprintf("choird answered %s to %s", resp.Status, path)}
	}
	return resp, nil
}

// Close releases idle connections.
func (c *Client) Close() { c.hc.CloseIdleConnections() }

// Agents lists every configured agent with its state.
func (c *Client) Agents(ctx context.Context) ([]AgentStatus, error) {
	var out []AgentStatus
	return out, c.getJSON(ctx, "/v1/agents", &out)
}

// Agent reports one agent.
func (c *Client) Agent(ctx context.Context, id string) (*AgentStatus, error) {
	var out AgentStatus
	if err := c.getJSON(ctx, "/v1/agents/"+url.PathEscape(id), &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// StartAgent starts an agent and returns once it has said hello.
func (c *Client) StartAgent(ctx context.Context, id string, req StartRequest) (*AgentStatus, error) {
	var out AgentStatus
	if err := c.postJSON(ctx, "/v1/agents/"+url.PathEscape(id)+"/start", req, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// StopAgent stops an agent gracefully.
func (c *Client) StopAgent(ctx context.Context, id string) error {
	return c.postJSON(ctx, "/v1/agents/"+url.PathEscape(id)+"/stop", struct{}{}, nil)
}

// RestartAgent stops and starts an agent with the same bindings.
func (c *Client) RestartAgent(ctx context.Context, id string) (*AgentStatus, error) {
	var out AgentStatus
	if err := c.postJSON(ctx, "/v1/agents/"+url.PathEscape(id)+"/restart", struct{}{}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Workspaces lists workspaces and their lease holders.
func (c *Client) Workspaces(ctx context.Context) ([]Workspace, error) {
	var out []Workspace
	return out, c.getJSON(ctx, "/v1/workspaces", &out)
}

// ResetWorkspace stops the holder, if any, and empties the workspace.
func (c *Client) ResetWorkspace(ctx context.Context, name string) (*ResetResult, error) {
	var out ResetResult
	if err := c.postJSON(ctx, "/v1/workspaces/"+url.PathEscape(name)+"/reset", struct{}{}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

func (c *Client) postJSON(ctx context.Context, path string, in, out any) error {
	body, err := json.Marshal(in)
	if err != nil {
		return err
	}
	resp, err := c.send(ctx, http.MethodPost, path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if out == nil {
		return nil
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("decode choird's answer to %s: %w", path, err)
	}
	return nil
}

// ApplySecrets makes choird reload secrets.json and refresh running agents.
func (c *Client) ApplySecrets(ctx context.Context) (*SecretsApplied, error) {
	var out SecretsApplied
	if err := c.postJSON(ctx, "/v1/secrets/apply", struct{}{}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// SendMessage sends a user message to a running agent, as the console DM.
func (c *Client) SendMessage(ctx context.Context, agentID, text string) (string, error) {
	var out ChatSent
	if err := c.postJSON(ctx, "/v1/agents/"+url.PathEscape(agentID)+"/messages", ChatMessage{Text: text}, &out); err != nil {
		return "", err
	}
	return out.ID, nil
}

// Inject appends text to a running agent's edge context (/inject).
func (c *Client) Inject(ctx context.Context, agentID, text string) error {
	return c.postJSON(ctx, "/v1/agents/"+url.PathEscape(agentID)+"/inject", ChatMessage{Text: text}, nil)
}

// Outbox streams what an agent sends to its DM until ctx ends. It returns
// once choird has subscribed, so nothing sent afterwards is missed.
func (c *Client) Outbox(ctx context.Context, agentID string) (*OutboxStream, error) {
	resp, err := c.get(ctx, "/v1/agents/"+url.PathEscape(agentID)+"/outbox")
	if err != nil {
		return nil, err
	}
	return &OutboxStream{body: resp.Body, dec: json.NewDecoder(resp.Body)}, nil
}

// OutboxStream reads an agent's outgoing messages.
type OutboxStream struct {
	body io.ReadCloser
	dec  *json.Decoder
}

// Next returns the next message; io.EOF when choird ended the stream.
func (s *OutboxStream) Next() (ConsoleMessage, error) {
	var m ConsoleMessage
	err := s.dec.Decode(&m)
	return m, err
}

// Close ends the stream.
func (s *OutboxStream) Close() error { return s.body.Close() }

// BuildAgent builds an agent's image, calling progress with each line of
// progress as choird streams it.
func (c *Client) BuildAgent(ctx context.Context, agentID string, progress func(string)) (*BuildResult, error) {
	resp, err := c.send(ctx, http.MethodPost, "/v1/agents/"+url.PathEscape(agentID)+"/build", bytes.NewReader([]byte("{}")))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	dec := json.NewDecoder(resp.Body)
	for {
		var ev BuildEvent
		if err := dec.Decode(&ev); err != nil {
			if err == io.EOF {
				return nil, errors.New("choird ended the build stream without a result")
			}
			return nil, fmt.Errorf("read the build stream: %w", err)
		}
		switch {
		case ev.Error != nil:
			return nil, ev.Error
		case ev.Result != nil:
			return ev.Result, nil
		case progress != nil:
			progress(ev.Progress)
		}
	}
}

// Approvals lists approvals, pending first; agentID "" means every agent.
func (c *Client) Approvals(ctx context.Context, agentID string) ([]Approval, error) {
	var out []Approval
	path := "/v1/approvals"
	if agentID != "" {
		path += "?agent=" + url.QueryEscape(agentID)
	}
	return out, c.getJSON(ctx, path, &out)
}

// Approval shows one approval.
func (c *Client) Approval(ctx context.Context, id string) (*Approval, error) {
	var out Approval
	if err := c.getJSON(ctx, "/v1/approvals/"+url.PathEscape(id), &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Decide approves or rejects an approval as the operator.
func (c *Client) Decide(ctx context.Context, id string, approve bool) (*Approval, error) {
	verb := "reject"
	if approve {
		verb = "approve"
	}
	var out Approval
	if err := c.postJSON(ctx, "/v1/approvals/"+url.PathEscape(id)+"/"+verb, struct{}{}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Sessions lists sessions, newest first; agentID "" means every agent.
func (c *Client) Sessions(ctx context.Context, agentID string) ([]SessionInfo, error) {
	var out []SessionInfo
	path := "/v1/sessions"
	if agentID != "" {
		path += "?agent=" + url.QueryEscape(agentID)
	}
	return out, c.getJSON(ctx, path, &out)
}

// SessionEvents returns a session's replicated events after rev.
func (c *Client) SessionEvents(ctx context.Context, sessionID string, after int64) ([]SessionEvent, error) {
	var out []SessionEvent
	return out, c.getJSON(ctx, fmt.Sprintf("/v1/sessions/%s/events?after=%d", url.PathEscape(sessionID), after), &out)
}

// Cores lists a running session's core jobs.
func (c *Client) Cores(ctx context.Context, sessionID string) ([]rpc.StatusReq, error) {
	var out []rpc.StatusReq
	return out, c.getJSON(ctx, "/v1/sessions/"+url.PathEscape(sessionID)+"/cores", &out)
}

// CancelCore cancels a core job of a running session.
func (c *Client) CancelCore(ctx context.Context, sessionID, job string) error {
	return c.postJSON(ctx, "/v1/sessions/"+url.PathEscape(sessionID)+"/cancel", CancelRequest{JobName: job}, nil)
}

// Compact asks a running session to compact its working memory.
func (c *Client) Compact(ctx context.Context, sessionID string) error {
	return c.postJSON(ctx, "/v1/sessions/"+url.PathEscape(sessionID)+"/compact", struct{}{}, nil)
}

// Models lists the configured models, TTS providers and voice profiles.
func (c *Client) Models(ctx context.Context) (*ModelCatalog, error) {
	var out ModelCatalog
	if err := c.getJSON(ctx, "/v1/models", &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Model returns the model and voice a running agent uses.
func (c *Client) Model(ctx context.Context, agentID string) (*ModelChoice, error) {
	var out ModelChoice
	if err := c.getJSON(ctx, "/v1/agents/"+url.PathEscape(agentID)+"/model", &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// SetModel switches a running agent's model and/or voice until it restarts.
func (c *Client) SetModel(ctx context.Context, agentID string, choice ModelChoice) (*ModelChoice, error) {
	var out ModelChoice
	if err := c.postJSON(ctx, "/v1/agents/"+url.PathEscape(agentID)+"/model", choice, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// LoadConfig is `config load`: choird stages .choir.d/ and answers the diff.
func (c *Client) LoadConfig(ctx context.Context) (*ConfigDiff, error) {
	var out ConfigDiff
	if err := c.postJSON(ctx, "/v1/config/load", struct{}{}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// DiffConfig is `config diff`.
func (c *Client) DiffConfig(ctx context.Context) (*ConfigDiff, error) {
	var out ConfigDiff
	if err := c.getJSON(ctx, "/v1/config/diff", &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// ApplyConfig is `config apply`.
func (c *Client) ApplyConfig(ctx context.Context) (*ConfigApplied, error) {
	var out ConfigApplied
	if err := c.postJSON(ctx, "/v1/config/apply", struct{}{}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// UpdateAgents is agent update (one id) or update-all (no id): progress
// lines go to progress, each agent's outcome to result as it ends.
func (c *Client) UpdateAgents(ctx context.Context, agentID string, progress func(string), result func(UpdateResult)) error {
	path := "/v1/agents/update-all"
	if agentID != "" {
		path = "/v1/agents/" + url.PathEscape(agentID) + "/update"
	}
	resp, err := c.send(ctx, http.MethodPost, path, bytes.NewReader([]byte("{}")))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	dec := json.NewDecoder(resp.Body)
	for {
		var ev UpdateEvent
		if err := dec.Decode(&ev); err != nil {
			if err == io.EOF {
				return nil
			}
			return fmt.Errorf("read the update stream: %w", err)
		}
		switch {
		case ev.Error != nil:
			return ev.Error
		case ev.Result != nil:
			if result != nil {
				result(*ev.Result)
			}
		case progress != nil:
			progress(ev.Progress)
		}
	}
}
