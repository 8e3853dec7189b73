// Package memory is choird's side of the session-derived memory tiers
// (§11.4-11.5, §11.8 steps 6-7): a session's committed events and its
// summary turned into mid-term chunks with their provenance.
package memory

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"choir/internal/rpc"
)

// Chunking. A session's events become chunks by turn: a chunk begins at
// each user message (and at each skill start or core job start, a new
// phase), holds the text of what followed (the model's replies and tool
// calls, tool results cut short, injections, skill moves, core job
// results), and is cut when it would pass MaxChunkBytes. Noise is left out:
// lock commits, requests that a result repeats, memory writes. Each chunk
// keeps where it came from: the session, the first and last revision,
// the lanes, the skill running, and the SHA-256 of its text, so a search
// hit can be cited and checked against the log.

// MaxChunkBytes bounds a chunk's text: about 500 tokens, what embedding
// models and a prompt's citation both take comfortably.
const MaxChunkBytes = 2000

// maxFieldBytes bounds one tool input or output inside a chunk.
const maxFieldBytes = 600

// Kinds of chunk.
const (
	KindEvents  = "events"
	KindSummary = "summary"
)

// Chunk is one mid-term document and its provenance.
type Chunk struct {
	Index int
	Text  string
	Meta  Meta
}

// Meta is a chunk's provenance, stored as the document's metadata.
type Meta struct {
	Kind      string   `json:"kind"`
	SessionID string   `json:"session_id"`
	FromRev   int64    `json:"from_rev,omitempty"`
	ToRev     int64    `json:"to_rev,omitempty"`
	Lanes     []string `json:"lanes,omitempty"`
	Skill     string   `json:"skill,omitempty"`
	Hash      string   `json:"content_hash"` // hex SHA-256 of Text
}

// payload holds the members the chunker reads, of any event type.
type payload struct {
	Text      string          `json:"text"`
	Error     json.RawMessage `json:"error"`
	Job       string          `json:"job"`
	Tool      string          `json:"tool"`
	Input     json.RawMessage `json:"input"`
	Output    json.RawMessage `json:"output"`
	Status    string          `json:"status"`
	Skill     string          `json:"skill"`
	On        string          `json:"on"`
	From      string          `json:"from"`
	To        string          `json:"to"`
	Reason    string          `json:"reason"`
	ToolCalls []struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"tool_calls"`
	Start *struct {
		TaskSpec string `json:"task_spec"`
	} `json:"start"`
	Final *struct {
		Summary string `json:"summary"`
	} `json:"final_result"`
	State string `json:"state"`
}

// Events chunks a session's events, numbering the chunks from first.
func Events(sessionID string, events []rpc.Event, first int) []Chunk {
	c := chunker{session: sessionID, next: first}
	for _, e := range events {
		c.add(e)
	}
	c.cut()
	return c.out
}

type chunker struct {
	session string
	next    int
	out     []Chunk

	b        strings.Builder
	from, to int64
	lanes    []string
	skill    string // the skill running now
	chSkill  string // the skill running when the chunk began
}

func (c *chunker) add(e rpc.Event) {
	var p payload
	if json.Unmarshal(e.Payload, &p) != nil {
		return
	}
	who := "edge"
	if e.Lane == "core" && p.Job != "" {
		who = "core:" + p.Job
	}
	var line string
	switch e.Type {
	case "UserMsg":
		c.cut()
		line = "User: " + p.Text
	case "ModelOutput":
		if p.Error != nil && string(p.Error) != "null" {
			return // a failed call said nothing
		}
		var calls []string
		for _, tc := range p.ToolCalls {
			calls = append(calls, tc.Name+" "+clip(tc.Arguments, maxFieldBytes))
		}
		switch {
		case p.Text != "" && len(calls) > 0:
			line = fmt.Sprintf("Assistant (%s): %s\n[calls %s]", who, p.Text, strings.Join(calls, "; "))
		case p.Text != "":
			line = fmt.Sprintf("Assistant (%s): %s", who, p.Text)
		case len(calls) > 0:
			line = fmt.Sprintf("Assistant (%s) calls %s", who, strings.Join(calls, "; "))
		}
	case "ToolResultCommitted":
		line = fmt.Sprintf("Result of %s (%s): %s", p.Tool, p.Status, clip(string(p.Output), maxFieldBytes))
	case "InjectedInstruction":
		line = fmt.Sprintf("Instruction from %s to %s: %s", p.From, who, p.Text)
	case "SkillTransition":
		if p.On == "start" {
			c.cut()
			c.skill = p.Skill
		}
		line = fmt.Sprintf("Skill %s: %s -> %s on %s (%s)", p.Skill, p.From, p.To, p.On, p.Status)
		if p.Status != "running" {
			defer func() { c.skill = "" }()
		}
	case "CoreStarted":
		c.cut()
		if p.Start != nil {
			line = fmt.Sprintf("Core job %s started: %s", p.Job, p.Start.TaskSpec)
		}
	case "CoreStopped":
		switch {
		case p.Final != nil:
			line = fmt.Sprintf("Core job %s completed: %s", p.Job, p.Final.Summary)
		default:
			line = fmt.Sprintf("Core job %s ended (%s)", p.Job, p.State)
		}
	default:
		return // ToolCallRequested/Committed, MemoryWriteCommitted, Cancelled: noise
	}
	line = strings.TrimSpace(line)
	if line == "" {
		return
	}
	if c.b.Len() > 0 && c.b.Len()+1+len(line) > MaxChunkBytes {
		c.cut()
	}
	for len(line) > MaxChunkBytes { // one long line: its own chunks, cut between words
		head := clipAt(line, MaxChunkBytes)
		if i := strings.LastIndexAny(head, " \n"); i > MaxChunkBytes/2 {
			head = head[:i+1]
		}
		c.write(e, who, head)
		c.cut()
		line = line[len(head):]
	}
	c.write(e, who, line)
}

func (c *chunker) write(e rpc.Event, who, line string) {
	if c.b.Len() == 0 {
		c.from, c.chSkill = e.Rev, c.skill
	} else {
		c.b.WriteByte('\n')
	}
	c.b.WriteString(line)
	c.to = e.Rev
	for _, l := range c.lanes {
		if l == who {
			return
		}
	}
	c.lanes = append(c.lanes, who)
}

// cut closes the chunk being written, if any.
func (c *chunker) cut() {
	if c.b.Len() == 0 {
		return
	}
	text := c.b.String()
	c.out = append(c.out, Chunk{Index: c.next, Text: text, Meta: Meta{Kind: KindEvents, SessionID: c.session,
		FromRev: c.from, ToRev: c.to, Lanes: c.lanes, Skill: c.chSkill, Hash: Hash(text)}})
	c.next++
	c.b.Reset()
	c.lanes = nil
}

// Summary is the session summary of a graceful stop (§11.8: title,
// summary, decisions, open_items, facts) as one chunk, or false when it has
// nothing to say.
func Summary(sessionID string, summary json.RawMessage, index int, throughRev int64) (Chunk, bool) {
	var s struct {
		Title     string   `json:"title"`
		Summary   string   `json:"summary"`
		Decisions []string `json:"decisions"`
		OpenItems []string `json:"open_items"`
		Facts     []string `json:"facts"`
	}
	if json.Unmarshal(summary, &s) != nil {
		return Chunk{}, false
	}
	var b strings.Builder
	if s.Title != "" {
		b.WriteString("Session: " + s.Title + "\n")
	}
	if s.Summary != "" {
		b.WriteString(s.Summary + "\n")
	}
	for _, l := range []struct {
		name  string
		items []string
	}{{"Decisions", s.Decisions}, {"Open items", s.OpenItems}, {"Facts", s.Facts}} {
		if len(l.items) > 0 {
			b.WriteString(l.name + ":\n")
			for _, it := range l.items {
				b.WriteString("- " + it + "\n")
			}
		}
	}
	text := strings.TrimSpace(b.String())
	if text == "" {
		return Chunk{}, false
	}
	return Chunk{Index: index, Text: text, Meta: Meta{Kind: KindSummary, SessionID: sessionID, ToRev: throughRev, Hash: Hash(text)}}, true
}

// Hash is the hex SHA-256 of a chunk's text: its content hash.
func Hash(text string) string {
	sum := sha256.Sum256([]byte(text))
	return hex.EncodeToString(sum[:])
}

// clip keeps the start of s within n bytes, on a rune boundary, marking
// the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return clipAt(s, n) + "…"
}

func clipAt(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
