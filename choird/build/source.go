package build

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"choir/agent/builtin"
	"choir/agent/skill"
	"choir/agent/tool"
	"choir/internal/jsonschema"
)

// Files and directories the build reads in a repo (design §6.5).
const (
	BaseDockerfile  = "Dockerfile.base"  // global repo
	AgentDockerfile = "Dockerfile"       // agent repo
	ToolsDir        = "tools"            // <name>.json beside <name> or <name>/
	SkillsDir       = "skills"           // <name>.json
	UserFile        = "identity/USER.md" // global repo only
	SoulFile        = "identity/SOUL.md" // agent repo, else global
	SoulCoreFile    = "identity/SOUL-CORE.md"
	choirDir        = ".choir" // the merged tree in the agent image's build context
)

// source is the content of one repo at one commit, as the build uses it.
type source struct {
	label    string // "global repo (URL)", for faults
	dir      string // the exported tree
	commit   string
	tools    map[string]*toolDef
	skills   map[string]*skillDef
	identity map[string][]byte  // by repo path: identity/USER.md ...
	mcp      map[string]*mcpDef // by server name (mcp.go)
	faults   []Fault
}

// toolDef is tools/<name>.json and what runs it.
type toolDef struct {
	name     string
	manifest []byte // as written
	canon    []byte // canonical form, for the manifest hash
	exec     []byte // tools/<name>, nil for a tool built from tools/<name>/ or found at an absolute exec_path
}

// skillDef is skills/<name>.json.
type skillDef struct {
	name  string
	file  string
	data  []byte
	canon []byte
	spec  *skill.Spec
}

func (s *source) fault(file, ptr, format string, args ...any) {
	s.faults = append(s.faults, Fault{Repo: s.label, File: file, Path: ptr, Message: fmt.Sprintf(format, args...)})
}

// loadSource reads and checks the repo tree at dir. required are files
// that must exist in it. Faults are collected in the source, not returned.
func loadSource(label, dir, commit string, required ...string) *source {
	s := &source{label: label, dir: dir, commit: commit,
		tools: map[string]*toolDef{}, skills: map[string]*skillDef{}, identity: map[string][]byte{}}
	for _, f := range required {
		if _, err := s.regular(f); err != nil {
			s.fault(f, "", "%v", err)
		}
	}
	if _, err := os.Lstat(filepath.Join(dir, choirDir)); err == nil {
		s.fault(choirDir, "", "this path is reserved for the tree the build adds; rename it")
	}
	for _, f := range []string{UserFile, SoulFile, SoulCoreFile} {
		data, err := s.regular(f)
		switch {
		case err == nil:
			s.identity[f] = data
		case !errors.Is(err, fs.ErrNotExist):
			s.fault(f, "", "%v", err)
		}
	}
	s.loadTools()
	s.loadSkills()
	s.loadMCP()
	return s
}

// regular reads the regular file at rel, refusing symbolic links (which
// could point anywhere on the host).
func (s *source) regular(rel string) ([]byte, error) {
	p := filepath.Join(s.dir, filepath.FromSlash(rel))
	fi, err := os.Lstat(p)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("missing: the repo has no %s: %w", rel, fs.ErrNotExist)
		}
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("not a regular file (%s)", fi.Mode().Type())
	}
	return os.ReadFile(p)
}

// jsonFiles lists the *.json regular names in the repo directory rel.
func (s *source) jsonFiles(rel string) []string {
	entries, err := os.ReadDir(filepath.Join(s.dir, rel))
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			s.fault(rel, "", "%v", err)
		}
		return nil
	}
	var names []string
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".json") && e.Name() != ".json" {
			names = append(names, e.Name())
		}
	}
	return names
}

func (s *source) loadTools() {
	for _, fname := range s.jsonFiles(ToolsDir) {
		file := path.Join(ToolsDir, fname)
		name := strings.TrimSuffix(fname, ".json")
		data, err := s.regular(file)
		if err != nil {
			s.fault(file, "", "%v", err)
			continue
		}
		t, ok := s.checkTool(file, name, data)
		if ok {
			s.tools[name] = t
		}
	}
}

// checkTool checks a manifest as far as the build must (design §8.3): a
// JSON object whose llm.name is the file's name, whose llm.input_schema
// compiles and which has a runtime object, with an executable beside it.
// choir-agent checks the runtime view in full when it loads the tool.
func (s *source) checkTool(file, name string, data []byte) (*toolDef, bool) {
	nfaults := len(s.faults)
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil || top == nil {
		s.fault(file, "", "not a JSON object: %v", jsonProblem(err))
		return nil, false
	}
	var llm map[string]json.RawMessage
	if err := json.Unmarshal(top["llm"], &llm); err != nil || llm == nil {
		s.fault(file, "/llm", "missing or not an object")
	} else {
		var got string
		if err := json.Unmarshal(llm["name"], &got); err != nil || got != name {
			s.fault(file, "/llm/name", "is %s; want %q, the file's name", rawOrMissing(llm["name"]), name)
		}
		if raw, ok := llm["input_schema"]; !ok {
			s.fault(file, "/llm/input_schema", "missing")
		} else if _, err := jsonschema.Compile(raw); err != nil {
			var se *jsonschema.SchemaError
			if errors.As(err, &se) {
				for _, f := range se.Failures {
					s.fault(file, "/llm/input_schema"+strings.TrimSuffix(f.Path, "/"), "%s", f.Message)
				}
			} else {
				s.fault(file, "/llm/input_schema", "%v", err)
			}
		}
	}
	var runtime map[string]json.RawMessage
	if err := json.Unmarshal(top["runtime"], &runtime); err != nil || runtime == nil {
		s.fault(file, "/runtime", "missing or not an object")
	}
	if msg := tool.NameProblem(name); msg != "" {
		s.fault(file, "/llm/name", "%s", msg)
	} else if builtin.Has(name) {
		s.fault(file, "/llm/name", "%q is a built-in tool of choir-agent and cannot be replaced; choose another name", name)
	}
	t := &toolDef{name: name, manifest: data}
	var err error
	if t.canon, err = canonical(data); err != nil {
		s.fault(file, "", "%v", err)
	}
	t.exec = s.toolExec(file, name, runtime)
	return t, len(s.faults) == nfaults
}

// toolExec returns the executable tools/<name>, or nil when the tool is
// built from its source directory tools/<name>/ or runs a program the
// Dockerfile installs at an absolute runtime.exec_path.
func (s *source) toolExec(file, name string, runtime map[string]json.RawMessage) []byte {
	rel := path.Join(ToolsDir, name)
	fi, err := os.Lstat(filepath.Join(s.dir, filepath.FromSlash(rel)))
	switch {
	case err == nil && fi.IsDir():
		return nil
	case err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0:
		data, err := os.ReadFile(filepath.Join(s.dir, filepath.FromSlash(rel)))
		if err != nil {
			s.fault(rel, "", "%v", err)
		}
		return data
	case err == nil && fi.Mode().IsRegular():
		s.fault(rel, "", "not executable: commit it with mode 755 (git update-index --chmod=+x %s)", rel)
		return nil
	case err == nil:
		s.fault(rel, "", "must be an executable file or a source directory, not %s", fi.Mode().Type())
		return nil
	}
	var execPath string
	if json.Unmarshal(runtime["exec_path"], &execPath) == nil && strings.HasPrefix(execPath, "/") {
		return nil
	}
	s.fault(file, "", "no executable %s and no source directory %s/ beside the manifest", rel, rel)
	return nil
}

func (s *source) loadSkills() {
	builtin := map[string]bool{}
	if specs, err := skill.Builtins(); err == nil {
		for _, b := range specs {
			builtin[b.Name] = true
		}
	}
	for _, fname := range s.jsonFiles(SkillsDir) {
		file := path.Join(SkillsDir, fname)
		name := strings.TrimSuffix(fname, ".json")
		data, err := s.regular(file)
		if err != nil {
			s.fault(file, "", "%v", err)
			continue
		}
		spec, err := skill.Parse(file, data)
		if err != nil {
			s.skillFaults(file, err)
			continue
		}
		if spec.Name != name {
			s.fault(file, "/name", "is %q; want %q, the file's name", spec.Name, name)
			continue
		}
		if builtin[name] {
			s.fault(file, "/name", "%q is a built-in skill of choir-agent and cannot be replaced; choose another name", name)
			continue
		}
		canon, err := canonical(data)
		if err != nil {
			s.fault(file, "", "%v", err)
			continue
		}
		s.skills[name] = &skillDef{name: name, file: file, data: data, canon: canon, spec: spec}
	}
}

// validateSkills checks every skill's machine against the tools the agent
// will have.
func (s *source) validateSkills(knownTool func(string) bool) {
	for _, name := range sortedKeys(s.skills) {
		d := s.skills[name]
		if err := skill.Validate(d.spec, knownTool); err != nil {
			s.skillFaults(d.file, err)
		}
	}
}

func (s *source) skillFaults(file string, err error) {
	var se *skill.SpecError
	if !errors.As(err, &se) {
		s.fault(file, "", "%v", err)
		return
	}
	for _, f := range se.Faults {
		ptr := f.Path
		f.File, f.Path = "", ""
		s.fault(file, ptr, "%s", f.String())
	}
}

func jsonProblem(err error) string {
	if err == nil {
		return "null"
	}
	return err.Error()
}

func rawOrMissing(raw json.RawMessage) string {
	if raw == nil {
		return "missing"
	}
	return string(raw)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
