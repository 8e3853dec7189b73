package lane

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"choir/agent/arbiter"
	"choir/agent/memory"
	"choir/agent/tool"
	"choir/internal/rpc"
)

// The lanes' own tools.
const (
	SpawnTool   = "choir.core.spawn"
	InjectTool  = "choir.core.inject"
	CancelTool  = "choir.core.cancel"
	ListTool    = "choir.core.list"
	FinishTool  = "choir.core.finish"
	ReportTool  = "choir.core.report"
	CompactTool = "choir.memory.compact"
	QueryTool   = rpc.HostToolMemoryQuery
	UpsertTool  = rpc.HostToolMemoryUpsert
)

// Tools returns the lanes' own tools, for tool.Load's built-ins: the edge's
// choir.core.spawn, inject, cancel and list; the core jobs' choir.core.finish
// and report; and choir.memory.compact, choir.memory.query and
// choir.memory.upsert for both. They take no locks and act on the lane that
// proposes them (the arbiter runs them with the proposal's context, which
// names it). host, when set, answers choir.memory.query for the stores
// other than "working" (choird's session and knowledge stores) and runs
// choir.memory.upsert (the agent's own knowledge), both through
// EXECUTE_HOST_TOOL; nil answers them not_available.
func Tools(host tool.HostFunc) []tool.Tool {
	obj := func(s string) json.RawMessage { return json.RawMessage(s) }
	return []tool.Tool{
		&laneTool{
			llm: tool.LLMTool{Name: SpawnTool, Parameters: obj(spawnParams),
				Description: "Start a core job: a stronger model that carries out a task in the background while you keep talking with the user. It sees only what you write here."},
			rt: runtimeOf(tool.ExposeEdge, tool.SideEffectWrite, 10*time.Second), run: runSpawn,
		},
		&laneTool{
			llm: tool.LLMTool{Name: InjectTool, Description: "Give a running core job new instructions; it reads them at its next step.",
				Parameters: obj(`{"type":"object","additionalProperties":false,"required":["job_name","content"],"properties":{` +
					`"job_name":{"type":"string","minLength":1},"job_id":{"type":"string","description":"the job's id, to make sure it is the same job"},` +
					`"content":{"type":"string","minLength":1,"description":"the instructions, written for the job"}}}`)},
			rt: runtimeOf(tool.ExposeEdge, tool.SideEffectWrite, 5*time.Second), run: runInject,
		},
		&laneTool{
			llm: tool.LLMTool{Name: CancelTool, Description: "Stop a running core job; the user gets its report.",
				Parameters: obj(`{"type":"object","additionalProperties":false,"required":["job_name"],"properties":{"job_name":{"type":"string","minLength":1},"job_id":{"type":"string"}}}`)},
			rt: runtimeOf(tool.ExposeEdge, tool.SideEffectWrite, time.Minute), run: runCancel,
		},
		&laneTool{
			llm: tool.LLMTool{Name: ListTool, Description: "List the core jobs: running ones with their state, step and budgets, and the last ones that ended.",
				Parameters: obj(`{"type":"object","additionalProperties":false,"properties":{}}`)},
			rt: runtimeOf(tool.ExposeEdge, tool.SideEffectRead, 5*time.Second), run: runList,
		},
		&laneTool{
			llm: tool.LLMTool{Name: FinishTool, Description: "Finish this core job with its result: a summary the user will read, and the result itself (matching the job's output_schema when it has one).",
				Parameters: obj(`{"type":"object","additionalProperties":false,"required":["summary"],"properties":{` +
					`"summary":{"type":"string","minLength":1,"description":"what was done and found, for the user"},"result":{"description":"the structured deliverable"}}}`)},
			rt: runtimeOf(tool.ExposeCore, tool.SideEffectRead, 5*time.Second), run: runFinish,
		},
		&laneTool{
			llm: tool.LLMTool{Name: ReportTool, Description: "Tell the edge lane about this job: progress, your plan, a short summary of your reasoning, a partial result, or information you need (need_info).",
				Parameters: obj(`{"type":"object","additionalProperties":false,"required":["type","text"],"properties":{` +
					`"type":{"type":"string","enum":["progress","plan","thought_summary","need_info","partial_result"]},` +
					`"text":{"type":"string","minLength":1},"data":{"description":"structured detail: the plan's steps, the partial result"}}}`)},
			rt: runtimeOf(tool.ExposeCore, tool.SideEffectRead, 5*time.Second), run: runReport,
		},
		&laneTool{
			llm: tool.LLMTool{Name: CompactTool, Description: "Fold the older events of your context into your reference summary now, to make room. It runs in the background.",
				Parameters: obj(`{"type":"object","additionalProperties":false,"properties":{}}`)},
			rt: runtimeOf(tool.ExposeBoth, tool.SideEffectRead, 5*time.Second), run: runCompact,
		},
		&laneTool{
			llm: tool.LLMTool{Name: QueryTool, Description: queryDescription, Parameters: obj(queryParams)},
			rt:  runtimeOf(tool.ExposeBoth, tool.SideEffectRead, 30*time.Second), run: queryRunner(host),
		},
		&laneTool{
			llm: tool.LLMTool{Name: UpsertTool, Description: upsertDescription, Parameters: obj(upsertParams)},
			rt:  runtimeOf(tool.ExposeBoth, tool.SideEffectWrite, 30*time.Second), run: upsertRunner(host),
		},
	}
}

func runtimeOf(exp tool.Exposure, se tool.SideEffect, timeout time.Duration) tool.Runtime {
	return tool.Runtime{Timeout: timeout, SideEffect: se, Exposure: exp, Version: "1"}
}

// laneTool is one of the lanes' tools: it finds the proposing lane in the
// call's context.
type laneTool struct {
	llm tool.LLMTool
	rt  tool.Runtime
	run func(ctx context.Context, a *actor, input json.RawMessage, env tool.Env) (tool.Result, error)
}

var _ tool.Tool = (*laneTool)(nil)

func (t *laneTool) Name() string                                  { return t.llm.Name }
func (t *laneTool) LLM() tool.LLMTool                             { return t.llm }
func (t *laneTool) Runtime() tool.Runtime                         { return t.rt }
func (t *laneTool) Locks(json.RawMessage) ([]tool.LockReq, error) { return nil, nil }

func (t *laneTool) Execute(ctx context.Context, input json.RawMessage, env tool.Env) (tool.Result, error) {
	a, ok := ctx.Value(callerKey{}).(*actor)
	if !ok {
		return tool.Result{}, tool.Errorf(tool.CodeInternal, "%s runs only inside a lane", t.llm.Name)
	}
	return t.run(ctx, a, input, env)
}

func edgeOnly(a *actor, name string) error {
	if a.job != nil {
		return tool.Errorf(tool.CodeUnknownTool, "no tool called %q is offered to you", name)
	}
	return nil
}

func coreOnly(a *actor, name string) error {
	if a.job == nil {
		return tool.Errorf(tool.CodeUnknownTool, "no tool called %q is offered to you", name)
	}
	return nil
}

func runSpawn(_ context.Context, a *actor, input json.RawMessage, _ tool.Env) (tool.Result, error) {
	if err := edgeOnly(a, SpawnTool); err != nil {
		return tool.Result{}, err
	}
	j, err := a.l.spawn(input)
	if err != nil {
		return tool.Result{}, err
	}
	a.l.mu.Lock()
	a.l.turnCores = append(a.l.turnCores, j.name)
	a.l.mu.Unlock()
	return tool.Success(fmt.Sprintf("core job %s started; the user will get its report when it ends", j.name),
		map[string]any{"job_name": j.name, "job_id": j.id}), nil
}

type jobRef struct {
	JobName string `json:"job_name"`
	JobID   string `json:"job_id"`
	Content string `json:"content"`
}

func runInject(_ context.Context, a *actor, input json.RawMessage, _ tool.Env) (tool.Result, error) {
	if err := edgeOnly(a, InjectTool); err != nil {
		return tool.Result{}, err
	}
	var in jobRef
	json.Unmarshal(input, &in)
	j, err := a.l.injectJob(in.JobName, in.JobID, in.Content)
	if err != nil {
		return tool.Result{}, err
	}
	j.mu.Lock()
	left := j.lim.injections - j.injections
	j.mu.Unlock()
	return tool.Success(fmt.Sprintf("instructions queued for core job %s; it reads them at its next step", j.name),
		map[string]any{"job_name": j.name, "job_id": j.id, "injections_left": left}), nil
}

func runCancel(ctx context.Context, a *actor, input json.RawMessage, _ tool.Env) (tool.Result, error) {
	if err := edgeOnly(a, CancelTool); err != nil {
		return tool.Result{}, err
	}
	var in jobRef
	json.Unmarshal(input, &in)
	j, err := a.l.cancelJob(ctx, in.JobName, in.JobID, errCancelled)
	if err != nil {
		if errors.Is(err, ctx.Err()) {
			return tool.Result{}, tool.Errorf(tool.CodeTimeout, "core job %s was asked to stop but has not yet", in.JobName)
		}
		return tool.Result{}, err
	}
	return tool.Success(fmt.Sprintf("core job %s stopped; the user gets its report", j.name),
		map[string]any{"job_name": j.name, "job_id": j.id, "state": j.state().String()}), nil
}

func runList(_ context.Context, a *actor, _ json.RawMessage, _ tool.Env) (tool.Result, error) {
	if err := edgeOnly(a, ListTool); err != nil {
		return tool.Result{}, err
	}
	jobs := a.l.Jobs()
	running := 0
	for _, j := range jobs {
		if !j.Ended {
			running++
		}
	}
	return tool.Success(fmt.Sprintf("%d core jobs running, %d listed", running, len(jobs)), map[string]any{"jobs": jobs}), nil
}

func runFinish(_ context.Context, a *actor, input json.RawMessage, _ tool.Env) (tool.Result, error) {
	if err := coreOnly(a, FinishTool); err != nil {
		return tool.Result{}, err
	}
	if err := a.job.finish(input); err != nil {
		return tool.Result{}, err
	}
	return tool.Success("final result accepted; the job completes", nil), nil
}

func runReport(_ context.Context, a *actor, input json.RawMessage, _ tool.Env) (tool.Result, error) {
	if err := coreOnly(a, ReportTool); err != nil {
		return tool.Result{}, err
	}
	var in struct {
		Type string          `json:"type"`
		Text string          `json:"text"`
		Data json.RawMessage `json:"data"`
	}
	json.Unmarshal(input, &in)
	a.job.emit(CoreEvent{Type: in.Type, Text: in.Text, Data: in.Data})
	return tool.Success("reported to the edge lane", map[string]any{"type": in.Type, "text": in.Text}), nil
}

func runCompact(_ context.Context, a *actor, _ json.RawMessage, _ tool.Env) (tool.Result, error) {
	if a.life == nil {
		return tool.Result{}, tool.Errorf(tool.CodeInternal, "the lane is not running")
	}
	select {
	case err := <-a.mem.Compact(a.life):
		switch {
		case errors.Is(err, memory.ErrNothingToCompact):
			return tool.Success("nothing to compact: your context is small already", nil), nil
		case err != nil:
			return tool.Result{}, tool.Errorf(CodeCompactionFailed, "%v", err)
		}
		return tool.Success("compacted", nil), nil
	default:
	}
	return tool.Success("compaction started: older events are being folded into your reference summary in the background", nil), nil
}

// callRev is the revision of the reply that made a call, from the
// invocation id the lanes give it (<owner>/<rev>/<index>); 0 if none.
func callRev(id string) int64 {
	parts := strings.Split(id, "/")
	if len(parts) < 3 {
		return 0
	}
	n, _ := strconv.ParseInt(parts[len(parts)-2], 10, 64)
	return n
}

func queryRunner(host tool.HostFunc) func(context.Context, *actor, json.RawMessage, tool.Env) (tool.Result, error) {
	return func(ctx context.Context, a *actor, input json.RawMessage, env tool.Env) (tool.Result, error) {
		var in struct {
			Store string `json:"store"`
			Mode  string `json:"mode"`
			Query string `json:"query"`
			Limit int    `json:"limit"`
		}
		json.Unmarshal(input, &in)
		if in.Store != "working" {
			// choird checks the input strictly (unknown members, bounds)
			// and answers the tool result, provenance on every hit.
			if host == nil {
				return tool.Result{}, tool.Errorf(CodeNotAvailable, "the %s store is not available yet; store \"working\" (this session's events) is", in.Store)
			}
			out, err := host(ctx, QueryTool, env.CallID, input)
			if err != nil {
				return tool.Result{}, tool.Errorf(tool.CodeHost, "choird could not run %s: %v", QueryTool, err)
			}
			return tool.ParseResult(out)
		}
		// The log up to the reply that asked, without the tool events that
		// repeat the replies' calls. A core job never sees the user's
		// words: only what core jobs did.
		before := callRev(env.CallID)
		visible := func(e rpc.Event) bool {
			return (before == 0 || e.Rev < before) && e.Type != arbiter.ToolCallRequested && e.Type != arbiter.ToolCallCommitted &&
				(a.job == nil || e.Lane == arbiter.LaneCore)
		}
		hits, err := memory.Search(a.l.cfg.Arbiter.Events(0), memory.Query{Mode: in.Mode, Text: in.Query, Limit: in.Limit}, visible)
		if err != nil {
			return tool.Result{}, tool.Errorf(tool.CodeInvalidInput, "%v", err)
		}
		if hits == nil {
			hits = []memory.Hit{}
		}
		return tool.Success(fmt.Sprintf("%d events found", len(hits)), map[string]any{"hits": hits}), nil
	}
}

// The memory tools' schemas. choird checks the session and knowledge
// stores' inputs again, strictly (choird/memory/tools.go).
const (
	queryDescription = "Search memory. store \"working\": this session's events, by keywords (mode keyword) or by an event id (mode hash). " +
		"store \"session\": what earlier sessions did and said (modes semantic, text, hybrid; session_detail with a session_id reads one session's events in order). " +
		"store \"knowledge\": facts saved with " + UpsertTool + " (semantic, text, hybrid). hybrid, the default there, fuses meaning and words. " +
		"target_agent reads another agent's memory. Every hit names its agent, session, event revisions and content hash: cite them."
	queryParams = `{"type":"object","additionalProperties":false,"required":["store"],"properties":{` +
		`"store":{"type":"string","enum":["working","session","knowledge"]},` +
		`"mode":{"type":"string","enum":["keyword","hash","semantic","text","hybrid","session_detail"]},` +
		`"query":{"type":"string","minLength":1,"maxLength":4096},` +
		`"limit":{"type":"integer","minimum":1,"maximum":50,"description":"at most 20 for the session and knowledge stores"},` +
		`"session_id":{"type":"string","description":"session_detail: the session to read, from a hit's session_id"},` +
		`"target_agent":{"type":"string","description":"the agent whose session or knowledge memory to read; default yourself"}}}`
	upsertDescription = "Save, replace or delete a fact in your own knowledge store, which outlives this session (find it later with " + QueryTool + " store knowledge). " +
		"op insert stores text (with a key, it replaces the document with that key); op update replaces the text of the document with key; op delete removes the document by key or id. " +
		"You can write only your own knowledge."
	upsertParams = `{"type":"object","additionalProperties":false,"required":["op"],"properties":{` +
		`"op":{"type":"string","enum":["insert","update","delete"]},` +
		`"key":{"type":"string","minLength":1,"maxLength":512,"description":"a stable name for the fact, e.g. user.timezone"},` +
		`"id":{"type":"string","description":"delete: the document_id of a hit"},` +
		`"text":{"type":"string","minLength":1,"maxLength":16384,"description":"the fact, written to be understood alone later"},` +
		`"metadata":{"type":"object","description":"tags, e.g. {\"topic\":\"travel\"}"}}}`
)

func upsertRunner(host tool.HostFunc) func(context.Context, *actor, json.RawMessage, tool.Env) (tool.Result, error) {
	return func(ctx context.Context, _ *actor, input json.RawMessage, env tool.Env) (tool.Result, error) {
		if host == nil {
			return tool.Result{}, tool.Errorf(CodeNotAvailable, "the knowledge store is not available in this agent (no choird connection)")
		}
		out, err := host(ctx, UpsertTool, env.CallID, input)
		if err != nil {
			return tool.Result{}, tool.Errorf(tool.CodeHost, "choird could not run %s: %v", UpsertTool, err)
		}
		return tool.ParseResult(out)
	}
}
