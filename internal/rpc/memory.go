package rpc

import "encoding/json"

// The memory host tools (spec 11.7). The agent answers choir.memory.query
// for store "working" itself and forwards the session and knowledge stores
// to choird over EXECUTE_HOST_TOOL; choir.memory.upsert always runs in
// choird. choirctl memory sends the same inputs over the admin API and reads
// the same answers.
const (
	HostToolMemoryQuery  = "choir.memory.query"
	HostToolMemoryUpsert = "choir.memory.upsert"
)

// MemoryQuery is the input of choir.memory.query for the stores choird
// keeps.
type MemoryQuery struct {
	Store       string `json:"store"`                  // session or knowledge
	Mode        string `json:"mode,omitempty"`         // semantic, text, hybrid (the default), session_detail
	Query       string `json:"query,omitempty"`        // the text asked about
	Limit       int    `json:"limit,omitempty"`        // 1 to 20; 0 means 10
	SessionID   string `json:"session_id,omitempty"`   // session_detail only
	TargetAgent string `json:"target_agent,omitempty"` // whose memory; empty means the caller's
}

// MemoryUpsert is the input of choir.memory.upsert: a write to the caller's
// own knowledge store, never another agent's.
type MemoryUpsert struct {
	Op       string          `json:"op"`                 // insert, update or delete
	Key      string          `json:"key,omitempty"`      // insert (optional), update, delete
	ID       string          `json:"id,omitempty"`       // delete only
	Text     string          `json:"text,omitempty"`     // insert and update
	Metadata json.RawMessage `json:"metadata,omitempty"` // a JSON object of tags
}

// MemoryHit is one result with its provenance: whose memory, which store
// and tier, the session and its event revisions it was cut from, the
// document's id and the SHA-256 of its text, so a reply can cite it.
type MemoryHit struct {
	Agent       string          `json:"agent"`
	Store       string          `json:"store"`
	DocumentID  string          `json:"document_id"`
	Tier        string          `json:"tier,omitempty"`
	SessionID   string          `json:"session_id,omitempty"`
	ChunkIndex  int             `json:"chunk_index,omitempty"`
	Kind        string          `json:"kind,omitempty"`
	Revisions   []int64         `json:"revisions,omitempty"`
	Key         string          `json:"key,omitempty"`
	ContentHash string          `json:"content_hash"`
	Score       float64         `json:"score"`
	Text        string          `json:"text"`
	Metadata    json.RawMessage `json:"metadata,omitempty"`
	// The knowledge list's own members.
	HasVector bool   `json:"has_vector,omitempty"`
	UpdatedAt string `json:"updated_at,omitempty"`
}

// MemoryAnswer is the tool result both memory tools answer with (status,
// summary and the members below).
type MemoryAnswer struct {
	Status  string `json:"status"`
	Summary string `json:"summary"`
	Agent   string `json:"agent"`
	Store   string `json:"store,omitempty"`
	Mode    string `json:"mode,omitempty"`
	// Note says what the search did other than asked (the embedder failed
	// and text search answered instead).
	Note string      `json:"note,omitempty"`
	Hits []MemoryHit `json:"hits,omitempty"`
	// An upsert's outcome.
	Op          string `json:"op,omitempty"`
	DocumentID  string `json:"document_id,omitempty"`
	Key         string `json:"key,omitempty"`
	Created     bool   `json:"created,omitempty"`
	ContentHash string `json:"content_hash,omitempty"`
}
