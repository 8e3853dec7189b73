package redact

import "sort"

// matcher is an Aho-Corasick automaton over the normalised forms of every
// secret value: a text is scanned once, in time linear in its length,
// whatever the number of secrets. It is immutable once compiled.
type matcher struct {
	secrets int
	markers []string // secret index -> marker

	class  [256]uint16 // byte -> column of delta; 0 for bytes no form uses
	stride int
	delta  []int32 // state*stride + class -> next state (failures folded in)
	// outLen and outSec describe the longest form ending at a state (its
	// own, or the longest along its failure chain): a shorter one ending
	// at the same byte lies inside it.
	outLen []int32
	outSec []int32
	ring   int // a power of two ≥ the longest form
}

// skippable marks the bytes a transparent run may start with.
var skippable = [256]bool{' ': true, '\t': true, '\r': true, '\n': true, '\\': true}

// transparent reports the length of the run of line breaks at i, with the
// horizontal spaces around them: raw CR, LF, spaces and tabs, and their
// JSON escapes (\n, \r, \t, with any number of backslashes). Such a run is
// skipped while matching, so a value folded over lines is still found. When
// there is none, no run starts before none either.
func transparent[T ~string | ~[]byte](text T, i int) (n, none int) {
	j, broke := i, false
loop:
	for j < len(text) {
		switch text[j] {
		case ' ', '\t':
			j++
		case '\r', '\n':
			j, broke = j+1, true
		case '\\':
			k := j
			for k < len(text) && text[k] == '\\' {
				k++
			}
			if k == len(text) {
				break loop
			}
			switch text[k] {
			case 'n', 'r':
				j, broke = k+1, true
			case 't':
				j = k + 1
			default:
				break loop
			}
		default:
			break loop
		}
	}
	if broke {
		return j - i, 0
	}
	return 0, j
}

// normalise removes the transparent runs of a form.
func normalise(f string) string {
	out := make([]byte, 0, len(f))
	none := 0
	for i := 0; i < len(f); {
		if skippable[f[i]] && i >= none {
			n, nn := transparent(f, i)
			if n > 0 {
				i += n
				continue
			}
			none = nn
		}
		out = append(out, f[i])
		i++
	}
	return string(out)
}

// compile builds the matcher for known (value -> secret name); nil when no
// value is long enough to redact.
func compile(known map[string]string) *matcher {
	values := make([]string, 0, len(known))
	for v := range known {
		if len(normalise(v)) >= MinLen {
			values = append(values, v)
		}
	}
	if len(values) == 0 {
		return nil
	}
	sort.Strings(values) // a deterministic automaton
	m := &matcher{secrets: len(values)}
	type pattern struct {
		text   string
		secret int32
	}
	var pats []pattern
	for i, v := range values {
		m.markers = append(m.markers, Marker(known[v]))
		seen := map[string]bool{}
		for _, f := range forms(v) {
			n := normalise(f)
			if len(n) >= MinLen && !seen[n] {
				seen[n] = true
				pats = append(pats, pattern{n, int32(i)})
			}
		}
	}
	// Byte classes: one column per byte some form uses, plus column 0.
	longest := 0
	for _, p := range pats {
		for i := 0; i < len(p.text); i++ {
			if m.class[p.text[i]] == 0 {
				m.stride++
				m.class[p.text[i]] = uint16(m.stride)
			}
		}
		longest = max(longest, len(p.text))
	}
	m.stride++
	m.ring = 1
	for m.ring < longest {
		m.ring <<= 1
	}
	// The trie.
	newState := func() int32 {
		m.delta = append(m.delta, make([]int32, m.stride)...)
		m.outLen = append(m.outLen, 0)
		m.outSec = append(m.outSec, 0)
		return int32(len(m.outLen) - 1)
	}
	newState() // the root, 0
	depth := []int32{0}
	for _, p := range pats {
		s := int32(0)
		for i := 0; i < len(p.text); i++ {
			c := int(m.class[p.text[i]])
			next := m.delta[int(s)*m.stride+c]
			if next == 0 {
				next = newState()
				depth = append(depth, depth[s]+1)
				m.delta[int(s)*m.stride+c] = next
			}
			s = next
		}
		if m.outLen[s] == 0 { // identical forms of two values: the first wins
			m.outLen[s], m.outSec[s] = depth[s], p.secret
		}
	}
	// Failure links, breadth first, folded into delta.
	fail := make([]int32, len(m.outLen))
	queue := make([]int32, 0, len(m.outLen))
	for c := 0; c < m.stride; c++ {
		if u := m.delta[c]; u != 0 {
			queue = append(queue, u)
		}
	}
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		if m.outLen[s] == 0 {
			m.outLen[s], m.outSec[s] = m.outLen[fail[s]], m.outSec[fail[s]]
		}
		row := int(s) * m.stride
		frow := int(fail[s]) * m.stride
		for c := 0; c < m.stride; c++ {
			u := m.delta[row+c]
			if u == 0 || depth[u] != depth[s]+1 {
				m.delta[row+c] = m.delta[frow+c]
				continue
			}
			fail[u] = m.delta[frow+c]
			queue = append(queue, u)
		}
	}
	return m
}

// span is a stretch of text to replace and the secrets found in it, in
// order of appearance.
type span struct {
	start, end int
	secrets    []int32
}

// scan finds every stretch of text holding a secret value, merged where
// they overlap, in order. With first, it stops at the first.
func scan[T ~string | ~[]byte](m *matcher, text T, first bool) []span {
	var small [512]int
	var ring []int
	if m.ring <= len(small) {
		ring = small[:m.ring]
	} else {
		ring = make([]int, m.ring)
	}
	mask := m.ring - 1
	var spans []span
	delta, class, outLen, stride := m.delta, &m.class, m.outLen, m.stride
	state, fed, none := int32(0), 0, 0
	for i := 0; i < len(text); {
		c := text[i]
		if skippable[c] && i >= none {
			n, nn := transparent(text, i)
			if n > 0 {
				i += n
				continue
			}
			none = nn
		}
		state = delta[int(state)*stride+int(class[c])]
		ring[fed&mask] = i
		fed++
		if l := int(outLen[state]); l > 0 {
			s := span{start: ring[(fed-l)&mask], end: i + 1, secrets: []int32{m.outSec[state]}}
			if first {
				return []span{s}
			}
			spans = addSpan(spans, s)
		}
		i++
	}
	return spans
}

// addSpan appends s, merging it with the spans it overlaps. Spans arrive in
// order of their ends.
func addSpan(spans []span, s span) []span {
	for len(spans) > 0 && s.start < spans[len(spans)-1].end {
		last := spans[len(spans)-1]
		spans = spans[:len(spans)-1]
		s.start = min(s.start, last.start)
		s.end = max(s.end, last.end)
		merged := last.secrets
		for _, id := range s.secrets {
			dup := false
			for _, x := range merged {
				dup = dup || x == id
			}
			if !dup {
				merged = append(merged, id)
			}
		}
		s.secrets = merged
	}
	return append(spans, s)
}

// rewrite appends text to dst with each span replaced by its markers.
func rewrite[T ~string | ~[]byte](m *matcher, dst []byte, text T, spans []span) []byte {
	prev := 0
	for _, s := range spans {
		dst = append(dst, text[prev:s.start]...)
		for _, id := range s.secrets {
			dst = append(dst, m.markers[id]...)
		}
		prev = s.end
	}
	return append(dst, text[prev:]...)
}
