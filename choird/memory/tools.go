package memory

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"choir/choird/store"
	"choir/internal/embed"
	"choir/internal/rpc"
)

// The memory tools (spec 11.7) as choird runs them: choir.memory.query for
// the session and knowledge stores and choir.memory.upsert for the caller's
// own knowledge. The agent's EXECUTE_HOST_TOOL calls and the operator's
// `choirctl memory` both come here, so the two cannot differ.

// Bounds of the tools' inputs, tighter than the store's own.
const (
	MaxToolInput      = 40 << 10 // a whole input object
	MaxKnowledgeText  = 16 << 10 // an upserted document's text
	MaxToolMetadata   = 4 << 10  // its metadata, as JSON
	MaxToolQuery      = store.MaxQueryBytes
	MaxToolLimit      = 20
	DefaultToolLimit  = 10
	MaxListLimit      = store.MaxSearchLimit
	queryEmbedTimeout = 20 * time.Second
)

// Error codes the tools answer with (the tool result's error.code).
const (
	CodeInvalidInput = "invalid_input"
	CodeForbidden    = "forbidden"
	CodeNotFound     = "not_found"
	CodeUnavailable  = "unavailable"
	CodeFailed       = "memory_failed"
)

// Error is a refusal or failure of a memory tool: a code for the tool
// result (and the admin API's status) and a message saying what was wrong
// and what to do.
type Error struct {
	Code    string
	Message string
}

func (e *Error) Error() string { return e.Message }

// ToolCode is the tool result's error code.
func (e *Error) ToolCode() string { return e.Code }

func errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Store is what the memory tools need of Postgres (choird/store.Store).
type Store interface {
	SearchMemory(ctx context.Context, req store.SearchReq) ([]store.Hit, error)
	UpsertKnowledge(ctx context.Context, agentID string, doc store.KnowledgeDoc) (id string, inserted bool, err error)
	DeleteKnowledge(ctx context.Context, agentID string, ref store.KnowledgeRef) error
	ListKnowledge(ctx context.Context, caller, target string, limit int) ([]store.KnowledgeDoc, error)
}

// Indexer computes a knowledge document's vector later, off the tool's
// path (the embedding queue); the document is found by text search
// meanwhile.
type Indexer interface {
	EnqueueKnowledge(agentID, docID, text string)
}

// Tools runs the memory tools.
type Tools struct {
	Store Store
	// Embedder embeds the query of a semantic or hybrid search; nil (or a
	// failing one) makes those searches text searches, with a note.
	Embedder embed.Embedder
	// Index queues upserted documents for their vectors; nil leaves them
	// to text search.
	Index Indexer
}

// HostTools returns the handlers of EXECUTE_HOST_TOOL, by tool name.
func (t *Tools) HostTools() map[string]func(ctx context.Context, agentID, sessionID string, input json.RawMessage) (json.RawMessage, error) {
	return map[string]func(ctx context.Context, agentID, sessionID string, input json.RawMessage) (json.RawMessage, error){
		rpc.HostToolMemoryQuery:  t.Query,
		rpc.HostToolMemoryUpsert: t.Upsert,
	}
}

var agentIDRE = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,62}$`)

// decode reads one JSON object strictly into v: unknown members, a second
// value or more than MaxToolInput bytes are refused.
func decode(tool string, input json.RawMessage, v any) error {
	if len(input) > MaxToolInput {
		return errorf(CodeInvalidInput, "%s: input of %d bytes; at most %d", tool, len(input), MaxToolInput)
	}
	if err := rpc.DecodeStrict(input, v); err != nil {
		return errorf(CodeInvalidInput, "%s: %v (the tool's schema lists its members)", tool, err)
	}
	return nil
}

// checkString refuses a string Postgres cannot hold or that passes max.
func checkString(tool, path, s string, max int) error {
	if len(s) > max {
		return errorf(CodeInvalidInput, "%s: %s is %d bytes; at most %d", tool, path, len(s), max)
	}
	if !utf8.ValidString(s) {
		return errorf(CodeInvalidInput, "%s: %s is not valid UTF-8", tool, path)
	}
	if i := strings.IndexByte(s, 0); i >= 0 {
		return errorf(CodeInvalidInput, "%s: %s holds a NUL byte at offset %d", tool, path, i)
	}
	return nil
}

// Query runs choir.memory.query for agentID (the caller) in its session.
func (t *Tools) Query(ctx context.Context, agentID, _ string, input json.RawMessage) (json.RawMessage, error) {
	if !agentIDRE.MatchString(agentID) {
		return nil, errorf(CodeForbidden, "%s: no calling agent", rpc.HostToolMemoryQuery)
	}
	var in rpc.MemoryQuery
	if err := decode(rpc.HostToolMemoryQuery, input, &in); err != nil {
		return nil, err
	}
	return t.query(ctx, agentID, in)
}

// OperatorQuery runs a search for the operator (choirctl memory search)
// in agent's memory; the input is choir.memory.query's.
func (t *Tools) OperatorQuery(ctx context.Context, agent string, input json.RawMessage) (json.RawMessage, error) {
	var in rpc.MemoryQuery
	if err := decode(rpc.HostToolMemoryQuery, input, &in); err != nil {
		return nil, err
	}
	if in.TargetAgent != "" && in.TargetAgent != agent {
		return nil, errorf(CodeInvalidInput, "search: /target_agent %q differs from the agent %q named by --agent", in.TargetAgent, agent)
	}
	in.TargetAgent = agent
	return t.query(ctx, "", in)
}

func (t *Tools) query(ctx context.Context, caller string, in rpc.MemoryQuery) (json.RawMessage, error) {
	const tool = rpc.HostToolMemoryQuery
	target := in.TargetAgent
	if target == "" {
		target = caller
	}
	if !agentIDRE.MatchString(target) {
		return nil, errorf(CodeInvalidInput, "%s: /target_agent %q is not an agent id (want [a-z0-9][a-z0-9_-]*)", tool, clipTo(target, 80))
	}
	switch in.Store {
	case store.StoreSession, store.StoreKnowledge:
	case "working":
		return nil, errorf(CodeInvalidInput, "%s: store \"working\" is answered inside the agent, not by choird", tool)
	case "":
		return nil, errorf(CodeInvalidInput, "%s: /store is missing; want session or knowledge", tool)
	default:
		return nil, errorf(CodeInvalidInput, "%s: /store %q: want session or knowledge", tool, clipTo(in.Store, 80))
	}
	if in.Mode == "" {
		in.Mode = store.ModeHybrid
		if in.SessionID != "" {
			in.Mode = store.ModeSessionDetail
		}
	}
	switch in.Mode {
	case store.ModeSemantic, store.ModeText, store.ModeHybrid:
		if strings.TrimSpace(in.Query) == "" {
			return nil, errorf(CodeInvalidInput, "%s: mode %s needs a /query", tool, in.Mode)
		}
		if in.SessionID != "" {
			return nil, errorf(CodeInvalidInput, "%s: /session_id is for mode session_detail only", tool)
		}
	case store.ModeSessionDetail:
		if in.Store != store.StoreSession {
			return nil, errorf(CodeInvalidInput, "%s: mode session_detail reads store session, not %s", tool, in.Store)
		}
		if in.SessionID == "" {
			return nil, errorf(CodeInvalidInput, "%s: mode session_detail needs a /session_id (a session id from a hit's provenance)", tool)
		}
	default:
		return nil, errorf(CodeInvalidInput, "%s: /mode %q: want semantic, text, hybrid or session_detail", tool, clipTo(in.Mode, 80))
	}
	if err := checkString(tool, "/query", in.Query, MaxToolQuery); err != nil {
		return nil, err
	}
	if err := checkString(tool, "/session_id", in.SessionID, store.MaxSessionIDLen); err != nil {
		return nil, err
	}
	switch {
	case in.Limit == 0:
		in.Limit = DefaultToolLimit
	case in.Limit < 1 || in.Limit > MaxToolLimit:
		return nil, errorf(CodeInvalidInput, "%s: /limit %d: want 1 to %d", tool, in.Limit, MaxToolLimit)
	}
	req := store.SearchReq{Caller: caller, Agent: target, Store: in.Store, Mode: in.Mode, Query: in.Query, SessionID: in.SessionID, Limit: in.Limit}
	var note string
	if in.Mode == store.ModeSemantic || in.Mode == store.ModeHybrid {
		vec, why := t.embedQuery(ctx, in.Query)
		switch {
		case vec != nil:
			req.Vector = vec
		case in.Mode == store.ModeSemantic:
			req.Mode = store.ModeText
			note = "semantic search unavailable (" + why + "); answered by text search"
		default:
			note = "the vector half of hybrid search is unavailable (" + why + "); answered by text search alone"
		}
	}
	if t.Store == nil {
		return nil, errorf(CodeUnavailable, "%s: memory needs Postgres, which this choird has not", tool)
	}
	hits, err := t.Store.SearchMemory(ctx, req)
	if err != nil {
		return nil, storeError(err)
	}
	ans := rpc.MemoryAnswer{Status: "success", Agent: target, Store: in.Store, Mode: req.Mode, Note: note, Hits: make([]rpc.MemoryHit, 0, len(hits))}
	for _, h := range hits {
		ans.Hits = append(ans.Hits, rpc.MemoryHit{Agent: h.Agent, Store: h.Store, DocumentID: h.DocumentID, Tier: h.Tier, SessionID: h.SessionID,
			ChunkIndex: h.ChunkIndex, Kind: h.Kind, Revisions: h.Revisions, Key: h.Key, ContentHash: h.ContentHash,
			Score: h.Score, Text: h.Text, Metadata: h.Metadata})
	}
	whose := "your"
	if target != caller {
		whose = fmt.Sprintf("agent %s's", target)
	}
	ans.Summary = fmt.Sprintf("%d found in %s %s memory (%s)", len(hits), whose, in.Store, req.Mode)
	if note != "" {
		ans.Summary += "; " + note
	}
	return json.Marshal(ans)
}

// embedQuery is the query's vector, or nil and why not.
func (t *Tools) embedQuery(ctx context.Context, q string) ([]float32, string) {
	if t.Embedder == nil {
		return nil, "no embedder configured"
	}
	ctx, cancel := context.WithTimeout(ctx, queryEmbedTimeout)
	defer cancel()
	vecs, err := t.Embedder.Embed(ctx, []string{q})
	if err == nil {
		err = embed.CheckVectors(vecs, 1, t.Embedder.Dimensions())
	}
	if err != nil {
		return nil, "the embedder failed: " + clipTo(err.Error(), 200)
	}
	return vecs[0], ""
}

// ownerFields are members naming an agent: an upsert writes only the
// caller's own knowledge (spec 11.2), so any of them is refused by name
// rather than as an unknown member.
var ownerFields = []string{"target_agent", "agent", "agent_id", "owner", "schema"}

// Upsert runs choir.memory.upsert for agentID: a write to agentID's own
// knowledge store, under its own role.
func (t *Tools) Upsert(ctx context.Context, agentID, _ string, input json.RawMessage) (json.RawMessage, error) {
	const tool = rpc.HostToolMemoryUpsert
	if !agentIDRE.MatchString(agentID) {
		return nil, errorf(CodeForbidden, "%s: no calling agent", tool)
	}
	var members map[string]json.RawMessage
	if len(input) <= MaxToolInput && json.Unmarshal(input, &members) == nil {
		for _, f := range ownerFields {
			if _, ok := members[f]; ok {
				return nil, errorf(CodeForbidden, "%s: /%s: an agent writes only its own knowledge (spec 11.2); remove %s (reading another agent's memory is choir.memory.query's target_agent)", tool, f, f)
			}
		}
	}
	var in rpc.MemoryUpsert
	if err := decode(tool, input, &in); err != nil {
		return nil, err
	}
	if err := checkString(tool, "/key", in.Key, store.MaxKeyLen); err != nil {
		return nil, err
	}
	if err := checkString(tool, "/text", in.Text, MaxKnowledgeText); err != nil {
		return nil, err
	}
	if len(in.Metadata) > MaxToolMetadata {
		return nil, errorf(CodeInvalidInput, "%s: /metadata is %d bytes; at most %d", tool, len(in.Metadata), MaxToolMetadata)
	}
	if len(in.Metadata) > 0 && (in.Metadata[0] != '{' || json.Unmarshal(in.Metadata, new(map[string]any)) != nil) {
		return nil, errorf(CodeInvalidInput, "%s: /metadata: want a JSON object of tags", tool)
	}
	ans := rpc.MemoryAnswer{Status: "success", Agent: agentID, Store: store.StoreKnowledge, Op: in.Op, Key: in.Key}
	noStore := errorf(CodeUnavailable, "%s: memory needs Postgres, which this choird has not", tool)
	switch in.Op {
	case "insert", "update":
		if in.ID != "" {
			return nil, errorf(CodeInvalidInput, "%s: op %s takes no /id: a document is updated by its /key (delete one without a key by id and insert it again)", tool, in.Op)
		}
		if in.Op == "update" && in.Key == "" {
			return nil, errorf(CodeInvalidInput, "%s: op update needs the /key of the document to replace", tool)
		}
		if strings.TrimSpace(in.Text) == "" {
			return nil, errorf(CodeInvalidInput, "%s: op %s needs a non-empty /text", tool, in.Op)
		}
		if t.Store == nil {
			return nil, noStore
		}
		id, created, err := t.Store.UpsertKnowledge(ctx, agentID, store.KnowledgeDoc{Key: in.Key, Text: in.Text, Metadata: in.Metadata})
		if err != nil {
			return nil, storeError(err)
		}
		if t.Index != nil {
			t.Index.EnqueueKnowledge(agentID, id, in.Text)
		}
		ans.DocumentID, ans.Created, ans.ContentHash = id, created, store.ContentHash(in.Text)
		switch {
		case created && in.Key != "":
			ans.Summary = fmt.Sprintf("stored a new knowledge document with key %q (id %s)", in.Key, id)
		case created:
			ans.Summary = fmt.Sprintf("stored a new knowledge document (id %s)", id)
		default:
			ans.Summary = fmt.Sprintf("replaced the text of the knowledge document with key %q (id %s)", in.Key, id)
		}
	case "delete":
		if in.Text != "" || len(in.Metadata) > 0 {
			return nil, errorf(CodeInvalidInput, "%s: op delete takes only /key or /id", tool)
		}
		if (in.Key == "") == (in.ID == "") {
			return nil, errorf(CodeInvalidInput, "%s: op delete needs the document's /key or its /id (one of them)", tool)
		}
		if in.ID != "" && !uuidRE.MatchString(in.ID) {
			return nil, errorf(CodeInvalidInput, "%s: /id %q is not a document id (a UUID from a hit's document_id)", tool, clipTo(in.ID, 80))
		}
		if t.Store == nil {
			return nil, noStore
		}
		if err := t.Store.DeleteKnowledge(ctx, agentID, store.KnowledgeRef{ID: in.ID, Key: in.Key}); err != nil {
			return nil, storeError(err)
		}
		ans.DocumentID = in.ID
		ans.Summary = "deleted the knowledge document with " + store.KnowledgeRef{ID: in.ID, Key: in.Key}.String()
	case "":
		return nil, errorf(CodeInvalidInput, "%s: /op is missing; want insert, update or delete", tool)
	default:
		return nil, errorf(CodeInvalidInput, "%s: /op %q: want insert, update or delete", tool, clipTo(in.Op, 80))
	}
	return json.Marshal(ans)
}

var uuidRE = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

// List answers the operator's `choirctl memory list`: the agent's newest
// knowledge documents, limit of them (0 means DefaultToolLimit).
func (t *Tools) List(ctx context.Context, agent string, limit int) (json.RawMessage, error) {
	if !agentIDRE.MatchString(agent) {
		return nil, errorf(CodeInvalidInput, "list: agent %q is not an agent id (want [a-z0-9][a-z0-9_-]*)", clipTo(agent, 80))
	}
	if limit == 0 {
		limit = DefaultToolLimit
	}
	if limit < 1 || limit > MaxListLimit {
		return nil, errorf(CodeInvalidInput, "list: limit %d: want 1 to %d", limit, MaxListLimit)
	}
	if t.Store == nil {
		return nil, errorf(CodeUnavailable, "list: memory needs Postgres, which this choird has not")
	}
	docs, err := t.Store.ListKnowledge(ctx, "", agent, limit)
	if err != nil {
		return nil, storeError(err)
	}
	ans := rpc.MemoryAnswer{Status: "success", Agent: agent, Store: store.StoreKnowledge, Hits: make([]rpc.MemoryHit, 0, len(docs))}
	for _, d := range docs {
		ans.Hits = append(ans.Hits, rpc.MemoryHit{Agent: agent, Store: store.StoreKnowledge, DocumentID: d.ID, Key: d.Key,
			ContentHash: d.ContentHash, Text: d.Text, Metadata: d.Metadata, HasVector: d.HasVector, UpdatedAt: d.UpdatedAt.UTC().Format(time.RFC3339)})
	}
	ans.Summary = fmt.Sprintf("%d knowledge documents of agent %s, newest first", len(docs), agent)
	return json.Marshal(ans)
}

// storeError gives a store failure its tool code.
func storeError(err error) error {
	if errors.Is(err, store.ErrNotFound) {
		return &Error{Code: CodeNotFound, Message: err.Error()}
	}
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	if strings.Contains(err.Error(), ": want ") || strings.Contains(err.Error(), "metadata key") {
		// The store's own input checks (a reserved metadata key, a bad id).
		return &Error{Code: CodeInvalidInput, Message: err.Error()}
	}
	return &Error{Code: CodeFailed, Message: err.Error()}
}

func clipTo(s string, n int) string {
	if len(s) > n {
		return strings.ToValidUTF8(s[:n], "") + "…"
	}
	return s
}
