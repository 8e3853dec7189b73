package docker

import (
	"context"
	"time"
)

// Service is a service as the manager describes it (GET /services/{id}).
type Service struct {
	ID        string
	Version   ObjectVersion
	CreatedAt time.Time
	UpdatedAt time.Time
	Spec      ServiceSpec
}

// ServiceInspect describes a service, by id or name, asked of a manager.
// A missing service is an *APIError for which IsNotFound is true.
func (c *Client) ServiceInspect(ctx context.Context, id string) (Service, error) {
	var s Service
	p, err := objectPath("services", id, "")
	if err != nil {
		return s, err
	}
	err = c.do(ctx, request{method: "GET", path: p}, &s)
	return s, err
}
