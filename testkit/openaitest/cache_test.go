package openaitest

import (
	"strings"
	"testing"
)

// cachedOf reads usage.prompt_tokens_details.cached_tokens of an answer;
// -1 when absent.
func cachedOf(body map[string]any) (cached, prompt int) {
	u, _ := body["usage"].(map[string]any)
	p, _ := u["prompt_tokens"].(float64)
	d, ok := u["prompt_tokens_details"].(map[string]any)
	if !ok {
		return -1, int(p)
	}
	c, _ := d["cached_tokens"].(float64)
	return int(c), int(p)
}

// The pretend prefix cache reports the longest common prefix with the
// previous request of the same key, in tokens of four bytes, in the order a
// provider caches (model, tools, messages) whatever the client's member
// order; other keys do not share it; without the option nothing is said.
func TestPrefixCache(t *testing.T) {
	s := New(t)
	url := s.URL() + "/chat/completions"
	long := strings.Repeat("stable instructions ", 50) // 1,000 bytes
	first := `{"model":"m","messages":[{"role":"system","content":"` + long + `"},{"role":"user","content":"one"}]}`
	// The same prompt plus a turn, the members in another order.
	second := `{"messages":[{"content":"` + long + `","role":"system"},{"role":"user","content":"one"},{"role":"assistant","content":"ok"},{"role":"user","content":"two"}],"model":"m"}`
	changed := `{"model":"m","messages":[{"role":"system","content":"Now: ` + long + `"},{"role":"user","content":"one"}]}`
	s.Expect(Chat(), Chat(), Chat(), Chat(), Chat(), Chat())

	if _, _, body := post(t, t.Context(), url, first); func() bool { c, _ := cachedOf(body); return c != -1 }() {
		t.Errorf("without PrefixCache the answer reports cached tokens: %v", body["usage"])
	}
	s.PrefixCache(func(r *Request) string { return r.Header.Get("X-Session") })
	_, _, body := post(t, t.Context(), url, first)
	if c, _ := cachedOf(body); c != 0 {
		t.Errorf("first request of a key: cached_tokens = %d; want 0", c)
	}
	_, _, body = post(t, t.Context(), url, second)
	c, p := cachedOf(body)
	serial := len(serialPrompt(s.Requests()[1].JSON))
	if c < 1000/4 || c >= p || func() bool { rc, rp := s.Requests()[2].CacheTokens(); return rc != c || rp != p }() {
		t.Errorf("a grown conversation: cached_tokens = %d of %d (first prompt %d bytes); want the whole first prompt but the last line cached", c, p, serial)
	}
	_, _, body = post(t, t.Context(), url, changed)
	if c, _ := cachedOf(body); c > 10 {
		t.Errorf("a changed system message: cached_tokens = %d; want only the model's few bytes", c)
	}
	_, _, body = post(t, t.Context(), url, changed)
	if c, p := cachedOf(body); c != p-1 && c != p {
		t.Errorf("the same request again: cached_tokens = %d of %d; want all of it", c, p)
	}
	// Another key starts cold.
	s.PrefixCache(func(r *Request) string { return "other" })
	_, _, body = post(t, t.Context(), url, changed)
	if c, _ := cachedOf(body); c != 0 {
		t.Errorf("another key: cached_tokens = %d; want 0", c)
	}
}
