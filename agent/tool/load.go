package tool

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"choir/internal/jsonlimit"
	"choir/internal/jsonschema"
)

// The directories of the agent image that hold external tools (design §15.1).
const (
	GlobalDir = "/choir/tools/global"
	AgentDir  = "/choir/tools/agent"
)

// Load builds the registry at agent startup (design §8.8): the built-in
// tools, then every <name>.json manifest in globalDir, then in agentDir
// (other files and subdirectories are ignored; a directory that does not
// exist holds no tools). Each manifest is parsed strictly, its schema
// compiled and its executable checked: it must exist, be a regular file and
// be executable. An agent tool replaces a global tool of the same name; no
// manifest may take a built-in's name, and names must be unique within a
// directory and in their wire form (WireName). Any fault anywhere fails the
// load with a *LoadError listing every fault, each naming its file.
func Load(builtins []Tool, globalDir, agentDir string) (*Registry, error) {
	r := &Registry{entries: make(map[string]*entry), wire: make(map[string]string)}
	var faults []Fault
	for _, t := range builtins {
		e, fs := checkBuiltin(t)
		if len(fs) > 0 {
			faults = append(faults, fs...)
			continue
		}
		if prev, ok := r.entries[e.name]; ok {
			faults = append(faults, Fault{File: e.source, Message: fmt.Sprintf("name is already used by %s", prev.source)})
			continue
		}
		r.entries[e.name] = e
	}
	for _, dir := range []string{globalDir, agentDir} {
		found, fs := scanDir(dir)
		faults = append(faults, fs...)
		for _, e := range found {
			prev, ok := r.entries[e.name]
			switch {
			case !ok:
			case prev.manifest == nil:
				faults = append(faults, Fault{File: e.source, Path: "/llm/name",
					Message: fmt.Sprintf("%q is a built-in tool and cannot be overridden; choose another name", e.name)})
				continue
			case filepath.Dir(prev.source) == filepath.Dir(e.source):
				faults = append(faults, Fault{File: e.source, Path: "/llm/name",
					Message: fmt.Sprintf("%q is already defined by %s in the same directory", e.name, prev.source)})
				continue
			}
			r.entries[e.name] = e // an agent tool overrides a global one
		}
	}
	for name := range r.entries {
		r.names = append(r.names, name)
	}
	sort.Strings(r.names)
	for _, name := range r.names {
		w := WireName(name)
		if prev, ok := r.wire[w]; ok {
			faults = append(faults, Fault{File: r.entries[name].source,
				Message: fmt.Sprintf("%q and %q have the same wire name %q that model APIs see; rename one", prev, name, w)})
			continue
		}
		r.wire[w] = name
	}
	if len(faults) > 0 {
		return nil, fmt.Errorf("load tools:\n%w", &LoadError{Faults: faults})
	}
	h := sha256.New()
	for _, name := range r.names {
		if m := r.entries[name].manifest; m != nil {
			h.Write(m)
			h.Write([]byte{'\n'})
		}
	}
	r.hash = hex.EncodeToString(h.Sum(nil))
	return r, nil
}

// checkBuiltin checks a built-in's definition as strictly as a manifest.
func checkBuiltin(t Tool) (*entry, []Fault) {
	name := t.Name()
	src := "built-in " + name
	var faults []Fault
	add := func(format string, args ...any) {
		faults = append(faults, Fault{File: src, Message: fmt.Sprintf(format, args...)})
	}
	llm, rt := t.LLM(), t.Runtime()
	if msg := NameProblem(name); msg != "" {
		add("%s", msg)
	}
	if llm.Name != name {
		add("LLM view names %q", llm.Name)
	}
	if strings.TrimSpace(llm.Description) == "" {
		add("no description")
	}
	schema, fs := compileParams(llm.Parameters)
	for _, f := range fs {
		add("parameters %s: %s", f.Path, f.Message)
	}
	if !rt.SideEffect.valid() {
		add("side effect %q is not read, write or external", rt.SideEffect)
	}
	if !rt.Exposure.valid() {
		add("exposure %q is not edge, core, both or none", rt.Exposure)
	}
	if rt.Timeout <= 0 {
		add("no timeout")
	}
	for _, l := range rt.Locks {
		if msg := lockKeyProblem(l.Key); msg != "" {
			add("%s", msg)
		}
		if l.Mode != Shared && l.Mode != Exclusive {
			add("lock %q: mode %q is not S or X", l.Key, l.Mode)
		}
	}
	for _, k := range rt.SecretResources {
		if msg := secretKindProblem(k); msg != "" {
			add("%s", msg)
		}
	}
	if len(faults) > 0 {
		return nil, faults
	}
	return &entry{name: name, tool: t, schema: schema, source: src}, nil
}

// scanDir loads every manifest in dir, in name order.
func scanDir(dir string) ([]*entry, []Fault) {
	if dir == "" {
		return nil, nil
	}
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, []Fault{{File: dir, Message: fmt.Sprintf("read tool directory: %v", err)}}
	}
	var found []*entry
	var faults []Fault
	for _, de := range ents {
		if de.IsDir() || !strings.HasSuffix(de.Name(), ".json") {
			continue
		}
		file := filepath.Join(dir, de.Name())
		e, fs := loadManifest(dir, file)
		faults = append(faults, fs...)
		if e != nil {
			found = append(found, e)
		}
	}
	return found, faults
}

func loadManifest(dir, file string) (*entry, []Fault) {
	data, err := jsonlimit.ReadFile(file, manifestLimits)
	if err != nil {
		return nil, []Fault{{File: file, Message: fmt.Sprintf("read: %v", err)}}
	}
	m, err := ParseManifest(file, data)
	if err != nil {
		var le *LoadError
		if errors.As(err, &le) {
			return nil, le.Faults
		}
		return nil, []Fault{{File: file, Message: err.Error()}}
	}
	execPath := m.Runtime.ExecPath
	switch {
	case execPath == "":
		execPath = strings.TrimSuffix(file, ".json")
	case !filepath.IsAbs(execPath):
		execPath = filepath.Join(dir, execPath)
	}
	if msg := executableProblem(execPath); msg != "" {
		p := "/runtime/exec_path"
		if m.Runtime.ExecPath == "" {
			p = ""
			msg += " (the executable beside a manifest has its name without .json; or set runtime.exec_path)"
		}
		return nil, []Fault{{File: file, Path: p, Message: msg}}
	}
	canon, err := canonical(data)
	if err != nil {
		return nil, []Fault{{File: file, Message: fmt.Sprintf("canonicalise: %v", err)}}
	}
	schema, _ := jsonschema.Compile(m.LLM.InputSchema) // checked by ParseManifest
	t := &External{
		llm:  LLMTool{Name: m.LLM.Name, Description: m.LLM.Description, Parameters: m.LLM.InputSchema},
		rt:   m.runtime(execPath),
		file: file,
	}
	return &entry{name: t.llm.Name, tool: t, schema: schema, source: file, manifest: canon}, nil
}

// executableProblem says why path cannot be run, or "".
func executableProblem(path string) string {
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Sprintf("executable %s does not exist", path)
	case err != nil:
		return fmt.Sprintf("executable %s: %v", path, err)
	case !fi.Mode().IsRegular():
		return fmt.Sprintf("executable %s is not a regular file", path)
	case fi.Mode().Perm()&0o111 == 0:
		return fmt.Sprintf("%s is not executable (mode %v); chmod +x it", path, fi.Mode().Perm())
	}
	return ""
}
