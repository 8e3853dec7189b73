package config

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// A model's fallback list and request template are validated at load, each
// problem at its JSON path.
func TestModelFallbackAndTemplateProblems(t *testing.T) {
	example, secrets := readExample(t)
	secrets["crlf-key"] = "sk-1234\r\nX-Evil: 1"
	tpl := func(m map[string]any, model string, request any) { obj(m, "models", model)["request"] = request }
	tests := []struct {
		name     string
		mutate   func(m map[string]any)
		path     string
		contains string
	}{
		{"fallback unknown", func(m map[string]any) { obj(m, "models", "sonnet")["fallback"] = []any{"gpt5"} }, "models.sonnet.fallback[0]", `no model named "gpt5" (have: gpt4o, o3, sonnet)`},
		{"fallback itself", func(m map[string]any) { obj(m, "models", "sonnet")["fallback"] = []any{"sonnet"} }, "models.sonnet.fallback[0]", "its own fallback"},
		{"fallback twice", func(m map[string]any) { obj(m, "models", "sonnet")["fallback"] = []any{"o3", "o3"} }, "models.sonnet.fallback[1]", "named twice"},
		{"fallback too many", func(m map[string]any) {
			obj(m, "models", "sonnet")["fallback"] = []any{"o3", "gpt4o", "a", "b", "c"}
		}, "models.sonnet.fallback", "at most 4"},
		{"fallback not a list", func(m map[string]any) { obj(m, "models", "sonnet")["fallback"] = "o3" }, "models.sonnet.fallback", "want an array, got a string"},
		{"body sets model", func(m map[string]any) { tpl(m, "sonnet", map[string]any{"body": map[string]any{"model": "x"}}) }, "models.sonnet.request.body.model", `cannot set "model"`},
		{"body sets messages", func(m map[string]any) { tpl(m, "sonnet", map[string]any{"body": map[string]any{"messages": []any{}}}) }, "models.sonnet.request.body.messages", `cannot set "messages"`},
		{"body sets tools", func(m map[string]any) { tpl(m, "sonnet", map[string]any{"body": map[string]any{"tools": nil}}) }, "models.sonnet.request.body.tools", `cannot set "tools"`},
		{"body streams", func(m map[string]any) { tpl(m, "sonnet", map[string]any{"body": map[string]any{"stream": true}}) }, "models.sonnet.request.body.stream", "never a stream"},
		{"body sets temperature", func(m map[string]any) { tpl(m, "sonnet", map[string]any{"body": map[string]any{"temperature": 1}}) }, "models.sonnet.request.body.temperature", "set models.<name>.temperature instead"},
		{"body not an object", func(m map[string]any) { tpl(m, "sonnet", map[string]any{"body": []any{1}}) }, "models.sonnet.request.body", "want an object"},
		{"request unknown member", func(m map[string]any) { tpl(m, "sonnet", map[string]any{"header": map[string]any{}}) }, "models.sonnet.request.header", `did you mean "headers"`},
		{"header owned by the client", func(m map[string]any) {
			tpl(m, "sonnet", map[string]any{"headers": map[string]any{"content-type": "text/plain"}})
		}, "models.sonnet.request.headers.content-type", "the client sets Content-Type itself"},
		{"authorization with a model secret", func(m map[string]any) {
			tpl(m, "sonnet", map[string]any{"headers": map[string]any{"Authorization": "Bearer x"}})
		}, "models.sonnet.request.headers.Authorization", "remove the header or the secret"},
		{"header name with a space", func(m map[string]any) { tpl(m, "sonnet", map[string]any{"headers": map[string]any{"X Title": "a"}}) }, "models.sonnet.request.headers.X Title", "not a valid HTTP header name"},
		{"header value with a line break", func(m map[string]any) {
			tpl(m, "sonnet", map[string]any{"headers": map[string]any{"X-Title": "a\r\nX-Evil: 1"}})
		}, "models.sonnet.request.headers.X-Title", "line break"},
		{"header given twice", func(m map[string]any) {
			tpl(m, "sonnet", map[string]any{"headers": map[string]any{"X-Title": "a", "x-title": "b"}})
		}, "models.sonnet.request.headers.x-title", "also given as"},
		{"header a number", func(m map[string]any) { tpl(m, "sonnet", map[string]any{"headers": map[string]any{"X-N": 3}}) }, "models.sonnet.request.headers.X-N", `want a string or {"secret"`},
		{"header secret unknown", func(m map[string]any) {
			tpl(m, "sonnet", map[string]any{"headers": map[string]any{"X-Key": map[string]any{"secret": "nope"}}})
		}, "models.sonnet.request.headers.X-Key.secret", "choirctl secret set nope"},
		{"header secret object misspelt", func(m map[string]any) {
			tpl(m, "sonnet", map[string]any{"headers": map[string]any{"X-Key": map[string]any{"secrte": "brave-api-key"}}})
		}, "models.sonnet.request.headers.X-Key.secrte", `did you mean "secret"`},
		{"header format without %s", func(m map[string]any) {
			tpl(m, "sonnet", map[string]any{"headers": map[string]any{"X-Key": map[string]any{"secret": "brave-api-key", "format": "Bearer"}}})
		}, "models.sonnet.request.headers.X-Key.format", "exactly one %s"},
		{"header format with another verb", func(m map[string]any) {
			tpl(m, "sonnet", map[string]any{"headers": map[string]any{"X-Key": map[string]any{"secret": "brave-api-key", "format": "%s %d"}}})
		}, "models.sonnet.request.headers.X-Key.format", "no other %"},
		{"header secret with a line break", func(m map[string]any) {
			tpl(m, "sonnet", map[string]any{"headers": map[string]any{"X-Key": map[string]any{"secret": "crlf-key"}}})
		}, "models.sonnet.request.headers.X-Key.secret", "value not shown"},
		{"summary llm unknown", func(m map[string]any) { obj(m, "agents", "agent-1", "defaults")["summary_llm"] = "gpt5" }, "agents.agent-1.defaults.summary_llm", `no model named "gpt5"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse(mutate(t, example, tc.mutate))
			if err == nil {
				err = Validate(c, secrets)
			}
			ps, _ := err.(Problems)
			for _, p := range ps {
				if p.Path == tc.path && strings.Contains(p.Message, tc.contains) {
					if strings.Contains(p.Value+p.Message, "sk-1234") {
						t.Errorf("problem %+v shows a secret's value", p)
					}
					return
				}
			}
			t.Errorf("Parse+Validate = %v; want a problem at %q containing %q", err, tc.path, tc.contains)
		})
	}
}

// A valid template and fallback list load, survive the trip to the agent
// (the dynamic config is JSON) and grant exactly the secrets they name.
func TestModelTemplateAndFallbackLoad(t *testing.T) {
	example, secrets := readExample(t)
	data := mutate(t, example, func(m map[string]any) {
		obj(m, "models", "sonnet")["fallback"] = []any{"gpt4o"}
		obj(m, "models", "gpt4o")["fallback"] = []any{"sonnet"} // one level deep: no cycle
		obj(m, "models", "gpt4o")["request"] = map[string]any{
			"body":    map[string]any{"provider": map[string]any{"order": []any{"openai"}}, "max_tokens": 1024},
			"headers": map[string]any{"X-Title": "choir", "X-Key": map[string]any{"secret": "notion-work-key", "format": "Key %s"}},
		}
		obj(m, "agents", "agent-1", "defaults")["summary_llm"] = "o3"
	})
	c, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	if err := Validate(c, secrets); err != nil {
		t.Fatalf("Validate = %v", err)
	}
	d := c.DynamicFor(2, "sonnet", "", "o3", "", "", "", "")
	raw, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	var back Dynamic
	if err := json.Unmarshal(raw, &back); err != nil {
		t.Fatal(err)
	}
	g := back.Models["gpt4o"]
	if back.SummaryLLM != "o3" || !slices.Equal(back.Models["sonnet"].Fallback, []string{"gpt4o"}) || g.Request == nil {
		t.Fatalf("dynamic config after JSON = summary %q, sonnet fallback %v, gpt4o request %+v", back.SummaryLLM, back.Models["sonnet"].Fallback, g.Request)
	}
	if h := g.Request.Headers["X-Key"]; h.Secret != "notion-work-key" || h.Render("v4lue") != "Key v4lue" {
		t.Errorf("X-Key = %+v rendering %q; want the secret in its format", h, h.Render("v4lue"))
	}
	if h := g.Request.Headers["X-Title"]; h.Render("ignored") != "choir" {
		t.Errorf("X-Title renders %q; want the literal", h.Render("ignored"))
	}
	if string(g.Request.Body["max_tokens"]) != "1024" {
		t.Errorf("body max_tokens = %s", g.Request.Body["max_tokens"])
	}
	for _, v := range secrets {
		if len(v) >= 4 && strings.Contains(string(raw), v) {
			t.Errorf("the dynamic config holds a secret's value")
		}
	}
	// The edge's model falls back to gpt4o, whose template names
	// notion-work-key: granted. Without the fallback, not.
	if got := c.BoundSecrets("sonnet", "", "", "", "", "", ""); !slices.Contains(got, "notion-work-key") {
		t.Errorf("BoundSecrets(sonnet → gpt4o) = %v; want the fallback's header secret", got)
	}
	m := c.Models["sonnet"]
	m.Fallback = nil
	c.Models["sonnet"] = m
	if got := c.BoundSecrets("sonnet", "", "", "", "", "", ""); slices.Contains(got, "notion-work-key") {
		t.Errorf("BoundSecrets(sonnet alone) = %v; want no header secret of another model", got)
	}
	if got := c.BoundSecrets("o3", "", "gpt4o", "", "", "", ""); !slices.Contains(got, "notion-work-key") {
		t.Errorf("BoundSecrets(summary gpt4o) = %v; want the summary model's header secret", got)
	}
}
