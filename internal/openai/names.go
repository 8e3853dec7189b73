package openai

import (
	"errors"
	"fmt"
	"strings"
)

// wireNamePattern is what OpenAI and Anthropic accept as a function name.
const (
	wireNamePattern = "^[a-zA-Z0-9_-]{1,64}$"
	maxWireName     = 64
)

// ValidWireName reports whether name matches ^[a-zA-Z0-9_-]{1,64}$.
func ValidWireName(name string) bool {
	if name == "" || len(name) > maxWireName {
		return false
	}
	for i := 0; i < len(name); i++ {
		if !wireByte(name[i]) {
			return false
		}
	}
	return true
}

func wireByte(b byte) bool {
	return 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' || '0' <= b && b <= '9' || b == '_' || b == '-'
}

// WireName is the wire form of a canonical tool name: every character
// outside [a-zA-Z0-9_-] becomes '_' ("choir.fs.read" → "choir_fs_read"). It
// does not check the length or collisions; NameMap does.
func WireName(canonical string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x80 && wireByte(byte(r)) {
			return r
		}
		return '_'
	}, canonical)
}

// ErrUnknownTool marks a tool call naming a function that was not offered.
var ErrUnknownTool = errors.New("unknown tool")

// NameMap maps canonical tool names (choir.fs.read) to wire names
// (choir_fs_read) and back, one to one. Build it from the tools offered in a
// request and use the same map to read that request's tool calls.
type NameMap struct {
	wire      map[string]string // canonical → wire
	canonical map[string]string // wire → canonical
}

// NewNameMap maps each canonical name to its WireName. It refuses, naming the
// names involved, an empty or repeated name, a wire name longer than 64
// characters, and two names with the same wire name.
func NewNameMap(canonical []string) (*NameMap, error) {
	m := &NameMap{
		wire:      make(map[string]string, len(canonical)),
		canonical: make(map[string]string, len(canonical)),
	}
	for i, name := range canonical {
		if name == "" {
			return nil, fmt.Errorf("openai: tool name %d of %d is empty", i+1, len(canonical))
		}
		if _, dup := m.wire[name]; dup {
			return nil, fmt.Errorf("openai: tool name %q is listed twice", name)
		}
		w := WireName(name)
		if len(w) > maxWireName {
			return nil, fmt.Errorf("openai: tool name %q maps to wire name %q of %d characters; the limit is %d", name, w, len(w), maxWireName)
		}
		if other, taken := m.canonical[w]; taken {
			return nil, fmt.Errorf("openai: tool names %q and %q both map to wire name %q; rename one", other, name, w)
		}
		m.wire[name] = w
		m.canonical[w] = name
	}
	return m, nil
}

// Wire returns the wire name of a canonical name in the map.
func (m *NameMap) Wire(canonical string) (string, error) {
	w, ok := m.wire[canonical]
	if !ok {
		return "", fmt.Errorf("openai: tool %q is not in the name map: %w", canonical, ErrUnknownTool)
	}
	return w, nil
}

// Canonical returns the canonical name of a wire name from a tool call. An
// error wraps ErrUnknownTool: the model called a function it was not offered,
// which the caller answers with a tool error.
func (m *NameMap) Canonical(wire string) (string, error) {
	c, ok := m.canonical[wire]
	if !ok {
		return "", fmt.Errorf("openai: the model called %q, which is not a tool offered in this request: %w", wire, ErrUnknownTool)
	}
	return c, nil
}
