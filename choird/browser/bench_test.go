package browser

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"choir/testkit/browsertest"
)

// BenchmarkBrowseText is one choir.web.browse call in text mode on a short
// loopback page, in a tab that is already open (navigate, read, answer).
func BenchmarkBrowseText(b *testing.B) {
	w, _ := newWorker(b)
	site := browsertest.Serve(b, "127.0.0.1")
	in := json.RawMessage(`{"url":"` + site.URL + `/hello"}`)
	if _, err := w.Browse(context.Background(), "bench", "s", in); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		if _, err := w.Browse(context.Background(), "bench", "s", in); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkContextCreateDestroy is an agent's session start and end as the
// worker sees them: a context made, one tab opened on a loopback page, and
// the context closed.
func BenchmarkContextCreateDestroy(b *testing.B) {
	w, _ := newWorker(b)
	site := browsertest.Serve(b, "127.0.0.1")
	in := json.RawMessage(`{"url":"` + site.URL + `/hello"}`)
	if _, err := w.Browse(context.Background(), "warm", "s", in); err != nil {
		b.Fatal(err)
	}
	b.Run("empty", func(b *testing.B) {
		i := 0
		for b.Loop() {
			i++
			a, s := "bench", fmt.Sprint("s", i)
			ac, err := w.agent(a, s)
			if err != nil {
				b.Fatal(err)
			}
			ac.mu.Lock()
			_, err = w.ensureContext(a, ac)
			ac.mu.Unlock()
			if err != nil {
				b.Fatal(err)
			}
			w.Close(a, s)
		}
	})
	b.Run("with_a_page", func(b *testing.B) {
		i := 0
		for b.Loop() {
			i++
			a, s := "bench", fmt.Sprint("p", i)
			if _, err := w.Browse(context.Background(), a, s, in); err != nil {
				b.Fatal(err)
			}
			w.Close(a, s)
		}
	})
}
