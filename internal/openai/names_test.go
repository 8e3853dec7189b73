package openai_test

import (
	"errors"
	"strings"
	"testing"

	"choir/internal/openai"
)

func TestNameMapRoundTrip(t *testing.T) {
	canonical := []string{"choir.fs.read", "choir.memory.search", "choir.repo.status", "web-fetch", "naïve.tool"}
	wantWire := []string{"choir_fs_read", "choir_memory_search", "choir_repo_status", "web-fetch", "na_ve_tool"}
	m, err := openai.NewNameMap(canonical)
	if err != nil {
		t.Fatalf("NewNameMap = %v", err)
	}
	for i, name := range canonical {
		wire, err := m.Wire(name)
		if err != nil || wire != wantWire[i] {
			t.Errorf("Wire(%q) = %q, %v; want %q", name, wire, err, wantWire[i])
		}
		if !openai.ValidWireName(wire) {
			t.Errorf("Wire(%q) = %q, which is not a valid wire name", name, wire)
		}
		if back, err := m.Canonical(wire); err != nil || back != name {
			t.Errorf("Canonical(%q) = %q, %v; want %q", wire, back, err, name)
		}
	}
	if _, err := m.Canonical("choir_fs_write"); !errors.Is(err, openai.ErrUnknownTool) || !strings.Contains(err.Error(), "choir_fs_write") {
		t.Errorf("Canonical(unknown) = %v; want ErrUnknownTool naming it", err)
	}
	if _, err := m.Wire("choir.fs.write"); !errors.Is(err, openai.ErrUnknownTool) {
		t.Errorf("Wire(unknown) = %v; want ErrUnknownTool", err)
	}
}

func TestNameMapRefuses(t *testing.T) {
	long := "choir." + strings.Repeat("x", 59) // 65 characters
	tests := []struct {
		names    []string
		mentions []string
	}{
		{[]string{"choir.fs.read", "choir_fs.read"}, []string{`"choir.fs.read"`, `"choir_fs.read"`, `"choir_fs_read"`}},
		{[]string{"choir.fs.read", "choir_fs_read"}, []string{`"choir.fs.read"`, `"choir_fs_read" both`}},
		{[]string{long}, []string{long, "65 characters", "64"}},
		{[]string{"a", "a"}, []string{`"a" is listed twice`}},
		{[]string{"a", ""}, []string{"tool name 2 of 2 is empty"}},
	}
	for _, tt := range tests {
		m, err := openai.NewNameMap(tt.names)
		if err == nil {
			t.Errorf("NewNameMap(%q) = %v; want an error", tt.names, m)
			continue
		}
		for _, p := range tt.mentions {
			if !strings.Contains(err.Error(), p) {
				t.Errorf("NewNameMap(%q) = %v; want it to mention %s", tt.names, err, p)
			}
		}
	}
}

func TestValidWireName(t *testing.T) {
	tests := map[string]bool{
		"choir_fs_read":         true,
		"A-b_9":                 true,
		strings.Repeat("x", 64): true,
		strings.Repeat("x", 65): false,
		"":                      false,
		"choir.fs.read":         false,
		"has space":             false,
		"naïve":                 false,
		"slash/name":            false,
	}
	for name, want := range tests {
		if got := openai.ValidWireName(name); got != want {
			t.Errorf("ValidWireName(%q) = %v; want %v", name, got, want)
		}
	}
}
