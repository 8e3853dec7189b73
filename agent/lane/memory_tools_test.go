package lane

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"choir/internal/openai"
)

// hostRec is a choird that answers the memory host tools: it records what
// it was sent and answers with a scripted tool result per tool name.
type hostRec struct {
	mu     sync.Mutex
	calls  []string // name + " " + input
	answer map[string]string
}

func (h *hostRec) call(_ context.Context, name, _ string, input json.RawMessage) (json.RawMessage, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.calls = append(h.calls, name+" "+string(input))
	return json.RawMessage(h.answer[name]), nil
}

func (h *hostRec) sent() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.calls...)
}

// The model is offered choir.memory.upsert and the extended
// choir.memory.query; the session and knowledge stores and every upsert go
// to choird unchanged, and what choird answers (hits with their provenance,
// or a refusal) reaches the model. Inputs the schemas refuse never leave the
// agent.
func TestMemoryHostToolsForwarded(t *testing.T) {
	h := &hostRec{answer: map[string]string{
		QueryTool:  `{"status":"success","summary":"1 found","hits":[{"agent":"b","store":"knowledge","document_id":"d1","content_hash":"sha256:ab","score":0.5,"text":"Ada likes tea"}]}`,
		UpsertTool: `{"status":"error","summary":"refused","error":{"code":"forbidden","message":"an agent writes only its own knowledge"}}`,
	}}
	e, s := coreEnv(t, envOptions{host: h.call})
	query := `{"store":"knowledge","mode":"hybrid","query":"tea","target_agent":"b","limit":5}`
	detail := `{"store":"session","mode":"session_detail","session_id":"s-1"}`
	upsert := `{"op":"insert","key":"user.drink","text":"Ada likes tea","metadata":{"topic":"food"}}`
	s.on("edge",
		check(func(req openai.ChatRequest) {
			offered := map[string]bool{}
			for _, tl := range req.Tools {
				offered[tl.Name] = true
			}
			for _, n := range []string{QueryTool, UpsertTool} {
				if !offered[openai.WireName(n)] {
					t.Errorf("tool %s not offered to the model", n)
				}
			}
		}, use(QueryTool, query, QueryTool, detail, UpsertTool, upsert,
			UpsertTool, `{"op":"insert","text":"x","target_agent":"b"}`,
			UpsertTool, `{"op":"drop","key":"k"}`,
			QueryTool, `{"store":"knowledge","mode":"vector","query":"x"}`)),
		check(func(req openai.ChatRequest) {
			hits, _ := toolResult(t, req, "choir_memory_query_0")["hits"].([]any)
			if len(hits) != 1 || hits[0].(map[string]any)["content_hash"] != "sha256:ab" || hits[0].(map[string]any)["agent"] != "b" {
				t.Errorf("query result hits = %v; want choird's hit with its provenance", hits)
			}
			if out := toolResult(t, req, "choir_memory_upsert_2"); errCode(out) != "forbidden" {
				t.Errorf("upsert result = %v; want choird's refusal", out)
			}
			for _, id := range []string{"choir_memory_upsert_3", "choir_memory_upsert_4", "choir_memory_query_5"} {
				if out := toolResult(t, req, id); errCode(out) == "" {
					t.Errorf("%s = %v; want a refusal by the schema", id, out)
				}
			}
		}, say("Done.")))
	e.handle("remember that I like tea")
	got := h.sent()
	// The arbiter hands tools their input re-encoded (members sorted).
	canon := func(s string) string {
		var v map[string]any
		json.Unmarshal([]byte(s), &v)
		b, _ := json.Marshal(v)
		return string(b)
	}
	want := []string{QueryTool + " " + canon(query), QueryTool + " " + canon(detail), UpsertTool + " " + canon(upsert)}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("choird was sent\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// Without a choird connection the upsert says it is not available.
func TestMemoryUpsertWithoutHost(t *testing.T) {
	e, s := coreEnv(t, envOptions{})
	s.on("edge", use(UpsertTool, `{"op":"insert","text":"x"}`),
		check(func(req openai.ChatRequest) {
			if out := toolResult(t, req, "choir_memory_upsert_0"); errCode(out) != CodeNotAvailable {
				t.Errorf("upsert without choird = %v; want %s", out, CodeNotAvailable)
			}
		}, say("ok")))
	e.handle("save x")
}
