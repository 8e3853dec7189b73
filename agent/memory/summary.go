package memory

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// Summary is a lane's reference summary (design §11.3): what has left the
// event window, as one structured document. It changes only through a
// validated Delta.
type Summary struct {
	Summary            string   `json:"summary"`
	Facts              []Fact   `json:"facts"`
	ReferencedSessions []string `json:"referenced_sessions"`
	ReferencedEvents   []string `json:"referenced_events"`
}

// Fact is one keyed fact of a summary; SourceEvent is the hash of the event
// it was taken from, when there is one.
type Fact struct {
	Key         string `json:"key"`
	Value       string `json:"value"`
	SourceEvent string `json:"source_event,omitempty"`
}

// Empty reports whether the summary holds nothing: prompts leave it out.
func (s Summary) Empty() bool {
	return s.Summary == "" && len(s.Facts) == 0 && len(s.ReferencedSessions) == 0 && len(s.ReferencedEvents) == 0
}

// Clone returns a deep copy.
func (s Summary) Clone() Summary {
	s.Facts = slices.Clone(s.Facts)
	s.ReferencedSessions = slices.Clone(s.ReferencedSessions)
	s.ReferencedEvents = slices.Clone(s.ReferencedEvents)
	return s
}

// JSON is the summary as compact JSON with every list present ([] rather
// than null), as prompts and snapshots show it.
func (s Summary) JSON() []byte {
	if s.Facts == nil {
		s.Facts = []Fact{}
	}
	if s.ReferencedSessions == nil {
		s.ReferencedSessions = []string{}
	}
	if s.ReferencedEvents == nil {
		s.ReferencedEvents = []string{}
	}
	b, _ := json.Marshal(s) // strings and lists of them always marshal
	return b
}

// Delta modes.
const (
	ModeAppend    = "append"
	ModeOverwrite = "overwrite"
)

// SessionRef prefixes a reference to another session in a delta's
// add_references and remove_references ("session:<id>"); any other
// reference names an event of this session by its hash or a prefix of it.
const SessionRef = "session:"

// Delta is a memory delta (design §11.3), the only way a summary changes:
//
//	{"memory_delta": {"mode": "append|overwrite", "summary_update": "...",
//	  "add_references": ["hash"], "remove_references": ["hash"],
//	  "add_fact": {...}, "remove_fact": {...}}}
//
// add_fact and remove_fact take one object as the design shows, or a list
// of them, so that one compaction can fold several facts.
type Delta struct {
	Mode             string   `json:"mode"`
	SummaryUpdate    string   `json:"summary_update,omitempty"`
	AddReferences    []string `json:"add_references,omitempty"`
	RemoveReferences []string `json:"remove_references,omitempty"`
	AddFact          Facts    `json:"add_fact,omitempty"`
	RemoveFact       Facts    `json:"remove_fact,omitempty"`
}

// Facts is one fact or a list of them; it marshals as a list.
type Facts []Fact

// UnmarshalJSON takes an object or an array of objects.
func (f *Facts) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	switch {
	case bytes.Equal(b, []byte("null")):
		*f = nil
		return nil
	case len(b) > 0 && b[0] == '{':
		var one Fact
		if err := strictUnmarshal(b, &one); err != nil {
			return err
		}
		*f = Facts{one}
		return nil
	}
	var many []Fact
	if err := strictUnmarshal(b, &many); err != nil {
		return err
	}
	*f = many
	return nil
}

// ParseDelta reads a delta from JSON: the design's wrapper
// {"memory_delta": {...}} or the bare object. Unknown members are refused.
func ParseDelta(raw []byte) (Delta, error) {
	var wrap struct {
		Delta *json.RawMessage `json:"memory_delta"`
	}
	inner := raw
	if json.Unmarshal(raw, &wrap) == nil && wrap.Delta != nil {
		var check map[string]json.RawMessage
		json.Unmarshal(raw, &check)
		if len(check) != 1 {
			return Delta{}, &DeltaError{Failures: []Failure{{Path: "/", Message: `want only "memory_delta"`}}}
		}
		inner = *wrap.Delta
	}
	var d Delta
	if err := strictUnmarshal(inner, &d); err != nil {
		return Delta{}, &DeltaError{Failures: []Failure{{Path: "/memory_delta", Message: err.Error()}}}
	}
	return d, nil
}

func strictUnmarshal(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return fmt.Errorf("more than one JSON value")
	}
	return nil
}

// Failure is one reason a delta was refused, at a JSON pointer inside
// {"memory_delta": ...}.
type Failure struct {
	Path    string `json:"path"`
	Message string `json:"message"`
}

// DeltaError lists every reason a delta was refused; the summary is
// unchanged.
type DeltaError struct {
	Failures []Failure
}

func (e *DeltaError) Error() string {
	parts := make([]string, len(e.Failures))
	for i, f := range e.Failures {
		parts[i] = f.Path + ": " + f.Message
	}
	return "memory delta refused: " + strings.Join(parts, "; ")
}

// Limits bound what a delta may make of a summary.
type Limits struct {
	// MaxBytes bounds the summary's JSON; a delta that would pass it is
	// refused (the model should overwrite to condense instead).
	MaxBytes int
	// Resolve maps a reference (an event hash or a prefix of at least 8
	// hex digits) to the full hash of an event of the session; nil accepts
	// every reference as it is.
	Resolve func(ref string) (hash string, ok bool)
}

// Apply validates d against s and returns the summary it makes; s is not
// changed. A delta that fails validation changes nothing and is reported as
// a *DeltaError listing every failure:
//
//   - mode must be append or overwrite; overwrite needs a summary_update
//     (a delta may not wipe the summary);
//   - a delta must change something;
//   - every event reference and source_event must resolve to an event of
//     the session; a removed reference or fact must be present;
//   - a fact needs a key and a value; keys are unique (adding an existing
//     key replaces its value);
//   - the result must fit in MaxBytes.
func Apply(s Summary, d Delta, lim Limits) (Summary, error) {
	var fs []Failure
	fail := func(path, format string, args ...any) {
		fs = append(fs, Failure{Path: "/memory_delta" + path, Message: fmt.Sprintf(format, args...)})
	}
	out := s.Clone()
	switch d.Mode {
	case ModeAppend:
		if u := strings.TrimSpace(d.SummaryUpdate); u != "" {
			if out.Summary != "" {
				out.Summary += "\n"
			}
			out.Summary += u
		}
	case ModeOverwrite:
		if strings.TrimSpace(d.SummaryUpdate) == "" {
			fail("/summary_update", "overwrite needs the new summary text; an empty overwrite would lose the summary")
		}
		out.Summary = strings.TrimSpace(d.SummaryUpdate)
	case "":
		fail("/mode", "required: append or overwrite")
	default:
		fail("/mode", "%q is not append or overwrite", d.Mode)
	}
	if d.Mode != ModeOverwrite && strings.TrimSpace(d.SummaryUpdate) == "" && len(d.AddReferences) == 0 &&
		len(d.RemoveReferences) == 0 && len(d.AddFact) == 0 && len(d.RemoveFact) == 0 {
		fail("", "the delta changes nothing")
	}
	resolve := func(path, ref string) (string, bool) {
		ref = strings.TrimSpace(ref)
		if ref == "" {
			fail(path, "empty reference")
			return "", false
		}
		if lim.Resolve == nil {
			return ref, true
		}
		h, ok := lim.Resolve(ref)
		if !ok {
			fail(path, "%q names no event of this session; cite an event id shown to you", ref)
		}
		return h, ok
	}
	for i, r := range d.RemoveReferences {
		path := fmt.Sprintf("/remove_references/%d", i)
		if id, ok := strings.CutPrefix(r, SessionRef); ok {
			if j := slices.Index(out.ReferencedSessions, id); j >= 0 {
				out.ReferencedSessions = slices.Delete(out.ReferencedSessions, j, j+1)
			} else {
				fail(path, "the summary does not reference the session %q", id)
			}
			continue
		}
		j := slices.IndexFunc(out.ReferencedEvents, func(h string) bool { return r != "" && strings.HasPrefix(h, r) })
		if j < 0 {
			fail(path, "the summary does not reference %q", r)
			continue
		}
		out.ReferencedEvents = slices.Delete(out.ReferencedEvents, j, j+1)
	}
	for i, r := range d.AddReferences {
		path := fmt.Sprintf("/add_references/%d", i)
		if id, ok := strings.CutPrefix(r, SessionRef); ok {
			if strings.TrimSpace(id) == "" {
				fail(path, "empty session id")
			} else if !slices.Contains(out.ReferencedSessions, id) {
				out.ReferencedSessions = append(out.ReferencedSessions, id)
			}
			continue
		}
		if h, ok := resolve(path, r); ok && !slices.Contains(out.ReferencedEvents, h) {
			out.ReferencedEvents = append(out.ReferencedEvents, h)
		}
	}
	for i, f := range d.RemoveFact {
		path := fmt.Sprintf("/remove_fact/%d/key", i)
		j := slices.IndexFunc(out.Facts, func(g Fact) bool { return g.Key == f.Key })
		if f.Key == "" {
			fail(path, "required: the key of the fact to remove")
		} else if j < 0 {
			fail(path, "the summary has no fact %q", f.Key)
		} else {
			out.Facts = slices.Delete(out.Facts, j, j+1)
		}
	}
	for i, f := range d.AddFact {
		path := fmt.Sprintf("/add_fact/%d", i)
		f.Key, f.Value = strings.TrimSpace(f.Key), strings.TrimSpace(f.Value)
		if f.Key == "" {
			fail(path+"/key", "required")
		}
		if f.Value == "" {
			fail(path+"/value", "required")
		}
		if f.SourceEvent != "" {
			h, ok := resolve(path+"/source_event", f.SourceEvent)
			if !ok {
				continue
			}
			f.SourceEvent = h
		}
		if f.Key == "" || f.Value == "" {
			continue
		}
		if j := slices.IndexFunc(out.Facts, func(g Fact) bool { return g.Key == f.Key }); j >= 0 {
			out.Facts[j] = f
		} else {
			out.Facts = append(out.Facts, f)
		}
	}
	if len(fs) == 0 && lim.MaxBytes > 0 {
		if n := len(out.JSON()); n > lim.MaxBytes {
			fail("", "the summary would be %d bytes, over its limit of %d; overwrite it with a shorter one", n, lim.MaxBytes)
		}
	}
	if len(fs) > 0 {
		return s, &DeltaError{Failures: fs}
	}
	return out, nil
}
