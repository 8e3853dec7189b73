package docker

import (
	"context"
	"errors"
	"net/http"
	"testing"
)

func TestAPIErrorDecoding(t *testing.T) {
	tests := []struct {
		name        string
		status      int
		contentType string
		body        string
		wantMessage string
		notFound    bool
		conflict    bool
	}{
		{"engine JSON 404", 404, "application/json", `{"message":"No such container: nope"}`, "No such container: nope", true, false},
		{"engine JSON 409", 409, "application/json", `{"message":"Conflict. The container name \"/x\" is already in use"}`, `Conflict. The container name "/x" is already in use`, false, true},
		{"plain text 500", 500, "text/plain", "boom\n", "boom", false, false},
		{"empty 502", 502, "", "", "Bad Gateway", false, false},
		{"JSON without message", 400, "application/json", `{"error":"x"}`, `{"error":"x"}`, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := fakeClient(t, func(w http.ResponseWriter, r *http.Request) {
				if tt.contentType != "" {
					w.Header().Set("Content-Type", tt.contentType)
				}
				w.WriteHeader(tt.status)
				w.Write([]byte(tt.body))
			})
			_, err := c.ContainerInspect(context.Background(), "nope")
			var ae *APIError
			if !errors.As(err, &ae) {
				t.Fatalf("ContainerInspect = %v (%T); want *APIError", err, err)
			}
			if ae.Status != tt.status || ae.Message != tt.wantMessage {
				t.Errorf("APIError = {%d, %q}; want {%d, %q}", ae.Status, ae.Message, tt.status, tt.wantMessage)
			}
			if ae.Method != "GET" || ae.Path != "/containers/nope/json" {
				t.Errorf("APIError request = %s %s; want GET /containers/nope/json", ae.Method, ae.Path)
			}
			if IsNotFound(err) != tt.notFound || IsConflict(err) != tt.conflict {
				t.Errorf("IsNotFound, IsConflict = %v, %v; want %v, %v", IsNotFound(err), IsConflict(err), tt.notFound, tt.conflict)
			}
		})
	}
}

func TestInvalidNamesNeverReachTheEngine(t *testing.T) {
	c := fakeClient(t, func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("request %s %s reached the engine", r.Method, r.URL.Path)
	})
	ctx := context.Background()
	for _, id := range []string{"", "a/../../images/x", "x?force=1", "/"} {
		if _, err := c.ContainerInspect(ctx, id); err == nil {
			t.Errorf("ContainerInspect(%q) = nil error; want a refusal", id)
		}
	}
	for _, ref := range []string{"", "a/../b", "x#y", "a//b"} {
		if _, err := c.ImageInspect(ctx, ref); err == nil {
			t.Errorf("ImageInspect(%q) = nil error; want a refusal", ref)
		}
		if _, err := c.DistributionInspect(ctx, ref, RegistryAuth{}); err == nil {
			t.Errorf("DistributionInspect(%q) = nil error; want a refusal", ref)
		}
	}
	for _, id := range []string{"", "..", "a/../../swarm", "x?force=1"} {
		if _, err := c.ServiceInspect(ctx, id); err == nil {
			t.Errorf("ServiceInspect(%q) = nil error; want a refusal", id)
		}
		if _, err := c.NodeInspect(ctx, id); err == nil {
			t.Errorf("NodeInspect(%q) = nil error; want a refusal", id)
		}
		if err := c.SecretRemove(ctx, id); err == nil {
			t.Errorf("SecretRemove(%q) = nil error; want a refusal", id)
		}
	}
}

func TestSplitRef(t *testing.T) {
	tests := []struct{ in, repo, tag string }{
		{"busybox", "busybox", ""},
		{"busybox:1.36", "busybox", "1.36"},
		{"localhost:5000/choir/agent", "localhost:5000/choir/agent", ""},
		{"localhost:5000/choir/agent:v2", "localhost:5000/choir/agent", "v2"},
		{"app@sha256:abcd", "app@sha256:abcd", ""},
	}
	for _, tt := range tests {
		repo, tag := SplitRef(tt.in)
		if repo != tt.repo || tag != tt.tag {
			t.Errorf("SplitRef(%q) = %q, %q; want %q, %q", tt.in, repo, tag, tt.repo, tt.tag)
		}
	}
}
