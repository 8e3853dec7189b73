// Package openai is the client for the OpenAI-compatible HTTP API through
// which choir reaches every model. OpenAI, OpenRouter, vLLM and Ollama take
// the same requests, so nothing here branches on the provider: what differs
// (endpoint, key, model, temperature, reasoning_effort, extra headers) is
// Config and ChatRequest, filled from config.json.
//
// # Endpoints
//
// The configured endpoint already ends in its version segment
// (https://openrouter.ai/api/v1, http://127.0.0.1:11434/v1); the client
// appends the path and keeps any query:
//
//	POST <endpoint>/chat/completions   Client.Chat, Client.ChatWithRateLimitRetry
//	POST <endpoint>/embeddings         Client.Embed
//
// Bodies are JSON, without streaming. "Authorization: Bearer <key>" is sent
// when a key is configured and left out otherwise (a keyless local server);
// Config.Header adds fixed headers and ChatRequest.Header a request's own
// (a model's request template), which replace Config.Header's of the same
// name; Content-Type, Accept and Authorization (with a key) are always the
// client's. ChatRequest.Extra adds body members after the client's own, in
// name order: model, messages, tools, tool_choice, stream, stream_options
// and n are refused (ErrReservedField), and temperature, reasoning_effort,
// max_tokens and max_completion_tokens come from Extra only when the
// request leaves them unset.
//
// A chat request carries model, messages (system, user, assistant with
// tool_calls, tool with tool_call_id), tools as
// {"type":"function","function":{"name","description","parameters"}} and
// tool_choice ("auto", "none", "required" or one named function).
// temperature, reasoning_effort, max_tokens and max_completion_tokens are
// sent only when set: a nil pointer leaves the field out of the body, which
// is how a model configured with "temperature": null is called (spec §21.2).
// An assistant turn that only calls tools is sent with "content": null.
//
// The answer's first choice gives the text, the tool calls (several per reply
// are common), finish_reason and usage. A tool call's arguments are a JSON
// object encoded as a string; models send invalid JSON there at times, so
// ToolCall keeps the string as sent and ToolCall.JSONArguments says whether
// and where it is broken, for the caller to answer with a tool error.
// Arguments sent as a bare object and missing call ids are tolerated.
//
// Embeddings are asked for in batches, with "encoding_format": "float"; the
// answer numbers each vector by index and Embed returns them in input order.
//
// # Tool names
//
// Function names on the wire must match ^[a-zA-Z0-9_-]{1,64}$; choir's
// canonical names contain dots (choir.fs.read). NameMap maps each canonical
// name to a wire name (choir_fs_read) and the model's calls back, refusing
// two names that would collide. The client refuses to send any tool, tool
// call or tool_choice whose name is not wire-safe.
//
// # Errors
//
// Every error from Chat, ChatWithRateLimitRetry and Embed is an *APIError
// (errors.As, or KindOf) naming the method, endpoint path and model, with the
// HTTP status, the provider's type, code and message, and Retry-After. Its
// Kind says what happened:
//
//	KindRateLimited    HTTP 429; RetryAfter from Retry-After (seconds or HTTP date)
//	KindServerError    HTTP 5xx, or an error object inside a 200 answer
//	KindTimeout        Config.Timeout or the caller's deadline passed, or HTTP 408
//	KindCanceled       the caller canceled the context
//	KindNetwork        no HTTP answer (refused, reset, DNS)
//	KindMalformed      a 2xx answer that is not JSON, has no choices, or lacks vectors
//	KindContentFilter  finish_reason "content_filter", or an error whose type,
//	                   code or metadata says a filter or moderation refused
//	KindAuth           HTTP 401 or 403
//	KindBadRequest     other 4xx, or a request refused before it was sent
//
// Error bodies are read in the shapes providers use: OpenAI's
// {"error":{"message","type","param","code"}} (code a string), OpenRouter's
// numeric code and metadata (also inside 200 answers), older vLLM's flat
// {"object":"error","message",…} and {"error":"text"}. A body that is none of
// these is quoted in part.
//
// Spec §7.7 retries nothing but a 429, once: ChatWithRateLimitRetry notifies,
// waits Retry-After or rate_limit_retry_ms, and retries once.
//
// The API key never appears in an error or in a printed Client: it is kept
// in closures, and every provider text that reaches an error has it replaced
// by "[redacted]".
package openai
