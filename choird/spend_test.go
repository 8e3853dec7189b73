package main

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"choir/choird/store"
	"choir/internal/embed"
)

type fakeEmbedder struct{ err error }

func (f fakeEmbedder) Embed(_ context.Context, texts []string) ([][]float32, error) {
	if f.err != nil {
		return nil, f.err
	}
	return make([][]float32, len(texts)), nil
}
func (fakeEmbedder) Dimensions() int { return 3 }
func (fakeEmbedder) Model() string   { return "text-embed" }

// choird's own embedding calls are in the usage ledger as agent "-" (the
// installation's caps count them); a failed call counts no tokens; the
// offline hashing embedder makes no call and is not metered.
func TestEmbeddingCallsAreRecorded(t *testing.T) {
	st, ctx := alphaStore(t)
	log := slog.New(slog.DiscardHandler)
	if _, ok := meterEmbeddings(embed.Hashing{}, st, log).(embed.Hashing); !ok {
		t.Error("the hashing embedder was wrapped")
	}
	ok := meterEmbeddings(fakeEmbedder{}, st, log)
	if _, err := ok.Embed(ctx, []string{"twelve bytes", "1234"}); err != nil {
		t.Fatal(err)
	}
	bad := meterEmbeddings(fakeEmbedder{err: errors.New("503")}, st, log)
	if _, err := bad.Embed(ctx, []string{"lost"}); err == nil {
		t.Fatal("the embedder's error was lost")
	}
	rows, err := st.Usage(ctx, store.UsageQuery{By: "agent", Since: time.Now().Add(-time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || rows[0].Key != "-" || rows[0].Calls != 2 || rows[0].Failed != 1 || rows[0].PromptTokens != 4 {
		t.Errorf("usage = %+v; want agent -: 2 calls, 1 failed, 4 estimated tokens", rows)
	}
}
