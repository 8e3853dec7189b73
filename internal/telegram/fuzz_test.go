package telegram_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"choir/internal/telegram"
)

// fuzzToken is the bot token of the fuzz target and of the regression test;
// its secret part must never appear in an error, not even in part.
const fuzzToken = "123456:FUZZ-s3cretPart-0123456789abcdef"

// otherToken has the same bot id and length as fuzzToken and differs from
// it at every byte of the secret part.
const otherToken = "123456:QWER_t7dgfuQbsu_1234567890bcdefg"

// tokenFragments are the pieces of fuzzToken an error must not quote.
var tokenFragments = []string{"s3cretPart", "0123456789abcdef", "FUZZ-s3cret"}

// tokenPlaceholder stands, in a fuzzed answer, for the token of the client
// that asked: a proxy or server echoing the request path.
const tokenPlaceholder = "$TOKEN$"

// answering is an http.RoundTripper that answers every request with one
// status and body.
type answering struct {
	status int
	body   []byte
}

func (a answering) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		io.Copy(io.Discard, r.Body)
		r.Body.Close()
	}
	return &http.Response{
		StatusCode: a.status,
		Status:     http.StatusText(a.status),
		Header:     http.Header{"Content-Type": {"application/json"}},
		Body:       io.NopCloser(bytes.NewReader(a.body)),
		Request:    r,
	}, nil
}

// getUpdates asks a client with token, whose server answers status and
// body (tokenPlaceholder replaced by the token), for updates.
func getUpdates(t *testing.T, token string, status int, body []byte) ([]telegram.Update, error) {
	t.Helper()
	body = bytes.ReplaceAll(body, []byte(tokenPlaceholder), []byte(token))
	c, err := telegram.New("", token, telegram.WithHTTPClient(&http.Client{Transport: answering{status, body}}))
	if err != nil {
		t.Fatal(err)
	}
	return c.GetUpdates(t.Context(), 0, 0, nil)
}

// FuzzGetUpdates feeds arbitrary answers (HTTP status and body) to
// GetUpdates, the decoding of a getUpdates response into Updates. An error
// says something and never quotes the bot token, whole or in part: the
// answer is given to two clients whose tokens differ in every secret byte,
// each answer echoing its client's token where the body says $TOKEN$, and
// the two errors must read the same. An *APIError carries a non-zero code;
// updates it accepts survive json.Marshal and a second decode unchanged
// (marshalling is a fixed point after one pass); the same answer always
// decodes the same way.
func FuzzGetUpdates(f *testing.F) {
	f.Fuzz(func(t *testing.T, status uint16, body []byte) {
		if len(body) > 64<<10 {
			return
		}
		code := 200 + int(status)%400
		// A token written out in the body (not echoed) is redacted by the
		// client it belongs to only, which changes the error's length and
		// where a quote ends: the two errors are only comparable without one.
		comparable := !bytes.Contains(body, []byte(fuzzToken)) && !bytes.Contains(body, []byte(otherToken))
		ups, err := getUpdates(t, fuzzToken, code, body)
		_, other := getUpdates(t, otherToken, code, body)
		if (err == nil) != (other == nil) {
			t.Fatalf("the answer decodes for one token and not the other: %v / %v", err, other)
		}
		if err != nil {
			msg := err.Error()
			if strings.TrimSpace(msg) == "" {
				t.Fatal("GetUpdates failed with an empty message")
			}
			if strings.Contains(msg, fuzzToken) {
				t.Fatalf("error quotes the token: %s", msg)
			}
			if comparable && msg != other.Error() {
				t.Fatalf("the error depends on the token, so it quotes part of it:\n%s\n%s", msg, other)
			}
			if e, ok := errors.AsType[*telegram.APIError](err); ok && e.Code == 0 {
				t.Fatalf("APIError without a code: %v", e)
			}
			return
		}
		out, err := json.Marshal(ups)
		if err != nil {
			t.Fatalf("Marshal(decoded updates) = %v", err)
		}
		again, err := getUpdates(t, fuzzToken, 200, []byte(`{"ok":true,"result":`+string(out)+`}`))
		if err != nil {
			t.Fatalf("decoding our own encoding of %s: %v", out, err)
		}
		if out2, _ := json.Marshal(again); !bytes.Equal(out, out2) {
			t.Fatalf("round trip changed the updates:\n%s\n%s", out, out2)
		}
		if third, err := getUpdates(t, fuzzToken, code, body); err != nil || len(third) != len(ups) {
			t.Fatalf("the same answer decoded differently: %d updates, then %d (%v)", len(ups), len(third), err)
		}
	})
}

// TestNotJSONAnswerNeverQuotesPartOfToken is what FuzzGetUpdates found: a
// proxy's error page that echoes the request path puts the token in the
// answer, and the client quotes the first 200 bytes of such an answer; it
// redacts the whole token but not a token cut in two by the 200-byte limit.
func TestNotJSONAnswerNeverQuotesPartOfToken(t *testing.T) {
	page := "<html><body><h1>502 Bad Gateway</h1>" + strings.Repeat(" ", 120) + "no route to /bot" + fuzzToken + "/getUpdates</body></html>"
	_, err := getUpdates(t, fuzzToken, http.StatusBadGateway, []byte(page))
	if err == nil {
		t.Fatal("GetUpdates accepted an HTML page")
	}
	for _, frag := range tokenFragments {
		if strings.Contains(err.Error(), frag) {
			t.Errorf("error quotes part of the token (%q): %v", frag, err)
		}
	}
}
