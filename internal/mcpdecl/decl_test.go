package mcpdecl

import (
	"strings"
	"testing"
)

func TestParseGood(t *testing.T) {
	d, err := Parse("mcp/acme.json", []byte(`{"transport":"stdio","command":"/opt/acme/bin/server","args":["stdio"],
		"env":{"ACME_KEY":{"secret":"acme-key"},"MODE":"ro"},
		"tools":{"allow":["search","get-page"],"deny":["delete"]},"timeout_ms":5000,
		"overrides":{"search":{"locks":[],"side_effect":"read","idempotent":true}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if d.Name != "acme" || d.Command != "/opt/acme/bin/server" || d.TimeoutMS != 5000 || !d.Offers("search") || d.Offers("delete") || d.Offers("other") {
		t.Fatalf("Parse = %+v", d)
	}
	if got := d.Secrets(); len(got) != 1 || got[0] != "acme-key" {
		t.Fatalf("Secrets() = %v; want [acme-key]", got)
	}
	v, err := d.Env["ACME_KEY"].Resolve(func(n string) (string, bool) { return "k-" + n, n == "acme-key" })
	if err != nil || v != "k-acme-key" {
		t.Fatalf("Resolve = %q, %v", v, err)
	}
	h, err := Parse("mcp/web.json", []byte(`{"transport":"http","url":"https://mcp.example.com/mcp","headers":{"Authorization":{"secret":"tok","format":"Bearer %s"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	v, _ = h.Headers["Authorization"].Resolve(func(string) (string, bool) { return "xyz", true })
	if v != "Bearer xyz" || h.TimeoutMS != DefaultTimeoutMS || !h.Offers("anything") {
		t.Fatalf("header = %q, decl %+v", v, h)
	}
	if _, err := h.Headers["Authorization"].Resolve(func(string) (string, bool) { return "", false }); err == nil || !strings.Contains(err.Error(), `"tok"`) {
		t.Fatalf("ungranted secret: %v", err)
	}
	if h.Sampling != nil {
		t.Fatalf("no sampling member: Sampling = %+v; want nil (declined)", h.Sampling)
	}
	sm, err := Parse("mcp/s.json", []byte(`{"transport":"stdio","command":"/x","sampling":{"model":"cheap","max_tokens":500}}`))
	if err != nil || sm.Sampling == nil || sm.Sampling.Model != "cheap" || sm.Sampling.MaxTokens != 500 {
		t.Fatalf("sampling = %+v, %v", sm, err)
	}
}

// TestParseHostile: every refusal names the file and the JSON pointer.
func TestParseHostile(t *testing.T) {
	cases := []struct {
		file, body, wantPath, wantMsg string
	}{
		{"mcp/a.json", `[]`, "", "want a JSON object"},
		{"mcp/a.json", `{"transport":"stdio","command":"/x"} {}`, "", "unexpected data"},
		{"mcp/a.json", `{"transport":"stdio","command":"/x","command":"/y"}`, "", "appears twice"},
		{"mcp/Bad-Name.json", `{"transport":"stdio","command":"/x"}`, "", "server name"},
		{"mcp/a_very_long_server_name_indeed.json", `{"transport":"stdio","command":"/x"}`, "", "longer than"},
		{"mcp/a.json", `{"command":"/x"}`, "/transport", "missing"},
		{"mcp/a.json", `{"transport":"sse","command":"/x"}`, "/transport", `"sse"`},
		{"mcp/a.json", `{"transport":"stdio"}`, "/command", "missing"},
		{"mcp/a.json", `{"transport":"stdio","command":"node"}`, "/command", "not absolute"},
		{"mcp/a.json", `{"transport":"stdio","command":"/x","args":"a b"}`, "/args", "array of strings"},
		{"mcp/a.json", `{"transport":"stdio","command":"/x","args":["a\u0000"]}`, "/args/0", "NUL"},
		{"mcp/a.json", `{"transport":"stdio","command":"/x","env":{"A=B":"x"}}`, "/env/A=B", "environment variable"},
		{"mcp/a.json", `{"transport":"stdio","command":"/x","env":{"A":{"secret":""}}}`, "/env/A/secret", "not a secrets.json name"},
		{"mcp/a.json", `{"transport":"stdio","command":"/x","env":{"A":{"secret":"s","format":"%s%s"}}}`, "/env/A/format", "exactly one"},
		{"mcp/a.json", `{"transport":"stdio","command":"/x","env":{"A":{"secret":"s","extra":1}}}`, "/env/A", "want a string or"},
		{"mcp/a.json", `{"transport":"stdio","command":"/x","env":{"A":"a\nB=c"}}`, "/env/A", "line break"},
		{"mcp/a.json", `{"transport":"stdio","command":"/x","url":"https://x/mcp"}`, "/url", "only for http"},
		{"mcp/a.json", `{"transport":"http","url":"ftp://x/mcp"}`, "/url", "http or https"},
		{"mcp/a.json", `{"transport":"http","url":"https://u:p@x/mcp"}`, "/url", "credentials"},
		{"mcp/a.json", `{"transport":"http"}`, "/url", "missing"},
		{"mcp/a.json", `{"transport":"http","url":"https://x/mcp","command":"/x"}`, "/command", "only for stdio"},
		{"mcp/a.json", `{"transport":"http","url":"https://x/mcp","headers":{"Mcp-Session-Id":"1"}}`, "/headers/Mcp-Session-Id", "set by the MCP client"},
		{"mcp/a.json", `{"transport":"http","url":"https://x/mcp","headers":{"Bad Header":"1"}}`, "/headers/Bad Header", "HTTP header name"},
		{"mcp/a.json", `{"transport":"stdio","command":"/x","timeout_ms":0}`, "/timeout_ms", "whole number"},
		{"mcp/a.json", `{"transport":"stdio","command":"/x","timeout_ms":1.5}`, "/timeout_ms", "whole number"},
		{"mcp/a.json", `{"transport":"stdio","command":"/x","tools":{"only":["a"]}}`, "/tools/only", "allow or deny"},
		{"mcp/a.json", `{"transport":"stdio","command":"/x","overrides":{"t":{"side_effect":"none"}}}`, "/overrides/t/side_effect", "read, write or external"},
		{"mcp/a.json", `{"transport":"stdio","command":"/x","overrides":{"t":{"locks":[{"resource":"/etc","mode":"X"}]}}}`, "/overrides/t/locks/0", "lock"},
		{"mcp/a.json", `{"transport":"stdio","command":"/x","overrides":{"t":{"locks":[{"resource":"file:../x","mode":"X"}]}}}`, "/overrides/t/locks/0", "lock"},
		{"mcp/a.json", `{"transport":"stdio","command":"/x","overrides":{"t":{"locks":[{"resource":"workspace","mode":"W"}]}}}`, "/overrides/t/locks/0", "mode"},
		{"mcp/a.json", `{"transport":"stdio","command":"/x","overrides":{"t":{"sideeffect":"read"}}}`, "/overrides/t", "unknown field"},
		{"mcp/a.json", `{"transport":"stdio","command":"/x","tools":{"deny":["t"]},"overrides":{"t":{"idempotent":true}}}`, "/overrides/t", "not offered"},
		{"mcp/a.json", `{"transport":"stdio","command":"/x","sampling":true}`, "/sampling", "max_tokens"},
		{"mcp/a.json", `{"transport":"stdio","command":"/x","sampling":{"max_tokens":100,"temperature":1}}`, "/sampling", "unknown field"},
		{"mcp/a.json", `{"transport":"stdio","command":"/x","sampling":{}}`, "/sampling/max_tokens", "from 1 to"},
		{"mcp/a.json", `{"transport":"stdio","command":"/x","sampling":{"max_tokens":1000000}}`, "/sampling/max_tokens", "from 1 to"},
		{"mcp/a.json", `{"transport":"stdio","command":"/x","sampling":{"max_tokens":1.5}}`, "/sampling", "max_tokens"},
		{"mcp/a.json", `{"transport":"stdio","command":"/x","sampling":{"model":"a b\n","max_tokens":10}}`, "/sampling/model", "not a model name"},
		{"mcp/a.json", `{"transport":"stdio","command":"/x","samples":{}}`, "/samples", "unknown member"},
		{"mcp/a.json", "{\"transport\":\"stdio\",\"command\":\"/x\",\"args\":[\"" + strings.Repeat("a", MaxBytes) + "\"]}", "", "at most"},
	}
	for _, c := range cases {
		t.Run(c.wantPath+" "+c.wantMsg, func(t *testing.T) {
			_, err := Parse(c.file, []byte(c.body))
			de, ok := err.(*Error)
			if !ok {
				t.Fatalf("Parse(%s) = %v; want an *Error", c.body, err)
			}
			for _, f := range de.Faults {
				if f.File == c.file && f.Path == c.wantPath && strings.Contains(f.Message, c.wantMsg) {
					return
				}
			}
			t.Fatalf("Parse(%.80s) = %v; want a fault at %s %q containing %q", c.body, err, c.file, c.wantPath, c.wantMsg)
		})
	}
}

func TestToolName(t *testing.T) {
	for _, c := range []struct{ in, want, err string }{
		{"echo", "mcp.s.echo", ""},
		{"get-sum", "mcp.s.get_sum", ""},
		{"longRunningOperation", "mcp.s.long_running_operation", ""},
		{"HTTPGet", "mcp.s.httpget", ""},
		{"files/read.v2", "mcp.s.files_read_v2", ""},
		{"2fa", "mcp.s.t2fa", ""},
		{"--", "", "no letters"},
		{"héllo", "", "cannot be part"},
		{"a;rm -rf", "", "cannot be part"},
		{strings.Repeat("x", 60), "", "more than"},
	} {
		got, err := ToolName("s", c.in)
		if got != c.want || (c.err == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), c.err) {
			t.Errorf("ToolName(s, %q) = %q, %v; want %q, %q", c.in, got, err, c.want, c.err)
		}
	}
	names, refused := Names("s", []string{"get-sum", "get_sum", "echo", "x!"})
	if len(names) != 1 || names["echo"] != "mcp.s.echo" || len(refused) != 3 {
		t.Fatalf("Names = %v, %v; want echo mapped and the collided pair and x! refused", names, refused)
	}
}
