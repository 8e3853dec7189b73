package tool

// Keep returns a registry of the tools f keeps, in the same order, with
// the same manifest hash (the image's, which INIT_HELLO reported): a run
// session offers and runs only those (§15.3, a mood's tool list applied
// mechanically). A tool it drops is neither offered to the model nor
// callable; nil keeps all.
func (r *Registry) Keep(f Filter) *Registry {
	if f == nil {
		return r
	}
	out := &Registry{entries: map[string]*entry{}, wire: map[string]string{}, hash: r.hash}
	for _, name := range r.names {
		e := r.entries[name]
		if !f(e.tool) {
			continue
		}
		out.entries[name] = e
		out.names = append(out.names, name)
	}
	for w, name := range r.wire {
		if _, ok := out.entries[name]; ok {
			out.wire[w] = name
		}
	}
	return out
}
