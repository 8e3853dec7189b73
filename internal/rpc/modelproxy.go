package rpc

import (
	"context"
	"errors"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Model calls carried by choird (issue 25 item 1). An agent whose session
// says InitHelloResp.ModelProxy sends its OpenAI-compatible model calls to
// its own RPC endpoint instead of the model's:
//
//	POST /v1/model/<model name>/chat/completions
//	X-Choir-Session-Id, Authorization: Bearer <lease token> as for a verb
//	<the chat completion request as the model's API takes it>
//
// The call is authenticated, rate-limited and counted against the
// session's connections like a verb; then the path is checked (a config
// model name, an operation of ModelOps: anything else 404), the method
// (405) and the body (at most MaxModelPayload, 413), and ModelProxy (choird)
// decides and answers: the provider's status, the headers of
// ModelAnswerHeaders and its body, or an *Error in the verbs' error shape
// (which an OpenAI-compatible client reads as an error object).

// ModelPathPrefix begins every model call's path.
const ModelPathPrefix = "/v1/model/"

// VerbModel is what Server.Observe is told for a model call.
const VerbModel Verb = "MODEL"

// ModelOps are the model API operations carried: what choir-agent calls on
// a model endpoint (chat completions, never streamed).
var ModelOps = []string{"chat/completions"}

// MaxModelPayload bounds a model call's request body: a long context with
// its tool results, far above Limits.MaxPayload, which bounds verbs.
const MaxModelPayload = 32 << 20

// ModelAnswerHeaders are the provider's answer headers passed back to the
// agent; no other header crosses.
var ModelAnswerHeaders = []string{"Content-Type", "Retry-After", "Retry-After-Ms"}

// modelNameRE is config.NamePattern (this package does not import config).
var modelNameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,47}$`)

// ModelCall is one model call an agent asked choird to carry.
type ModelCall struct {
	SessionID string
	RequestID string
	Model     string // the config's model name
	Op        string // one of ModelOps
	Body      []byte
}

// ModelAnswer is what the agent receives: the provider's status, its
// headers of ModelAnswerHeaders and its body.
type ModelAnswer struct {
	Status int
	Header http.Header
	Body   []byte
}

// ModelProxy is choird's side of carried model calls. An *Error chooses
// the status the agent sees (403 for a model the session may not use);
// any other error is a 502.
type ModelProxy interface {
	ProxyModel(ctx context.Context, call ModelCall) (*ModelAnswer, error)
}

// serveModel serves a model call of an authenticated session.
func (s *Server) serveModel(w http.ResponseWriter, r *http.Request, sessionID string) {
	if s.Models == nil {
		writeError(w, Errorf(http.StatusNotFound, CodeNotFound, "this choird does not carry model calls: call the model's endpoint directly"))
		return
	}
	name, op, ok := modelPath(r)
	if !ok {
		writeError(w, Errorf(http.StatusNotFound, CodeNotFound, "no such model endpoint %q: use POST %s<model name>/%s with a model name of config.json", clipTo(r.URL.EscapedPath(), 200), ModelPathPrefix, strings.Join(ModelOps, " or ")))
		return
	}
	if r.Method != http.MethodPost {
		writeError(w, Errorf(http.StatusMethodNotAllowed, CodeMethod, "use POST %s%s/%s", ModelPathPrefix, name, op))
		return
	}
	reqID := r.Header.Get(HeaderRequestID)
	if reqID == "" {
		reqID = NewRequestID()
	}
	w.Header().Set(HeaderRequestID, reqID)
	rc := http.NewResponseController(w)
	if s.limits.BodyTimeout > 0 {
		rc.SetReadDeadline(s.now().Add(s.limits.BodyTimeout))
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxModelPayload))
	rc.SetReadDeadline(time.Time{})
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			w.Header().Set("Connection", "close")
			writeError(w, Errorf(http.StatusRequestEntityTooLarge, CodeTooLarge, "model request larger than %d MiB: compact the context before calling the model", MaxModelPayload>>20))
			return
		}
		w.Header().Set("Connection", "close")
		writeError(w, Errorf(http.StatusBadRequest, CodeBadRequest, "read the model request: %v", err))
		return
	}
	ctx := WithCall(r.Context(), Call{RequestID: reqID, SessionID: sessionID})
	ans, err := s.Models.ProxyModel(ctx, ModelCall{SessionID: sessionID, RequestID: reqID, Model: name, Op: op, Body: body})
	if err != nil {
		var rerr *Error
		if !errors.As(err, &rerr) {
			rerr = Errorf(http.StatusBadGateway, CodeUnavailable, "model %s: %v", name, err)
		}
		writeError(w, rerr)
		return
	}
	for _, h := range ModelAnswerHeaders {
		if v := ans.Header.Get(h); v != "" {
			w.Header().Set(h, v)
		}
	}
	if ow, ok := w.(*observedWriter); ok && (ans.Status < 200 || ans.Status > 299) {
		ow.errCode = "model_http_" + strconv.Itoa(ans.Status)
	}
	w.WriteHeader(ans.Status)
	w.Write(ans.Body)
}

// modelPath splits a model call's path into the model name and the
// operation. The path must be exactly ModelPathPrefix, a config model
// name, "/" and an operation of ModelOps, with no escaping: "..", "." or
// an empty segment never name a model.
func modelPath(r *http.Request) (name, op string, ok bool) {
	if r.URL.RawPath != "" {
		return "", "", false
	}
	rest, ok := strings.CutPrefix(r.URL.Path, ModelPathPrefix)
	if !ok {
		return "", "", false
	}
	name, op, ok = strings.Cut(rest, "/")
	if !ok || !modelNameRE.MatchString(name) {
		return "", "", false
	}
	for _, o := range ModelOps {
		if op == o {
			return name, op, true
		}
	}
	return "", "", false
}
