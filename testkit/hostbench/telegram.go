package hostbench

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// Telegram is the least of the Bot API that choird's gateway needs to run
// the one bot whose DMs a benchmark's agents are bound to: getMe, a long
// poll that holds for its timeout and brings nothing, sendMessage
// (counted) and true for the rest (setMyCommands...). testkit/telegramtest
// is the full fake, but it lives on a testing.TB; a benchmark is not a
// test.
type Telegram struct {
	Addr string // host:port on loopback

	sent  atomic.Int64
	msgID atomic.Int64
	done  chan struct{} // closed by Close: releases polls
	srv   *http.Server
}

// ServeTelegram serves a fake Telegram on loopback (only choird talks to
// it) until Close.
func ServeTelegram() (*Telegram, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	f := &Telegram{Addr: l.Addr().String(), done: make(chan struct{})}
	f.srv = &http.Server{Handler: f}
	go f.srv.Serve(l)
	return f, nil
}

// Sent is how many messages sendMessage has taken.
func (f *Telegram) Sent() int64 { return f.sent.Load() }

// Close releases the polls in flight and stops serving.
func (f *Telegram) Close() {
	select {
	case <-f.done:
	default:
		close(f.done)
	}
	if f.srv != nil {
		f.srv.Close()
	}
}

func (f *Telegram) ServeHTTP(w http.ResponseWriter, r *http.Request) {
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
