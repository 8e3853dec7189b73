package rpc

// HostToolNetFetch is choir.net.fetch: an HTTP(S) request that choird makes
// for the agent within the session's allowlist (agents.<id>.network in
// policy mode, or the run's mood), with no credential. The agent forwards
// the call over EXECUTE_HOST_TOOL unchanged; choird decodes it strictly.
const HostToolNetFetch = "choir.net.fetch"

// NetFetch is choir.net.fetch's input.
type NetFetch struct {
	URL    string `json:"url"`
	Method string `json:"method,omitempty"` // GET (default), HEAD or POST
	// Headers the model may set: Accept, Accept-Language, Content-Type.
	Headers map[string]string `json:"headers,omitempty"`
	Body    string            `json:"body,omitempty"` // POST only
	// MaxBytes caps the body read (at most the session's limit).
	MaxBytes int64 `json:"max_bytes,omitempty"`
}

// NetFetchAnswer is choir.net.fetch's output. The body is untrusted data:
// Text for textual types, Binary (a summary, never the bytes) otherwise.
type NetFetchAnswer struct {
	Status      string            `json:"status"` // "success"
	Summary     string            `json:"summary"`
	HTTPStatus  int               `json:"http_status"`
	URL         string            `json:"url"` // the last URL requested (after redirects)
	Redirects   []string          `json:"redirects,omitempty"`
	ContentType string            `json:"content_type,omitempty"`
	Headers     map[string]string `json:"headers,omitempty"` // a few response headers
	Bytes       int64             `json:"bytes"`             // body bytes read
	Truncated   bool              `json:"truncated,omitempty"`
	// TextTruncated: Text stops at choird's cap on an answer's text
	// (256 KiB), though more of the body was read.
	TextTruncated bool            `json:"text_truncated,omitempty"`
	Untrusted     string          `json:"untrusted"` // how to treat the body
	Text          string          `json:"text,omitempty"`
	Binary        *NetFetchBinary `json:"binary,omitempty"`
	// Source is the body's object hash when choird stored it (run sessions).
	Source string `json:"source,omitempty"`
}

// NetFetchBinary summarises a body that is not text.
type NetFetchBinary struct {
	ContentType string `json:"content_type"`
	Bytes       int64  `json:"bytes"`
	SHA256      string `json:"sha256"`
}
