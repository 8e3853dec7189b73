package main

import (
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// fakeTelegram is the least of the Bot API that choird's gateway needs to
// run the one bot whose DMs the agents are bound to (as in testkit/scale):
// getMe, a long poll that holds for its timeout and brings nothing,
// sendMessage (counted: the outbox's deliveries of choir.dm.send) and true
// for the rest.
type fakeTelegram struct {
	sent  atomic.Int64
	msgID atomic.Int64
	done  chan struct{} // closed when the benchmark ends: releases polls
}

func newFakeTelegram() *fakeTelegram { return &fakeTelegram{done: make(chan struct{})} }

func (f *fakeTelegram) close() {
	select {
	case <-f.done:
	default:
		close(f.done)
	}
}

func (f *fakeTelegram) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// /bot<token>/<method>
	rest, ok := strings.CutPrefix(r.URL.Path, "/bot")
	token, method, ok2 := strings.Cut(rest, "/")
	if !ok || !ok2 || token == "" {
		http.NotFound(w, r)
		return
	}
	params := map[string]any{}
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
		_ = json.Unmarshal(body, &params)
	}
	var result any = true
	switch method {
	case "getMe":
		id, _, _ := strings.Cut(token, ":")
		n, _ := strconv.ParseInt(id, 10, 64)
		result = map[string]any{"id": n, "is_bot": true, "first_name": "scale", "username": "choir_scale_bot"}
	case "getUpdates":
		secs, _ := params["timeout"].(float64)
		select {
		case <-time.After(time.Duration(secs) * time.Second):
		case <-r.Context().Done():
			return
		case <-f.done:
		}
		result = []any{}
	case "sendMessage":
		f.sent.Add(1)
		chat, _ := params["chat_id"].(float64)
		text, _ := params["text"].(string)
		result = map[string]any{"message_id": f.msgID.Add(1), "date": time.Now().Unix(),
			"chat": map[string]any{"id": int64(chat), "type": "private"}, "text": text}
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"ok": true, "result": result})
}
