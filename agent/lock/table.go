package lock

// A table records what is held, key by key, with counts that make the
// hierarchy checks cheap: a request looks at its own key, at the keys that
// contain it, and at two counters for the keys inside it.
type table struct {
	nodes map[Key]*node
	free  []*node // pruned nodes kept for reuse, so a grant rarely allocates
}

// A node is one key of the table. It exists while the key is held or while
// something inside it is held.
type node struct {
	mode   Mode    // how the key itself is held; 0 when it is not
	owners []Owner // its holders: one in X, one or more in S
	below  int     // locks held on keys strictly inside this one
	belowX int     // of which in X
}

// grant records that owner holds r.
func (t *table) grant(owner Owner, r Request) {
	n := t.node(r.Key)
	n.mode = r.Mode
	n.owners = append(n.owners, owner)
	for p, ok := parent(r.Key); ok; p, ok = parent(p) {
		n := t.node(p)
		n.below++
		if r.Mode == X {
			n.belowX++
		}
	}
}

// drop forgets that owner holds r.
func (t *table) drop(owner Owner, r Request) {
	if n := t.nodes[r.Key]; n != nil {
		for i, o := range n.owners {
			if o == owner {
				n.owners = append(n.owners[:i], n.owners[i+1:]...)
				break
			}
		}
		if len(n.owners) == 0 {
			n.mode = 0
		}
		t.prune(r.Key, n)
	}
	for p, ok := parent(r.Key); ok; p, ok = parent(p) {
		if n := t.nodes[p]; n != nil {
			n.below--
			if r.Mode == X {
				n.belowX--
			}
			t.prune(p, n)
		}
	}
}

// node returns the node of k, adding it if needed.
func (t *table) node(k Key) *node {
	if n := t.nodes[k]; n != nil {
		return n
	}
	var n *node
	if last := len(t.free) - 1; last >= 0 {
		n, t.free = t.free[last], t.free[:last]
	} else {
		n = &node{}
	}
	if t.nodes == nil {
		t.nodes = map[Key]*node{}
	}
	t.nodes[k] = n
	return n
}

// maxFree bounds the nodes kept for reuse.
const maxFree = 64

// prune removes a node that no longer records anything.
func (t *table) prune(k Key, n *node) {
	if n.mode != 0 || n.below != 0 {
		return
	}
	delete(t.nodes, k)
	if len(t.free) < maxFree {
		t.free = append(t.free, n) // zero counts, no owners, capacity kept
	}
}

// blocks reports whether a lock held by someone other than owner excludes
// r. The caller guarantees that owner itself holds nothing.
func (t *table) blocks(owner Owner, r Request) bool {
	if n := t.nodes[r.Key]; n != nil {
		if n.mode != 0 && (n.mode == X || r.Mode == X) {
			return true // the key itself
		}
		if n.belowX > 0 || (r.Mode == X && n.below > 0) {
			return true // something inside it
		}
	}
	for p, ok := parent(r.Key); ok; p, ok = parent(p) {
		n := t.nodes[p]
		if n == nil || n.mode == 0 || (n.mode == S && r.Mode == S) {
			continue
		}
		if p != Workspace || !t.dirtyRead(owner, r) {
			return true // something containing it
		}
	}
	return false
}

// dirtyRead reports whether r by owner is a dirty read: the edge asking
// file S while a core holds workspace X. Such a request is not blocked by
// that workspace X, nor by the queue.
func (t *table) dirtyRead(owner Owner, r Request) bool {
	if !owner.IsEdge() || r.Mode != S || !r.Key.isFile() {
		return false
	}
	ws := t.nodes[Workspace]
	return ws != nil && ws.mode == X && ws.owners[0].IsCore()
}
