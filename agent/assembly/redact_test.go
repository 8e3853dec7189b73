package assembly

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"

	"choir/agent/redact"
)

type captureRT struct{ bodies []string }

func (c *captureRT) RoundTrip(req *http.Request) (*http.Response, error) {
	b, _ := io.ReadAll(req.Body)
	if int64(len(b)) != req.ContentLength {
		c.bodies = append(c.bodies, "bad content length")
	}
	again, _ := req.GetBody()
	b2, _ := io.ReadAll(again)
	c.bodies = append(c.bodies, string(b), string(b2))
	return &http.Response{StatusCode: 200, Body: io.NopCloser(strings.NewReader("{}")), Request: req}, nil
}

// A model request body is redacted whatever built it; the key in the
// Authorization header is left alone (it is how the provider knows us).
func TestModelRequestBodiesAreRedacted(t *testing.T) {
	rt := &captureRT{}
	c := &http.Client{Transport: redactBody{base: rt, r: redact.New(map[string]string{"llm-key": llmKey})}}
	body := `{"messages":[{"role":"tool","content":"{\"summary\":\"key ` + llmKey + `\"}"}],"model":"m"}`
	req, _ := http.NewRequest(http.MethodPost, "http://model.invalid/v1/chat/completions", bytes.NewReader([]byte(body)))
	req.Header.Set("Authorization", "Bearer "+llmKey)
	if _, err := c.Do(req); err != nil {
		t.Fatal(err)
	}
	want := `{"messages":[{"content":"{\"summary\":\"key [secret:llm-key]\"}","role":"tool"}],"model":"m"}`
	if len(rt.bodies) != 2 || rt.bodies[0] != want || rt.bodies[1] != want {
		t.Errorf("bodies sent = %q; want %s (and the same from GetBody)", rt.bodies, want)
	}
	if req.Header.Get("Authorization") != "Bearer "+llmKey {
		t.Error("the Authorization header was changed")
	}
}
