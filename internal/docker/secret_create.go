package docker

import (
	"context"
	"time"
)

// SecretSpec is a Swarm secret. Data is sent base64-encoded (a []byte in
// JSON) and never comes back: an inspect or a list shows the name and
// labels only.
type SecretSpec struct {
	Name   string
	Labels map[string]string `json:",omitempty"`
	Data   []byte            `json:",omitempty"` // at most 500 KiB
}

// Secret is a secret as the manager lists it.
type Secret struct {
	ID        string
	Version   ObjectVersion
	CreatedAt time.Time
	UpdatedAt time.Time
	Spec      SecretSpec // without Data
}

// SecretCreate stores a secret in the swarm's encrypted Raft log, asked of
// a manager, and returns its id. Secrets are immutable: to change one,
// create another and point the service at it. A name in use is an
// *APIError for which IsConflict is true.
func (c *Client) SecretCreate(ctx context.Context, spec SecretSpec) (string, error) {
	r, err := jsonRequest("POST", "/secrets/create", nil, spec)
	if err != nil {
		return "", err
	}
	var out struct{ ID string }
	if err := c.do(ctx, r, &out); err != nil {
		return "", err
	}
	return out.ID, nil
}
