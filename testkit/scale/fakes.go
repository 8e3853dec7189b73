package main

import (
	"net/http"
	"strings"
	"sync"
	"time"

	"choir/testkit/demomodel"
)

// timedModel is the offline demo model with a stopwatch: it records how
// long each chat completion took to answer, so the table can set the
// console's latency beside the model's own.
type timedModel struct {
	demo demomodel.Server
	mu   sync.Mutex
	took []time.Duration
}

func (m *timedModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	m.demo.ServeHTTP(w, r)
	if strings.HasSuffix(r.URL.Path, "/chat/completions") {
		m.mu.Lock()
		m.took = append(m.took, time.Since(start))
		m.mu.Unlock()
	}
}

// take returns the answers' times recorded since the last take.
func (m *timedModel) take() []time.Duration {
	m.mu.Lock()
	defer m.mu.Unlock()
	t := m.took
	m.took = nil
	return t
}
