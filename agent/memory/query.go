package memory

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"choir/internal/rpc"
)

// Query modes of the working store.
const (
	QueryKeyword = "keyword"
	QueryHash    = "hash"
)

// Bounds of a query's answer.
const (
	DefaultLimit    = 10
	MaxLimit        = 50
	maxPayloadBytes = 16 << 10
	excerptBytes    = 240
	minHashPrefix   = 8
)

// Query is a search of the working store: the session's in-memory log
// (choir.memory.query with store "working").
type Query struct {
	// Mode is QueryKeyword (the default: every word of Text, in any case,
	// somewhere in the event) or QueryHash (Text is an event hash or a
	// prefix of at least 8 hex digits).
	Mode  string
	Text  string
	Limit int // default DefaultLimit, at most MaxLimit
}

// Hit is one event a query found. A keyword hit carries an excerpt around
// the first match; a hash hit carries the event's payload (or an excerpt
// when the payload is larger than 16 KiB).
type Hit struct {
	Rev     int64           `json:"rev"`
	Hash    string          `json:"hash"`
	Type    string          `json:"type"`
	Lane    string          `json:"lane,omitempty"`
	Time    string          `json:"time"`
	Excerpt string          `json:"excerpt,omitempty"`
	Payload json.RawMessage `json:"payload,omitempty"`
}

// ErrQuery reports a query that cannot be run as asked.
var ErrQuery = errors.New("memory: bad query")

// Search runs q over events (oldest first), newest hits first, keeping only
// the events visible allows (nil: all). A core lane is not shown the user's
// raw messages, for instance.
func Search(events []rpc.Event, q Query, visible func(rpc.Event) bool) ([]Hit, error) {
	limit := q.Limit
	if limit <= 0 {
		limit = DefaultLimit
	}
	limit = min(limit, MaxLimit)
	text := strings.TrimSpace(q.Text)
	if text == "" {
		return nil, fmt.Errorf("%w: the query is empty; give keywords, or an event hash with mode %q", ErrQuery, QueryHash)
	}
	var hits []Hit
	switch q.Mode {
	case "", QueryKeyword:
		words := strings.Fields(strings.ToLower(text))
		for _, e := range slices.Backward(events) {
			if len(hits) == limit {
				break
			}
			if visible != nil && !visible(e) {
				continue
			}
			body := strings.ToLower(eventText(e))
			at := -1
			for _, w := range words {
				i := strings.Index(body, w)
				if i < 0 {
					at = -1
					break
				}
				if at < 0 || i < at {
					at = i
				}
			}
			if at < 0 {
				continue
			}
			h := hitOf(e)
			h.Excerpt = excerpt(eventText(e), at)
			hits = append(hits, h)
		}
	case QueryHash:
		ref := strings.ToLower(text)
		if len(ref) < minHashPrefix || strings.Trim(ref, "0123456789abcdef") != "" {
			return nil, fmt.Errorf("%w: %q is not an event hash; give at least %d hex digits", ErrQuery, text, minHashPrefix)
		}
		for _, e := range slices.Backward(events) {
			if len(hits) == limit {
				break
			}
			if !strings.HasPrefix(e.Hash, ref) || visible != nil && !visible(e) {
				continue
			}
			h := hitOf(e)
			if len(e.Payload) <= maxPayloadBytes {
				h.Payload = slices.Clone(e.Payload)
			} else {
				h.Excerpt = excerpt(eventText(e), 0)
			}
			hits = append(hits, h)
		}
	default:
		return nil, fmt.Errorf("%w: mode %q; the working store answers %q and %q", ErrQuery, q.Mode, QueryKeyword, QueryHash)
	}
	return hits, nil
}

func hitOf(e rpc.Event) Hit {
	return Hit{Rev: e.Rev, Hash: e.Hash, Type: e.Type, Lane: e.Lane, Time: e.Time.UTC().Format("2006-01-02T15:04:05Z")}
}

// eventText is the searchable text of an event: its type and every string
// in its payload, one per line.
func eventText(e rpc.Event) string {
	var b strings.Builder
	b.WriteString(e.Type)
	var v any
	if json.Unmarshal(e.Payload, &v) == nil {
		collect(&b, v)
	}
	return b.String()
}

func collect(b *strings.Builder, v any) {
	switch x := v.(type) {
	case string:
		if len(x) > 1 && (x[0] == '{' || x[0] == '[') {
			var inner any
			if json.Unmarshal([]byte(x), &inner) == nil {
				collect(b, inner) // tool arguments are JSON in a string
				return
			}
		}
		b.WriteByte('\n')
		b.WriteString(x)
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			collect(b, x[k])
		}
	case []any:
		for _, y := range x {
			collect(b, y)
		}
	case float64, bool:
		fmt.Fprintf(b, "\n%v", x)
	}
}

// excerpt returns about excerptBytes of s around byte at.
func excerpt(s string, at int) string {
	start := max(0, at-excerptBytes/3)
	end := min(len(s), start+excerptBytes)
	for start > 0 && s[start]&0xC0 == 0x80 {
		start--
	}
	for end < len(s) && s[end]&0xC0 == 0x80 {
		end++
	}
	out := strings.TrimSpace(strings.ReplaceAll(s[start:end], "\n", " "))
	if start > 0 {
		out = "…" + out
	}
	if end < len(s) {
		out += "…"
	}
	return out
}
