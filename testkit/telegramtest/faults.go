package telegramtest

import (
	"fmt"
	"net/http"
)

// Fault is a scripted failure, answered instead of the method's work.
type Fault struct {
	rep reply
}

func (f Fault) reply() reply { return f.rep }

// TooManyRequests is flood control: 429 with parameters.retry_after.
func TooManyRequests(retryAfter int) Fault {
	r := fail(http.StatusTooManyRequests, fmt.Sprintf("Too Many Requests: retry after %d", retryAfter))
	r.retryAfter = retryAfter
	return Fault{r}
}

// Conflict is the 409 another poller of the same token causes.
func Conflict() Fault { return Fault{fail(http.StatusConflict, conflictDescription)} }

// ServerError is a 5xx in the Bot API's JSON envelope, as Telegram sends
// when it is itself in trouble ("Internal Server Error", "Bad Gateway").
func ServerError(status int) Fault {
	return Fault{fail(status, http.StatusText(status))}
}

// ProxyError is a 5xx page from a proxy in front of the API: HTML, not
// JSON.
func ProxyError(status int) Fault {
	text := fmt.Sprintf("%d %s", status, http.StatusText(status))
	return Fault{reply{
		status: status,
		raw:    "<html>\r\n<head><title>" + text + "</title></head>\r\n<body>\r\n<center><h1>" + text + "</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n",
		ctype:  "text/html",
	}}
}

// BadRequest is a 400 with Telegram's description after "Bad Request: ",
// such as "VOICE_MESSAGES_FORBIDDEN" (the user's privacy settings refuse
// voice notes) or "chat not found".
func BadRequest(description string) Fault { return Fault{badRequest("%s", description)} }

// Forbidden is a 403 with Telegram's description after "Forbidden: ",
// such as "bot was blocked by the user" or "bot was kicked from the group
// chat": the chat refuses the bot.
func Forbidden(description string) Fault {
	return Fault{fail(http.StatusForbidden, "Forbidden: "+description)}
}

// Hang answers nothing: the request stays open until the client gives up
// (its context ends) or the test ends. For a getUpdates, this is the
// stuck long poll a watchdog must notice.
func Hang() Fault { return Fault{reply{hang: true}} }

// FailNext makes the next n calls of method (its canonical name,
// "sendMessage", or "download" for the file path) by bot answer f. Faults
// queue: FailNext(b, m, 1, TooManyRequests(3)) then FailNext(b, m, 1,
// ServerError(502)) fails the next call with a 429 and the one after with a
// 502.
func (s *Server) FailNext(bot BotID, method string, n int, f Fault) {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.bot(bot)
	if _, known := methods[lower(method)]; !known && method != "download" {
		s.t.Fatalf("telegramtest: FailNext: the fake does not serve %q", method)
	}
	for range n {
		b.faults[canonical(method)] = append(b.faults[canonical(method)], f)
	}
}
