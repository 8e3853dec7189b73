package staging

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"choir/choird/build"
	"choir/internal/config"
	"choir/internal/ctl"
	"choir/internal/rpc"
)

// Holder is a running session: what it holds can block a change.
type Holder struct {
	AgentID  string
	Bindings rpc.ResourceBindings
}

// ConfigChanges compares config.json's running and staged content member
// by member: a change of a section of named resources ("models") is listed
// per resource ("models.default"), of an object setting ("budgets") per
// field, of anything else as a whole.
func ConfigChanges(running, staged *config.Config, holders []Holder) []ctl.ConfigChange {
	a, b := members(running), members(staged)
	var out []ctl.ConfigChange
	for _, key := range unionKeys(a, b) {
		if sameJSON(a[key], b[key]) {
			continue
		}
		r := ruleFor(key)
		sa, sb := members(a[key]), members(b[key])
		if (sa == nil && a[key] != nil) || (sb == nil && b[key] != nil) {
			// not an object on one side: the member changes as a whole
			out = append(out, change(r, key, "", a[key], b[key], holders))
			continue
		}
		for _, name := range unionKeys(sa, sb) {
			if !sameJSON(sa[name], sb[name]) {
				if cs, ok := headlessChanges(key, name, sa[name], sb[name], holders); ok { // headless.go
					out = append(out, cs...)
					continue
				}
				if c, ok := agentSpendOnly(key, name, sa[name], sb[name]); ok { // spend.go
					out = append(out, c)
					continue
				}
				out = append(out, change(r, key, name, sa[name], sb[name], holders))
			}
		}
	}
	return out
}

func change(r rule, key, name string, from, to json.RawMessage, holders []Holder) ctl.ConfigChange {
	c := ctl.ConfigChange{Op: op(from, to), Where: "config.json: " + key, Class: r.class, Use: r.use()}
	if name != "" {
		c.Where += "." + name
	}
	switch {
	case r.class == ctl.ClassRestart:
		c.Blocks = r.why
	case r.held != nil && name != "" && (r.changeHeld || (r.removeHeld && to == nil)):
		for _, h := range holders {
			for _, held := range r.held(h.AgentID, h.Bindings) {
				if held == name {
					c.Blocks = fmt.Sprintf("%s %q is in use by running agent %s: stop it first (choirctl agent stop %s)", r.noun, name, h.AgentID, h.AgentID)
					if r.noun == "model" || r.noun == "voice profile" {
						c.Blocks = fmt.Sprintf("%s %q is in use by running agent %s: switch it first (choirctl %s set %s OTHER) or stop it",
							r.noun, name, h.AgentID, strings.Fields(r.noun)[0], h.AgentID)
					}
					return c
				}
			}
		}
	}
	return c
}

// SecretChanges lists secrets added, removed or changed, by name only.
func SecretChanges(running, staged config.Secrets) []ctl.ConfigChange {
	names := map[string]bool{}
	for n := range running {
		names[n] = true
	}
	for n := range staged {
		names[n] = true
	}
	var out []ctl.ConfigChange
	for _, n := range sortedSet(names) {
		a, inA := running[n]
		b, inB := staged[n]
		var o string
		switch {
		case !inA:
			o = "+"
		case !inB:
			o = "-"
		case a != b:
			o = "~" // the value changed; it is never shown
		default:
			continue
		}
		out = append(out, ctl.ConfigChange{Op: o, Where: "secrets.json: " + n, Class: ctl.ClassHot, Use: "included in: choirctl config apply"})
	}
	return out
}

// Image is what an agent runs now, or would start with: its image's
// content, nil when it has none.
type Image struct {
	AgentID string
	Running bool
	Content *build.Content
}

// RepoChanges compares each agent's image with what its repos hold now:
// the commits, then file by file. A change of the global repo is listed
// once, with every agent it concerns.
func RepoChanges(images []Image, staged map[string]*build.Content) []ctl.ConfigChange {
	type key struct{ op, where, from, to string }
	agents := map[key][]Image{}
	var order []key
	add := func(k key, img Image) {
		if _, ok := agents[k]; !ok {
			order = append(order, k)
		}
		agents[k] = append(agents[k], img)
	}
	for _, img := range images {
		now := staged[img.AgentID]
		if now == nil {
			continue
		}
		if img.Content == nil {
			add(key{"+", img.AgentID + " image", "", now.Agent.Short}, img)
			continue
		}
		old := img.Content
		if old.Global.Commit != now.Global.Commit {
			add(key{"~", "global repo", old.Global.Short, now.Global.Short}, img)
		}
		if old.Agent.Commit != now.Agent.Commit {
			add(key{"~", img.AgentID + " repo", old.Agent.Short, now.Agent.Short}, img)
		}
		for _, f := range unionKeys(old.Files, now.Files) {
			if o := fileOp(old.Files, now.Files, f); o != "" {
				add(key{o, f, "", ""}, img)
			}
		}
	}
	var out []ctl.ConfigChange
	for _, k := range order {
		out = append(out, ctl.ConfigChange{Op: k.op, Where: k.where, From: k.from, To: k.to,
			Class: ctl.ClassRestart, Use: "use: " + applyRepo(agents[k])})
	}
	return out
}

// applyRepo is the command that brings these agents' images up to date.
func applyRepo(imgs []Image) string {
	var running, stopped []string
	for _, img := range imgs {
		if img.Running {
			running = append(running, img.AgentID)
		} else {
			stopped = append(stopped, img.AgentID)
		}
	}
	var cmds []string
	if len(running) > 0 {
		cmds = append(cmds, "choirctl agent update "+strings.Join(running, " "))
	}
	if len(stopped) > 0 {
		cmds = append(cmds, "choirctl agent build "+strings.Join(stopped, " "))
	}
	return strings.Join(cmds, "; ")
}

func fileOp(old, now map[string]string, f string) string {
	a, inA := old[f]
	b, inB := now[f]
	switch {
	case !inA:
		return "+"
	case !inB:
		return "-"
	case a != b:
		return "~"
	}
	return ""
}

func op(from, to json.RawMessage) string {
	switch {
	case from == nil:
		return "+"
	case to == nil:
		return "-"
	}
	return "~"
}

// members decodes a JSON object (or any value marshalled to one) into its
// members; nil when v is not an object.
func members(v any) map[string]json.RawMessage {
	var raw []byte
	switch x := v.(type) {
	case json.RawMessage:
		raw = x
	default:
		var err error
		if raw, err = json.Marshal(v); err != nil {
			return nil
		}
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return nil
	}
	return m
}

// sameJSON compares two JSON values by meaning (member order and spacing
// aside); absent and null are the same.
func sameJSON(a, b json.RawMessage) bool {
	if bytes.Equal(a, b) {
		return true
	}
	return bytes.Equal(canonical(a), canonical(b))
}

func canonical(raw json.RawMessage) []byte {
	if raw == nil {
		return []byte("null")
	}
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return raw
	}
	out, _ := json.Marshal(v) // maps marshal with sorted keys
	return out
}

func unionKeys[V any](a, b map[string]V) []string {
	set := map[string]bool{}
	for k := range a {
		set[k] = true
	}
	for k := range b {
		set[k] = true
	}
	return sortedSet(set)
}

func sortedSet(set map[string]bool) []string {
	out := make([]string, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
