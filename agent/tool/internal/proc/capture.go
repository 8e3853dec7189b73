package proc

import (
	"fmt"
	"sync"
)

// Capture keeps at most Cap bytes of a stream: the first half and the last
// half, with a marker in place of what was left out, since both the start of
// an output and its end (where errors usually are) matter. It is safe for
// concurrent use.
type Capture struct {
	mu    sync.Mutex
	cap   int
	head  []byte
	tail  []byte // grows to 2*half, then is cut back to the last half
	total int64
}

// NewCapture returns a capture of at most limit bytes (at least 2).
func NewCapture(limit int) *Capture {
	if limit < 2 {
		limit = 2
	}
	return &Capture{cap: limit}
}

// Write keeps what fits and counts the rest; it never fails.
func (c *Capture) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := len(p)
	c.total += int64(n)
	half := c.cap / 2
	if room := half - len(c.head); room > 0 {
		k := min(room, len(p))
		c.head = append(c.head, p[:k]...)
		p = p[k:]
	}
	tailCap := c.cap - half
	if len(p) >= tailCap {
		c.tail = append(c.tail[:0], p[len(p)-tailCap:]...)
		return n, nil
	}
	c.tail = append(c.tail, p...)
	if len(c.tail) > 2*tailCap {
		c.tail = append(c.tail[:0], c.tail[len(c.tail)-tailCap:]...)
	}
	return n, nil
}

// Output is a finished capture.
type Output struct {
	// Text is the kept bytes, with a marker line where bytes were left out.
	Text string
	// Total is how many bytes the stream carried.
	Total int64
	// Truncated reports that some were left out.
	Truncated bool
}

// Output returns what was kept.
func (c *Capture) Output() Output {
	c.mu.Lock()
	defer c.mu.Unlock()
	tailCap := c.cap - c.cap/2
	tail := c.tail
	if len(tail) > tailCap {
		tail = tail[len(tail)-tailCap:]
	}
	omitted := c.total - int64(len(c.head)) - int64(len(tail))
	if omitted <= 0 {
		return Output{Text: string(c.head) + string(tail), Total: c.total}
	}
	return Output{
		Text:      string(c.head) + Marker(omitted) + string(tail),
		Total:     c.total,
		Truncated: true,
	}
}

// Marker is the line that stands for omitted bytes.
func Marker(omitted int64) string {
	return fmt.Sprintf("\n[choir: %d bytes omitted]\n", omitted)
}
