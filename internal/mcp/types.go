package mcp

import (
	"encoding/json"
	"strings"
)

// Protocol revisions this package speaks, newest first.
const (
	Version20251125 = "2025-11-25"
	Version20250618 = "2025-06-18"
	// Version20250326 is the first revision with Streamable HTTP. The client
	// proposes it only if Options.Versions names it, but accepts it by
	// default when a server answers with it: its messages are the same
	// apart from JSON-RPC batches, which the client reads.
	Version20250326 = "2025-03-26"
)

// DefaultVersions is what Options.Versions defaults to: the first is
// proposed, any of them is accepted in the server's answer.
var DefaultVersions = []string{Version20251125, Version20250618, Version20250326}

// Implementation names a client or a server (clientInfo, serverInfo).
type Implementation struct {
	Name    string `json:"name"`
	Title   string `json:"title,omitempty"`
	Version string `json:"version"`
}

// ListChanged is a capability that may announce list changes.
type ListChanged struct {
	ListChanged bool `json:"listChanged,omitempty"`
}

// ResourcesCapability is the server's resources capability.
type ResourcesCapability struct {
	Subscribe   bool `json:"subscribe,omitempty"`
	ListChanged bool `json:"listChanged,omitempty"`
}

// ServerCapabilities is what the server declared in its initialize result.
// A nil field is a feature the server does not offer.
type ServerCapabilities struct {
	Tools        *ListChanged         `json:"tools,omitempty"`
	Resources    *ResourcesCapability `json:"resources,omitempty"`
	Prompts      *ListChanged         `json:"prompts,omitempty"`
	Logging      json.RawMessage      `json:"logging,omitempty"`
	Completions  json.RawMessage      `json:"completions,omitempty"`
	Experimental json.RawMessage      `json:"experimental,omitempty"`
}

// InitializeResult is the server's answer to initialize.
type InitializeResult struct {
	ProtocolVersion string             `json:"protocolVersion"`
	Capabilities    ServerCapabilities `json:"capabilities"`
	ServerInfo      Implementation     `json:"serverInfo"`
	// Instructions is the server's own text for the model. It is untrusted:
	// choir never puts it in a system message.
	Instructions string `json:"instructions,omitempty"`
}

// ToolAnnotations are the server's hints about a tool. They are claims by
// the server, not guarantees.
type ToolAnnotations struct {
	Title           string `json:"title,omitempty"`
	ReadOnlyHint    *bool  `json:"readOnlyHint,omitempty"`
	DestructiveHint *bool  `json:"destructiveHint,omitempty"`
	IdempotentHint  *bool  `json:"idempotentHint,omitempty"`
	OpenWorldHint   *bool  `json:"openWorldHint,omitempty"`
}

// Tool is one entry of tools/list.
type Tool struct {
	Name         string           `json:"name"`
	Title        string           `json:"title,omitempty"`
	Description  string           `json:"description,omitempty"`
	InputSchema  json.RawMessage  `json:"inputSchema"`
	OutputSchema json.RawMessage  `json:"outputSchema,omitempty"`
	Annotations  *ToolAnnotations `json:"annotations,omitempty"`
	// Raw is the tool object exactly as the server sent it (for hashing a
	// pinned tool list: every field counts, known or not).
	Raw json.RawMessage `json:"-"`
}

// UnmarshalJSON keeps the raw object in Raw.
func (t *Tool) UnmarshalJSON(b []byte) error {
	type plain Tool
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	*t = Tool(p)
	t.Raw = append(json.RawMessage(nil), b...)
	return nil
}

// Content is one content block of a tool result or a prompt message. Type
// says which fields are set:
//
//	"text"           Text
//	"image", "audio" Data (base64) and MIMEType
//	"resource_link"  URI, Name, and optionally Title, Description, MIMEType, Size
//	"resource"       Resource (an embedded resource: URI, MIMEType, Text or Blob)
//
// A block of a type this package does not know keeps only Type and Raw.
type Content struct {
	Type        string            `json:"type"`
	Text        string            `json:"text,omitempty"`
	Data        string            `json:"data,omitempty"`
	MIMEType    string            `json:"mimeType,omitempty"`
	URI         string            `json:"uri,omitempty"`
	Name        string            `json:"name,omitempty"`
	Title       string            `json:"title,omitempty"`
	Description string            `json:"description,omitempty"`
	Size        *int64            `json:"size,omitempty"`
	Resource    *ResourceContents `json:"resource,omitempty"`
	Annotations json.RawMessage   `json:"annotations,omitempty"`
	// Raw is the block as the server sent it.
	Raw json.RawMessage `json:"-"`
}

// UnmarshalJSON keeps the raw block in Raw.
func (c *Content) UnmarshalJSON(b []byte) error {
	type plain Content
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	*c = Content(p)
	c.Raw = append(json.RawMessage(nil), b...)
	return nil
}

// CallResult is the answer to tools/call. IsError marks a tool that ran and
// failed (its Content says why); a protocol failure is an error instead.
type CallResult struct {
	Content           []Content       `json:"content"`
	StructuredContent json.RawMessage `json:"structuredContent,omitempty"`
	IsError           bool            `json:"isError,omitempty"`
}

// Text joins the result's text blocks with newlines.
func (r *CallResult) Text() string {
	var parts []string
	for _, c := range r.Content {
		if c.Type == "text" {
			parts = append(parts, c.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// Progress is one notifications/progress for a call. Total is 0 when the
// server did not say.
type Progress struct {
	Progress float64 `json:"progress"`
	Total    float64 `json:"total,omitempty"`
	Message  string  `json:"message,omitempty"`
}

// LogMessage is one notifications/message from the server.
type LogMessage struct {
	Level  string          `json:"level"`
	Logger string          `json:"logger,omitempty"`
	Data   json.RawMessage `json:"data"`
}

// Resource is one entry of resources/list.
type Resource struct {
	URI         string `json:"uri"`
	Name        string `json:"name"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	MIMEType    string `json:"mimeType,omitempty"`
	Size        *int64 `json:"size,omitempty"`
}

// ResourceContents is one item of resources/read or an embedded resource:
// Text for text, Blob (base64) for binary.
type ResourceContents struct {
	URI      string `json:"uri"`
	MIMEType string `json:"mimeType,omitempty"`
	Text     string `json:"text,omitempty"`
	Blob     string `json:"blob,omitempty"`
}

// PromptArgument is one argument a prompt takes.
type PromptArgument struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	Required    bool   `json:"required,omitempty"`
}

// Prompt is one entry of prompts/list.
type Prompt struct {
	Name        string           `json:"name"`
	Title       string           `json:"title,omitempty"`
	Description string           `json:"description,omitempty"`
	Arguments   []PromptArgument `json:"arguments,omitempty"`
}

// PromptMessage is one message of a prompt.
type PromptMessage struct {
	Role    string  `json:"role"`
	Content Content `json:"content"`
}

// PromptResult is the answer to prompts/get.
type PromptResult struct {
	Description string          `json:"description,omitempty"`
	Messages    []PromptMessage `json:"messages"`
}

// ElicitRequest is a server's elicitation/create: a question for the user.
// Mode is "form" (RequestedSchema is a flat object schema of primitive
// fields, each possibly with a default) or "url" (URL and ElicitationID).
type ElicitRequest struct {
	Mode            string          `json:"mode,omitempty"`
	Message         string          `json:"message"`
	RequestedSchema json.RawMessage `json:"requestedSchema,omitempty"`
	URL             string          `json:"url,omitempty"`
	ElicitationID   string          `json:"elicitationId,omitempty"`
}

// Elicitation actions.
const (
	ActionAccept  = "accept"
	ActionDecline = "decline"
	ActionCancel  = "cancel"
)

// ElicitResult is the answer to an elicitation: Content only with accept.
type ElicitResult struct {
	Action  string         `json:"action"`
	Content map[string]any `json:"content,omitempty"`
}

// SamplingMessage is one message of a sampling request; Content is a
// content block or (2025-11-25) an array of them, kept as sent.
type SamplingMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// SampleRequest is a server's sampling/createMessage: it asks the client's
// model for a completion. Raw holds every parameter as sent.
type SampleRequest struct {
	Messages     []SamplingMessage `json:"messages"`
	SystemPrompt string            `json:"systemPrompt,omitempty"`
	MaxTokens    int               `json:"maxTokens"`
	Raw          json.RawMessage   `json:"-"`
}

// SampleResult is the client's completion for a sampling request.
type SampleResult struct {
	Role       string  `json:"role"`
	Content    Content `json:"content"`
	Model      string  `json:"model"`
	StopReason string  `json:"stopReason,omitempty"`
}
