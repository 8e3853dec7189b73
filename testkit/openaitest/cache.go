package openaitest

import (
	"encoding/json"
)

// A pretend prefix cache, for measuring how much of a prompt a provider
// could serve from its cache (§21.4, issue 23's stable prefix).
//
// With PrefixCache on, every chat answer reports
// usage.prompt_tokens_details.cached_tokens, the way OpenAI and OpenRouter
// do. The server serialises each request's prompt in the order providers
// lay a prompt out for their cache: the model, then the tools parameter,
// then each message in order (each as JSON with its members sorted, so the
// client's field order does not matter). cached_tokens is the length of
// the longest common prefix, in bytes, of that serialisation with the one
// of the previous request of the same key, divided by four (tokens ≈
// bytes/4, like the rest of this fake), and prompt_tokens is the whole
// serialisation's length divided by four (unless WithUsage sets it; the
// cached count never exceeds it). The first request of a key has nothing
// cached. A real provider caches more loosely (any recent prefix, in
// blocks of some hundred tokens, for minutes); this measure is the
// strict, deterministic part of it: what survives from one call to the
// next.

// PrefixCache turns the pretend prefix cache on. key names the stream a
// request belongs to (a session, a lane); requests of different keys never
// share a cached prefix. nil puts every request in one stream.
func (s *Server) PrefixCache(key func(*Request) string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if key == nil {
		key = func(*Request) string { return "" }
	}
	s.cacheKey = key
	s.lastPrompt = map[string][]byte{}
}

// CacheTokens is what the pretend prefix cache counted for r: the cached
// prefix and the whole prompt, in tokens (the answer's usage carries them
// unless WithUsage set its own); -1 and -1 when the cache was off.
func (r *Request) CacheTokens() (cached, prompt int) {
	if r.cached < 0 {
		return -1, -1
	}
	return r.cached, r.promptSerial/4 + 1
}

// cachePrompt computes the request's cached prefix, under s.mu.
func (s *Server) cachePrompt(req *Request) {
	req.cached = -1
	if s.cacheKey == nil || req.JSON == nil || req.Path != "/v1/chat/completions" {
		return
	}
	prompt := serialPrompt(req.JSON)
	k := s.cacheKey(req)
	prev := s.lastPrompt[k]
	n := 0
	for n < len(prev) && n < len(prompt) && prev[n] == prompt[n] {
		n++
	}
	s.lastPrompt[k] = prompt
	req.cached = n / 4
	req.promptSerial = len(prompt)
}

// serialPrompt is the request's prompt in cache order: model, tools,
// messages, one JSON document per line.
func serialPrompt(body map[string]any) []byte {
	var out []byte
	add := func(v any) {
		raw, _ := json.Marshal(v) // maps marshal with sorted keys
		out = append(out, raw...)
		out = append(out, '\n')
	}
	add(body["model"])
	add(body["tools"])
	msgs, _ := body["messages"].([]any)
	for _, m := range msgs {
		add(m)
	}
	return out
}
