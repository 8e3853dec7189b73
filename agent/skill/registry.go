package skill

import (
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"choir/internal/jsonlimit"
)

// Dir is where the agent image holds its skill files.
const Dir = "/choir/skills"

//go:embed builtin/*.json
var builtinFS embed.FS

// Builtins parses the skills that ship inside choir-agent, tool-builder and
// skill-builder (design §10.3). It checks their shape, not their tools: that
// needs the tool registry, and LoadDir does it.
func Builtins() ([]*Spec, error) {
	sources, err := builtins()
	if err != nil {
		return nil, err
	}
	specs := make([]*Spec, len(sources))
	for i, s := range sources {
		specs[i] = s.spec
	}
	return specs, nil
}

// sourced is a parsed skill and the file it came from.
type sourced struct {
	file string
	spec *Spec
}

func builtins() ([]sourced, error) {
	names, err := fs.Glob(builtinFS, "builtin/*.json")
	if err != nil {
		return nil, fmt.Errorf("list built-in skills: %w", err)
	}
	specs := make([]sourced, 0, len(names))
	var faults []Fault
	for _, name := range names {
		data, err := builtinFS.ReadFile(name)
		if err != nil {
			return nil, fmt.Errorf("read built-in skill: %w", err)
		}
		spec, err := Parse(name, data)
		if err != nil {
			faults = append(faults, faultsOf(err)...)
			continue
		}
		specs = append(specs, sourced{name, spec})
	}
	if len(faults) > 0 {
		return nil, &SpecError{Faults: faults}
	}
	return specs, nil
}

// Registry is the immutable set of skills an agent can run.
type Registry struct {
	specs map[string]*Spec
	names []string
}

// LoadDir builds the skill registry at agent startup (design §8.8): the
// built-in skills plus every *.json file in dir (other files and
// subdirectories are ignored). Each file is parsed strictly and validated,
// with knownTool reporting whether a tool is registered. Any fault in any file
// fails the load with a *SpecError listing them all, each naming its file. A
// skill name used twice, including a built-in's, is a fault: overrides are
// resolved at image build time, not here.
func LoadDir(dir string, knownTool func(name string) bool) (*Registry, error) {
	builtin, err := builtins()
	if err != nil {
		return nil, fmt.Errorf("load built-in skills: %w", err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("load skills: %w", err)
	}
	r := &Registry{specs: make(map[string]*Spec)}
	from := make(map[string]string) // skill name -> file that defined it
	var faults []Fault
	add := func(file string, spec *Spec) {
		found := validate(spec, knownTool)
		for i := range found {
			found[i].File = file
		}
		faults = append(faults, found...)
		if prev, ok := from[spec.Name]; ok {
			faults = append(faults, Fault{File: file, Skill: spec.Name,
				Message: fmt.Sprintf("name is already used by %s; skill names must be unique", prev)})
			return
		}
		from[spec.Name] = file
		r.specs[spec.Name] = spec
	}
	for _, b := range builtin {
		add(b.file, b.spec)
	}
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		data, err := jsonlimit.ReadFile(filepath.Join(dir, e.Name()), specLimits)
		if err != nil {
			faults = append(faults, Fault{File: e.Name(), Message: fmt.Sprintf("read: %v", err)})
			continue
		}
		spec, err := Parse(e.Name(), data)
		if err != nil {
			faults = append(faults, faultsOf(err)...)
			continue
		}
		add(e.Name(), spec)
	}
	if len(faults) > 0 {
		return nil, fmt.Errorf("load skills from %s:\n%w", dir, &SpecError{Faults: faults})
	}
	for name := range r.specs {
		r.names = append(r.names, name)
	}
	sort.Strings(r.names)
	return r, nil
}

// faultsOf returns the faults in a *SpecError, or the error as one fault.
func faultsOf(err error) []Fault {
	if se, ok := err.(*SpecError); ok {
		return se.Faults
	}
	return []Fault{{Message: err.Error()}}
}

// Lookup returns the skill called name. The Spec must not be modified.
func (r *Registry) Lookup(name string) (*Spec, bool) {
	s, ok := r.specs[name]
	return s, ok
}

// Names returns the skill names in sorted order.
func (r *Registry) Names() []string { return append([]string(nil), r.names...) }

// Start begins a run of the skill called name with the given input; see
// NewRun.
func (r *Registry) Start(name string, input json.RawMessage) (*Run, error) {
	spec, ok := r.specs[name]
	if !ok {
		return nil, fmt.Errorf("start skill %q: %w", name, ErrUnknownSkill)
	}
	return NewRun(spec, input)
}

// Restore rebuilds a run from a snapshot taken before a crash; see Restore.
func (r *Registry) Restore(s Snapshot) (*Run, error) {
	spec, ok := r.specs[s.Skill]
	if !ok {
		return nil, fmt.Errorf("restore skill %q: %w", s.Skill, ErrUnknownSkill)
	}
	return Restore(spec, s)
}
