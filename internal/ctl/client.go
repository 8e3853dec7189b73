package ctl

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"syscall"
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
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://choird"+path, nil)
	if err != nil {
		return nil, err
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
