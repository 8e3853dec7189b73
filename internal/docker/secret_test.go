package docker

import (
	"context"
	"io"
	"net/http"
	"testing"
)

func TestSecretCreateListRemove(t *testing.T) {
	var body []byte
	var filters, removed string
	c := fakeClient(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.Method == "POST" && r.URL.Path == "/v1.41/secrets/create":
			body, _ = io.ReadAll(r.Body)
			w.WriteHeader(http.StatusCreated)
			io.WriteString(w, `{"ID":"3bu4"}`)
		case r.Method == "GET" && r.URL.Path == "/v1.41/secrets":
			filters = r.URL.Query().Get("filters")
			io.WriteString(w, `[{"ID":"3bu4","Version":{"Index":36},"CreatedAt":"2026-11-29T04:25:48.1Z","UpdatedAt":"2026-11-29T04:25:48.1Z","Spec":{"Name":"tsec","Labels":{"choir.agent":"alice"}}}]`)
		case r.Method == "DELETE" && r.URL.Path == "/v1.41/secrets/3bu4":
			removed = "3bu4"
			w.WriteHeader(http.StatusNoContent)
		case r.Method == "DELETE":
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, `{"message":"rpc error: code = InvalidArgument desc = secret 'tsec' is in use by the following service: tsvc"}`)
		}
	})
	ctx := context.Background()
	id, err := c.SecretCreate(ctx, SecretSpec{Name: "tsec", Labels: map[string]string{"choir.agent": "alice"}, Data: []byte("s3cr3t")})
	if err != nil || id != "3bu4" {
		t.Fatalf("SecretCreate = %q, %v; want 3bu4", id, err)
	}
	if !sameJSON(t, body, `{"Name":"tsec","Labels":{"choir.agent":"alice"},"Data":"czNjcjN0"}`) {
		t.Errorf("body = %s; want the data base64-encoded", body)
	}
	list, err := c.SecretList(ctx, Filters{"label": {"choir.agent=alice"}})
	if err != nil || len(list) != 1 || list[0].ID != "3bu4" || list[0].Spec.Name != "tsec" || list[0].Version.Index != 36 || list[0].Spec.Data != nil {
		t.Errorf("SecretList = %+v, %v; want tsec without data", list, err)
	}
	if !sameJSON(t, []byte(filters), `{"label":["choir.agent=alice"]}`) {
		t.Errorf("filters = %s", filters)
	}
	if err := c.SecretRemove(ctx, "3bu4"); err != nil || removed != "3bu4" {
		t.Errorf("SecretRemove = %v; want DELETE /secrets/3bu4", err)
	}
	if err := c.SecretRemove(ctx, "tsec"); !IsBadRequest(err) {
		t.Errorf("SecretRemove of a secret in use = %v; want a bad request", err)
	}
}
