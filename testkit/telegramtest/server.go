// Package telegramtest is a pretend Telegram Bot API server for tests, like
// httptest but speaking the Bot API: POST or GET <URL>/bot<token>/<method>
// and GET <URL>/file/bot<token>/<file_path>.
//
// A test registers any number of bots (AddBot), points the code under test
// at URL as its api_base, plays the users (InjectText, InjectDocument,
// InjectPhoto, InjectVoice, InjectAudio, InjectCallback), reads what each bot sent to
// each chat (Sent, Texts, Files, Edits, Answers, Commands) and waits for it
// (WaitSent, Wait) on a condition signalled by every change, with a
// deadline, never by sleeping. FailNext scripts faults: a 429 with
// retry_after, a 409, a 5xx, a proxy's HTML page, a request that hangs
// until the client gives up.
//
// The server decodes requests itself, from JSON bodies, URL-encoded forms,
// multipart forms and query strings alike (the real API takes all four),
// and never imports the client's structs, so a wrong struct tag cannot hide
// on both sides. It answers as the real API does where a client can tell:
// 401 for an unknown token, 404 for an unknown method, 400 with Telegram's
// description for a text over 4096 UTF-16 code units, callback data over 64
// bytes, an edit that changes nothing or a stale callback query, and
// getUpdates' long poll with offset confirmation, allowed_updates and the
// 409 Conflict that ends an older poll when a newer one arrives for the
// same token.
package telegramtest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// BotID is a registered bot's user id: the numeric prefix of its token.
type BotID int64

// DefaultWaitTimeout bounds Wait and WaitSent unless SetWaitTimeout says
// otherwise.
const DefaultWaitTimeout = 10 * time.Second

// Server is a running fake. Its methods are safe for concurrent use; those
// that take a testing.TB, and those that fail the test on a bad argument
// (an unknown BotID), belong on the test's goroutine.
type Server struct {
	t    testing.TB
	srv  *httptest.Server
	done chan struct{} // closed at cleanup: releases waiting handlers

	mu          sync.Mutex
	changed     chan struct{} // closed and replaced on every change
	bots        map[string]*bot
	byID        map[BotID]*bot
	lastBot     BotID
	lastUpdate  int64
	pollSecond  time.Duration
	waitTimeout time.Duration
}

// New starts a fake on 127.0.0.1 and stops it when the test ends.
func New(t testing.TB) *Server {
	t.Helper()
	s := &Server{
		t:           t,
		done:        make(chan struct{}),
		changed:     make(chan struct{}),
		bots:        make(map[string]*bot),
		byID:        make(map[BotID]*bot),
		lastUpdate:  100000,
		pollSecond:  time.Second,
		waitTimeout: DefaultWaitTimeout,
	}
	s.srv = httptest.NewServer(s)
	t.Cleanup(func() {
		close(s.done)
		s.srv.Close()
	})
	return s
}

// URL is the api_base to configure a client with.
func (s *Server) URL() string { return s.srv.URL }

// SetLongPollSecond sets how long one second of a getUpdates timeout lasts
// (default a real second), so that a test of an empty poll need not wait.
func (s *Server) SetLongPollSecond(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pollSecond = d
}

// SetWaitTimeout sets the deadline of Wait and WaitSent.
func (s *Server) SetWaitTimeout(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.waitTimeout = d
}

// AddBot registers a bot. Its id is the token's numeric prefix
// ("123456:ABC" is bot 123456), or the next free id for a token without one.
func (s *Server) AddBot(token, username string) BotID {
	s.t.Helper()
	for _, r := range token {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == ':' || r == '_' || r == '-') {
			s.t.Fatalf("telegramtest: AddBot: token %q has %q; real tokens are letters, digits, ':', '_' and '-'", token, r)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if token == "" || s.bots[token] != nil {
		s.t.Fatalf("telegramtest: AddBot: token %q is empty or already registered", token)
	}
	var id BotID
	if prefix, _, ok := strings.Cut(token, ":"); ok {
		if n, err := strconv.ParseInt(prefix, 10, 64); err == nil && n > 0 {
			id = BotID(n)
		}
	}
	if id == 0 {
		for id = s.lastBot + 1; s.byID[id] != nil; id++ {
		}
	}
	if s.byID[id] != nil {
		s.t.Fatalf("telegramtest: AddBot: bot id %d (from token %q) is already registered", id, token)
	}
	s.lastBot = max(s.lastBot, id)
	b := newBot(id, token, username)
	s.bots[token] = b
	s.byID[id] = b
	return id
}

// bot returns a registered bot; s.mu is held. An unknown id fails the test.
func (s *Server) bot(id BotID) *bot {
	b := s.byID[id]
	if b == nil {
		s.t.Fatalf("telegramtest: no bot %d; register it with AddBot", id)
	}
	return b
}

// notify wakes every waiter: long polls and Wait. s.mu is held.
func (s *Server) notify() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// reply is a handler's answer: a result, or an error description.
type reply struct {
	status     int // 200 for a result
	result     any
	desc       string
	retryAfter int
	raw        string // sent as is, with ctype: a proxy's page
	ctype      string
	hang       bool // answer nothing until the request ends
}

func ok(result any) reply { return reply{status: http.StatusOK, result: result} }

func fail(status int, desc string) reply { return reply{status: status, desc: desc} }

func badRequest(format string, args ...any) reply {
	return fail(http.StatusBadRequest, "Bad Request: "+fmt.Sprintf(format, args...))
}

func writeReply(w http.ResponseWriter, rep reply) {
	if rep.raw != "" {
		w.Header().Set("Content-Type", rep.ctype)
		w.WriteHeader(rep.status)
		_, _ = w.Write([]byte(rep.raw))
		return
	}
	body := map[string]any{"ok": rep.status == http.StatusOK}
	if rep.status == http.StatusOK {
		body["result"] = rep.result
	} else {
		body["error_code"] = rep.status
		body["description"] = rep.desc
		if rep.retryAfter > 0 {
			body["parameters"] = map[string]any{"retry_after": rep.retryAfter}
		}
	}
	b, err := json.Marshal(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(rep.status)
	_, _ = w.Write(b)
}

// handler serves one method for one bot. It is called without s.mu held.
type handler func(s *Server, b *bot, p *params, r *http.Request) reply

// method is one Bot API method the fake serves.
type method struct {
	name string // as documented: "sendMessage"
	h    handler
}

// methods maps each method's lower-case name (the Bot API ignores case) to
// the method.
var methods = map[string]method{}

func init() {
	for name, h := range map[string]handler{
		"getMe":                  (*Server).getMe,
		"getUpdates":             (*Server).getUpdates,
		"sendMessage":            (*Server).sendMessage,
		"sendDocument":           mediaHandler("document"),
		"sendPhoto":              mediaHandler("photo"),
		"sendVoice":              mediaHandler("voice"),
		"sendVideo":              mediaHandler("video"),
		"sendAudio":              mediaHandler("audio"),
		"editMessageText":        (*Server).editMessageText,
		"editMessageReplyMarkup": (*Server).editMessageReplyMarkup,
		"answerCallbackQuery":    (*Server).answerCallbackQuery,
		"setMyCommands":          (*Server).setMyCommands,
		"deleteMyCommands":       (*Server).deleteMyCommands,
		"getMyCommands":          (*Server).getMyCommands,
		"getFile":                (*Server).getFile,
	} {
		methods[strings.ToLower(name)] = method{name, h}
	}
}

// ServeHTTP serves the Bot API: /bot<token>/<method> and
// /file/bot<token>/<file_path>.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch path := r.URL.Path; {
	case strings.HasPrefix(path, "/file/bot"):
		s.serveFile(w, r, strings.TrimPrefix(path, "/file/bot"))
	case strings.HasPrefix(path, "/bot"):
		s.serveMethod(w, r, strings.TrimPrefix(path, "/bot"))
	default:
		writeReply(w, fail(http.StatusNotFound, "Not Found"))
	}
}

func (s *Server) serveMethod(w http.ResponseWriter, r *http.Request, rest string) {
	token, method, _ := strings.Cut(rest, "/")
	s.mu.Lock()
	b := s.bots[token]
	s.mu.Unlock()
	if b == nil {
		writeReply(w, fail(http.StatusUnauthorized, "Unauthorized"))
		return
	}
	m, known := methods[strings.ToLower(method)]
	if !known {
		s.record(b, method, http.StatusNotFound)
		writeReply(w, fail(http.StatusNotFound, "Not Found"))
		return
	}
	rep := s.serve(b, m.name, r, func() reply {
		p, rep := parseParams(r)
		if rep.status != 0 {
			return rep
		}
		return m.h(s, b, p, r)
	})
	writeReply(w, rep)
}

// serve runs one call: a scripted fault if one is due, the handler
// otherwise, counting the call in flight meanwhile and recording it after.
func (s *Server) serve(b *bot, method string, r *http.Request, handle func() reply) reply {
	s.mu.Lock()
	b.inflight[method]++
	f, faulted := b.takeFault(method)
	s.notify()
	s.mu.Unlock()

	var rep reply
	if faulted {
		// Read the body: only then does the server notice the client
		// leaving, which ends a hang.
		_, _ = io.Copy(io.Discard, io.LimitReader(r.Body, maxUploadBytes+1))
		rep = f.reply()
	} else {
		rep = handle()
	}
	if rep.hang {
		select {
		case <-r.Context().Done():
		case <-s.done:
		}
		rep = fail(499, "client closed request") // never seen by the client
	}

	s.mu.Lock()
	b.inflight[method]--
	s.mu.Unlock()
	s.record(b, method, rep.status)
	return rep
}

func (s *Server) record(b *bot, method string, status int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b.calls = append(b.calls, Call{Method: method, Status: status})
	s.notify()
}

// getMe answers the bot's own user.
func (s *Server) getMe(b *bot, _ *params, _ *http.Request) reply {
	return ok(map[string]any{
		"id":                          int64(b.id),
		"is_bot":                      true,
		"first_name":                  b.username,
		"username":                    b.username,
		"can_join_groups":             true,
		"can_read_all_group_messages": false,
		"supports_inline_queries":     false,
	})
}

// Wait waits until cond holds, re-checking it after every change to the
// server's state (a request, a send, an injected update), and fails the test
// when the wait timeout passes first. cond runs without the server's lock
// and may call any of its methods.
func (s *Server) Wait(t testing.TB, what string, cond func() bool) {
	t.Helper()
	s.waitFor(t, func() string { return what }, cond)
}

func (s *Server) waitFor(t testing.TB, what func() string, cond func() bool) {
	t.Helper()
	s.mu.Lock()
	d := s.waitTimeout
	s.mu.Unlock()
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	for {
		s.mu.Lock()
		changed := s.changed
		s.mu.Unlock()
		if cond() {
			return
		}
		select {
		case <-changed:
		case <-deadline.C:
			t.Fatalf("telegramtest: gave up after %v waiting for %s", d, what())
			return
		}
	}
}
