package docker

import (
	"context"
	"net/http"
	"testing"

	"choir/internal/metrics"
)

func TestEngineErrorsAreCounted(t *testing.T) {
	status := http.StatusInternalServerError
	c := fakeClient(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		w.Write([]byte(`{"message":"boom"}`))
	})
	server, unreachable := metrics.EngineErrors.With("server"), metrics.EngineErrors.With("unreachable")
	s0, u0 := server.Value(), unreachable.Value()
	ctx := context.Background()
	if _, err := c.ContainerInspect(ctx, "x"); err == nil {
		t.Fatal("inspect answered 500 succeeded")
	}
	if got := server.Value(); got != s0+1 {
		t.Errorf("server errors after a 500 = %v; want %v", got, s0+1)
	}
	status = http.StatusNotFound // the engine's answer about the request, not its failure
	c.ContainerInspect(ctx, "x")
	if got := server.Value(); got != s0+1 {
		t.Errorf("server errors after a 404 = %v; want %v (unchanged)", got, s0+1)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	c.ContainerInspect(cancelled, "x")
	if got := unreachable.Value(); got != u0 {
		t.Errorf("unreachable after a cancelled request = %v; want %v (unchanged)", got, u0)
	}
	c.Close()
	gone, err := New(ctx, "unix:///nonexistent/choir-test/docker.sock")
	if err == nil {
		gone.Close()
		t.Fatal("New on a missing socket succeeded")
	}
	if got := unreachable.Value(); got != u0+1 {
		t.Errorf("unreachable after a missing socket = %v; want %v", got, u0+1)
	}
}
