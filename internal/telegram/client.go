package telegram

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// DefaultAPIBase is the Bot API server; a local telegram-bot-api server or a
// fake is configured instead through New's apiBase.
const DefaultAPIBase = "https://api.telegram.org"

// Default timeouts; see WithRequestTimeout and WithTransferTimeout.
const (
	DefaultRequestTimeout  = 30 * time.Second
	DefaultTransferTimeout = 10 * time.Minute
)

// maxAnswerBytes bounds what the client reads from one method's answer. A
// getUpdates batch of 100 updates is far below it.
const maxAnswerBytes = 16 << 20

// Client calls the Bot API for one bot. It is safe for concurrent use.
//
// The token sits in every URL path; it never appears in an error or in a
// printed Client.
type Client struct {
	base            string // API base, no trailing slash
	shownBase       string // base without any userinfo password, for String
	token           string
	botID           string // the token's numeric prefix: the bot's user id, safe to print
	http            *http.Client
	requestTimeout  time.Duration
	transferTimeout time.Duration
}

// Option adjusts a Client built by New.
type Option func(*Client)

// WithHTTPClient makes the client send its requests through hc. A non-zero
// hc.Timeout must exceed every long-poll timeout given to GetUpdates, which
// refuses to start a poll that would be cut short.
func WithHTTPClient(hc *http.Client) Option {
	return func(c *Client) {
		if hc != nil {
			c.http = hc
		}
	}
}

// WithRequestTimeout bounds each call other than uploads and downloads
// (default DefaultRequestTimeout). GetUpdates gets its long-poll timeout on
// top of it.
func WithRequestTimeout(d time.Duration) Option {
	return func(c *Client) {
		if d > 0 {
			c.requestTimeout = d
		}
	}
}

// WithTransferTimeout bounds each upload (SendDocument, SendPhoto,
// SendVoice, SendVideo) and each Download (default DefaultTransferTimeout).
func WithTransferTimeout(d time.Duration) Option {
	return func(c *Client) {
		if d > 0 {
			c.transferTimeout = d
		}
	}
}

// New returns a client of the Bot API at apiBase ("" means DefaultAPIBase)
// for the bot whose token is given. Requests go to
// <apiBase>/bot<token>/<method> and downloads to
// <apiBase>/file/bot<token>/<file_path>.
func New(apiBase, token string, opts ...Option) (*Client, error) {
	if apiBase == "" {
		apiBase = DefaultAPIBase
	}
	u, err := url.Parse(apiBase)
	if err != nil {
		return nil, fmt.Errorf("telegram: api_base is not a URL; want e.g. %s", DefaultAPIBase)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("telegram: api_base %q is not an http(s) URL with a host and no query; want e.g. %s", u.Redacted(), DefaultAPIBase)
	}
	if err := checkToken(token); err != nil {
		return nil, err
	}
	c := &Client{
		base:            strings.TrimRight(u.String(), "/"),
		shownBase:       strings.TrimRight(u.Redacted(), "/"),
		token:           token,
		http:            &http.Client{},
		requestTimeout:  DefaultRequestTimeout,
		transferTimeout: DefaultTransferTimeout,
	}
	if id, _, ok := strings.Cut(token, ":"); ok && isDigits(id) {
		c.botID = id
	}
	for _, opt := range opts {
		opt(c)
	}
	return c, nil
}

// checkToken refuses a token that could change the URL it is put in. It
// never quotes the token.
func checkToken(token string) error {
	if token == "" {
		return errors.New("telegram: bot token is empty; set the gateway's token secret (from @BotFather, like 123456:ABC-DEF...)")
	}
	for _, r := range token {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == ':' || r == '_' || r == '-') {
			return fmt.Errorf("telegram: bot token (%d characters) contains %q; a token has only letters, digits, ':', '_' and '-' (check the secret for stray whitespace or quotes)", len(token), r)
		}
	}
	return nil
}

func isDigits(s string) bool {
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return s != ""
}

// String names the client without its token: the API host and the bot id.
func (c *Client) String() string {
	id := c.botID
	if id == "" {
		id = "?"
	}
	return fmt.Sprintf("telegram.Client(%s, bot %s)", c.shownBase, id)
}

// GoString keeps %#v from printing the token.
func (c *Client) GoString() string { return c.String() }

// BotID is the bot's user id as the token states it ("" when the token has
// no numeric prefix). GetMe answers the same id.
func (c *Client) BotID() string { return c.botID }

func (c *Client) methodURL(method string) string {
	return c.base + "/bot" + c.token + "/" + method
}

// call posts params as JSON to method and decodes its result into result
// (nil to ignore it), within the request timeout.
func (c *Client) call(ctx context.Context, method string, params, result any) error {
	return c.callWithin(ctx, c.requestTimeout, method, params, result)
}

func (c *Client) callWithin(ctx context.Context, timeout time.Duration, method string, params, result any) error {
	var body io.Reader
	if params != nil {
		b, err := json.Marshal(params)
		if err != nil {
			return fmt.Errorf("telegram %s: encode parameters: %w", method, err)
		}
		body = bytes.NewReader(b)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return c.post(ctx, method, "application/json", body, result)
}

// post sends body to method and decodes the answer.
func (c *Client) post(ctx context.Context, method, contentType string, body io.Reader, result any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.methodURL(method), body)
	if err != nil {
		return c.transportError(method, err)
	}
	if body != nil {
		req.Header.Set("Content-Type", contentType)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		return c.transportError(method, err)
	}
	defer resp.Body.Close()
	return c.decode(method, resp, result)
}

// envelope is every answer of the Bot API.
type envelope struct {
	OK          *bool               `json:"ok"`
	Result      json.RawMessage     `json:"result"`
	ErrorCode   int                 `json:"error_code"`
	Description string              `json:"description"`
	Parameters  *ResponseParameters `json:"parameters"`
}

// decode reads one answer: the result into result on "ok": true, an
// *APIError otherwise.
func (c *Client) decode(method string, resp *http.Response, result any) error {
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes+1))
	if err != nil {
		return c.transportError(method, fmt.Errorf("read answer (HTTP %s): %w", resp.Status, err))
	}
	if len(data) > maxAnswerBytes {
		return fmt.Errorf("telegram %s: answer exceeds %d bytes (HTTP %s)", method, maxAnswerBytes, resp.Status)
	}
	var env envelope
	if err := json.Unmarshal(data, &env); err != nil || env.OK == nil {
		return c.notAPIAnswer(method, resp, data)
	}
	if !*env.OK {
		e := &APIError{
			Method:      method,
			Code:        env.ErrorCode,
			HTTPStatus:  resp.StatusCode,
			Description: c.redact(env.Description),
		}
		if e.Code == 0 {
			e.Code = resp.StatusCode
		}
		if p := env.Parameters; p != nil {
			e.RetryAfter = time.Duration(p.RetryAfter) * time.Second
			e.MigrateToChatID = p.MigrateToChatID
		}
		if e.RetryAfter == 0 && e.Code == http.StatusTooManyRequests {
			e.RetryAfter = retryAfterHeader(resp.Header)
		}
		return e
	}
	if result == nil {
		return nil
	}
	if err := json.Unmarshal(env.Result, result); err != nil {
		return fmt.Errorf("telegram %s: decode result: %w", method, err)
	}
	return nil
}

// notAPIAnswer is the error for an answer that is not the Bot API's JSON:
// typically a proxy's HTML error page.
func (c *Client) notAPIAnswer(method string, resp *http.Response, data []byte) error {
	// The token is removed before the body is cut: a cut through an echoed
	// token would leave a part of it that redaction no longer recognises.
	snippet := c.redact(string(data))
	if len(snippet) > 200 {
		snippet = snippet[:200]
	}
	ctype := resp.Header.Get("Content-Type")
	if ctype == "" {
		ctype = "no content type"
	}
	return &APIError{
		Method:     method,
		Code:       resp.StatusCode,
		HTTPStatus: resp.StatusCode,
		Description: c.redact(fmt.Sprintf("answer is not a Bot API response (HTTP %s, %s, %d bytes): %q; check api_base and any proxy in between",
			resp.Status, ctype, len(data), snippet)),
		RetryAfter: retryAfterHeader(resp.Header),
		NotJSON:    true,
	}
}

// retryAfterHeader reads a proxy's Retry-After given in seconds.
func retryAfterHeader(h http.Header) time.Duration {
	var s int
	if _, err := fmt.Sscanf(h.Get("Retry-After"), "%d", &s); err == nil && s > 0 {
		return time.Duration(s) * time.Second
	}
	return 0
}
