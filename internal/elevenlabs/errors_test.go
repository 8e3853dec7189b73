package elevenlabs

import (
	"testing"
)

func TestParseErrorShapes(t *testing.T) {
	cases := []struct {
		body, code, msg string
	}{
		{`{"detail":{"status":"voice_not_found","message":"Voice not found"}}`, "voice_not_found", "Voice not found"},
		{`{"detail":{"type":"authentication_error","code":"invalid_api_key","message":"Invalid API key","request_id":"r"}}`, "invalid_api_key", "Invalid API key"},
		{`{"detail":[{"loc":["body","text"],"msg":"Field required","type":"missing"},{"loc":["query","output_format"],"msg":"bad","type":"enum"}]}`, "missing", "body.text: Field required; query.output_format: bad"},
		{`{"detail":"Not Found"}`, "", "Not Found"},
		{`<html>502</html>`, "", `Bad Request (not an ElevenLabs error object: "<html>502</html>")`},
		{``, "", "Bad Request (not an ElevenLabs error object: empty body)"},
	}
	for _, tc := range cases {
		e := parseError(400, []byte(tc.body))
		if e.Code != tc.code || e.Message != tc.msg {
			t.Errorf("parseError(%s) = %q %q; want %q %q", tc.body, e.Code, e.Message, tc.code, tc.msg)
		}
	}
}

func FuzzParseError(f *testing.F) {
	f.Add([]byte(`{"detail":[{"loc":[1,{"a":2}],"msg":"x"}]}`))
	f.Add([]byte(`{"detail":{}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		e := parseError(422, body)
		if e.Status != 422 || e.Message == "" {
			t.Fatalf("parseError(%q) = %+v; want the status and a message", body, e)
		}
		_ = e.Error()
	})
}
