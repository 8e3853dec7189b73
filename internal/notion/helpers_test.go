package notion_test

import (
	"testing"
	"time"

	"choir/internal/notion"
	"choir/testkit/notiontest"
)

const token = "secret_notion-Test-Token-6Hv"

func client(t *testing.T, fake *notiontest.Server, mod func(*notion.Config)) *notion.Client {
	t.Helper()
	cfg := notion.Config{Endpoint: fake.URL(), Token: token, Timeout: 5 * time.Second}
	if mod != nil {
		mod(&cfg)
	}
	c, err := notion.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func ptr[T any](v T) *T { return &v }
