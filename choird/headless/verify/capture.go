package verify

import (
	"fmt"
	"sync"
)

// capture keeps the first and the last half of max bytes written to it, and
// counts all of them. It is safe for the two streams of a container log.
type capture struct {
	mu    sync.Mutex
	max   int64
	head  []byte
	tail  []byte // a ring of max/2 bytes once the head is full
	pos   int    // next write position in tail
	full  bool   // tail has wrapped
	total int64
}

func newCapture(max int64) *capture { return &capture{max: max} }

func (c *capture) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := len(p)
	c.total += int64(n)
	headMax := int(c.max - c.max/2)
	if room := headMax - len(c.head); room > 0 {
		k := min(room, len(p))
		c.head = append(c.head, p[:k]...)
		p = p[k:]
	}
	tailMax := int(c.max / 2)
	if tailMax == 0 {
		return n, nil
	}
	if c.tail == nil && len(p) > 0 {
		c.tail = make([]byte, tailMax)
	}
	if len(p) > tailMax {
		p = p[len(p)-tailMax:]
	}
	for len(p) > 0 {
		k := copy(c.tail[c.pos:], p)
		p = p[k:]
		c.pos += k
		if c.pos == tailMax {
			c.pos, c.full = 0, true
		}
	}
	return n, nil
}

// written is how many bytes were written in all.
func (c *capture) written() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.total
}

// Bytes returns what was kept: everything when it fit, else the head, a
// line saying how much was left out, and the tail.
func (c *capture) Bytes() []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	var tail []byte
	if c.full {
		tail = append(append([]byte{}, c.tail[c.pos:]...), c.tail[:c.pos]...)
	} else {
		tail = append([]byte{}, c.tail[:c.pos]...)
	}
	out := append([]byte{}, c.head...)
	if omitted := c.total - int64(len(c.head)) - int64(len(tail)); omitted > 0 {
		out = append(out, fmt.Sprintf("\n[choir: %d bytes of output omitted]\n", omitted)...)
	}
	return append(out, tail...)
}
