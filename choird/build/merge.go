package build

import (
	"io/fs"
	"path"
	"sort"

	"choir/agent/builtin"
	"choir/internal/mcpdecl"
)

// Entry is one file of the merged tree baked into /choir.
type Entry struct {
	Path string      // below /choir: "tools/global/acme.git.commit.json"
	Mode fs.FileMode // 0644, or 0755 for executables
	Body []byte
	From string // "global" or "agent", "" for files the build writes
}

// Tree is the merged content of /choir (design §6.5, §15.1), without the
// version.json the build adds once the image version is known.
type Tree struct {
	Entries   []Entry         // sorted by path
	Tools     []string        // every repo tool in effect, sorted
	ToolHash  string          // version.json's tool_manifest_hash
	SkillHash string          // version.json's skill_manifest_hash
	Warnings  []string        // e.g. no SOUL.md in either repo
	MCP       []*mcpdecl.Decl // the MCP servers in effect (mcp.go)
}

// merge combines the global and the agent repo: agent tools and skills
// replace global ones of the same name, USER.md comes from the global repo
// only, SOUL.md and SOUL-CORE.md from the agent repo when it has them.
// Tools go to tools/global/ or tools/agent/ by the repo they come from.
func merge(global, agent *source) *Tree {
	t := &Tree{}
	add := func(p string, mode fs.FileMode, body []byte, from string) {
		t.Entries = append(t.Entries, Entry{Path: p, Mode: mode, Body: body, From: from})
	}
	tools := map[string]*toolDef{}
	for _, side := range []struct {
		src  *source
		from string
	}{{global, "global"}, {agent, "agent"}} {
		for _, name := range sortedKeys(side.src.tools) {
			d := side.src.tools[name]
			if side.from == "global" && agent.tools[name] != nil {
				continue // overridden
			}
			tools[name] = d
			dir := path.Join("tools", side.from)
			add(path.Join(dir, name+".json"), 0o644, d.manifest, side.from)
			if d.exec != nil {
				add(path.Join(dir, name), 0o755, d.exec, side.from)
			}
		}
	}
	t.Tools = sortedKeys(tools)
	var canon [][]byte
	for _, name := range t.Tools {
		canon = append(canon, tools[name].canon)
	}
	t.ToolHash = manifestHash(canon)

	skills := map[string]*skillDef{}
	from := map[string]string{}
	for name, d := range global.skills {
		skills[name], from[name] = d, "global"
	}
	for name, d := range agent.skills {
		skills[name], from[name] = d, "agent"
	}
	canon = nil
	for _, name := range sortedKeys(skills) {
		add(path.Join("skills", name+".json"), 0o644, skills[name].data, from[name])
		canon = append(canon, skills[name].canon)
	}
	t.SkillHash = manifestHash(canon)

	if b, ok := global.identity[UserFile]; ok {
		add("USER.md", 0o644, b, "global")
	}
	for _, f := range []string{SoulFile, SoulCoreFile} {
		out := path.Base(f)
		switch {
		case agent.identity[f] != nil:
			add(out, 0o644, agent.identity[f], "agent")
		case global.identity[f] != nil:
			add(out, 0o644, global.identity[f], "global")
		default:
			add(out, 0o644, []byte{}, "")
			t.Warnings = append(t.Warnings, "neither repo has "+f+"; /choir/"+out+" is empty")
		}
	}
	mergeMCP(t, global, agent)
	sort.Slice(t.Entries, func(i, j int) bool { return t.Entries[i].Path < t.Entries[j].Path })
	return t
}

// knownTools is the set a skill's allowed_tools may name: the built-ins and
// the merged repo tools.
func (t *Tree) knownTools() func(string) bool {
	known := map[string]bool{}
	for _, n := range builtin.Names() {
		known[n] = true
	}
	for _, n := range t.Tools {
		known[n] = true
	}
	return func(name string) bool { return known[name] }
}
