package tool

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestPrepareValidatesInput(t *testing.T) {
	reg, err := Load([]Tool{&fakeBuiltin{name: "choir.fs.read"}}, "", "")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, tool, input string
		code              string
		failures          []FieldFailure
	}{
		{name: "valid", tool: "choir.fs.read", input: `{"path": "a.go", "n": 2}`},
		{name: "unknown tool", tool: "choir.fs.nope", input: `{}`, code: CodeUnknownTool},
		{name: "not JSON", tool: "choir.fs.read", input: `{"path": `, code: CodeInvalidInput},
		{name: "not an object", tool: "choir.fs.read", input: `["a.go"]`, code: CodeInvalidInput,
			failures: []FieldFailure{{Path: "/", Message: "want object, got array"}}},
		{name: "empty input is {}", tool: "choir.fs.read", input: ``, code: CodeInvalidInput,
			failures: []FieldFailure{{Path: "/path", Message: "required property missing"}}},
		{name: "every failing path", tool: "choir.fs.read", input: `{"n": 0, "path": 3, "mode": "x"}`, code: CodeInvalidInput,
			failures: []FieldFailure{
				{Path: "/mode", Message: "unknown property"},
				{Path: "/n", Message: "0 is less than minimum 1"},
				{Path: "/path", Message: "want string, got number"},
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			call, err := reg.Prepare(tc.tool, json.RawMessage(tc.input))
			if tc.code == "" {
				if err != nil {
					t.Fatalf("Prepare = %v; want success", err)
				}
				if call.Tool.Name() != tc.tool {
					t.Errorf("Prepare tool = %s; want %s", call.Tool.Name(), tc.tool)
				}
				return
			}
			var te *Error
			if !errors.As(err, &te) {
				t.Fatalf("Prepare error = %v; want an *Error with code %s", err, tc.code)
			}
			if te.Code != tc.code {
				t.Errorf("Prepare code = %s (%s); want %s", te.Code, te.Message, tc.code)
			}
			if tc.failures != nil && !reflect.DeepEqual(te.Failures, tc.failures) {
				t.Errorf("Prepare failures = %+v; want %+v", te.Failures, tc.failures)
			}
			// The model sees it as a structured error result.
			m := resultJSON(t, ErrorResult(err))
			e, _ := m["error"].(map[string]any)
			if m["status"] != "error" || e["code"] != tc.code || e["message"] == "" {
				t.Errorf("ErrorResult(err) = %v; want status error with code %s", m, tc.code)
			}
		})
	}
}

func TestCallRun(t *testing.T) {
	blocked := func(ctx context.Context, _ json.RawMessage, _ Env) (Result, error) {
		<-ctx.Done()
		return Result{}, ctx.Err()
	}
	tests := []struct {
		name     string
		tool     *fakeBuiltin
		secrets  SecretFunc
		cancel   bool
		wantCode string
		check    func(t *testing.T, r Result)
	}{
		{
			name: "success",
			tool: &fakeBuiltin{name: "acme.ok", run: func(context.Context, json.RawMessage, Env) (Result, error) {
				return Result{Summary: "fine", Fields: map[string]any{"n": 1}}, nil
			}},
			check: func(t *testing.T, r Result) {
				if r.Status != StatusSuccess || r.Summary != "fine" {
					t.Errorf("Run = %+v; want success", r)
				}
			},
		},
		{
			name: "tool error",
			tool: &fakeBuiltin{name: "acme.err", run: func(context.Context, json.RawMessage, Env) (Result, error) {
				return Result{}, PathErrorf(CodeNotFound, "a.go", "no such file")
			}},
			wantCode: CodeNotFound,
		},
		{
			name: "plain Go error",
			tool: &fakeBuiltin{name: "acme.goerr", run: func(context.Context, json.RawMessage, Env) (Result, error) {
				return Result{}, errors.New("disk on fire")
			}},
			wantCode: CodeInternal,
		},
		{
			name: "panic",
			tool: &fakeBuiltin{name: "acme.panic", run: func(context.Context, json.RawMessage, Env) (Result, error) {
				var m map[string]int
				m["x"] = 1
				return Result{}, nil
			}},
			wantCode: CodeInternal,
		},
		{
			name:     "timeout",
			tool:     &fakeBuiltin{name: "acme.slow", rt: Runtime{Timeout: time.Millisecond}, run: blocked},
			wantCode: CodeTimeout,
		},
		{
			name:     "cancelled",
			tool:     &fakeBuiltin{name: "acme.cancel", run: blocked},
			cancel:   true,
			wantCode: CodeCancelled,
		},
		{
			name: "secrets: only the granted ones",
			tool: &fakeBuiltin{name: "acme.sec", rt: Runtime{SecretResources: []string{SecretNotion}},
				run: func(_ context.Context, _ json.RawMessage, env Env) (Result, error) {
					return Success("ok", map[string]any{"secrets": env.Secrets}), nil
				}},
			secrets: bound(map[string]string{SecretLLM: "secret-a", SecretNotion: "secret-b"}),
			check: func(t *testing.T, r Result) {
				if got := r.Fields["secrets"]; !reflect.DeepEqual(got, map[string]string{SecretNotion: "secret-b"}) {
					t.Errorf("the tool saw secrets %v; want only notion's", got)
				}
			},
		},
		{
			name: "no secrets without a grant",
			tool: &fakeBuiltin{name: "acme.nosec", run: func(_ context.Context, _ json.RawMessage, env Env) (Result, error) {
				if env.Secrets != nil {
					return Result{}, errors.New("got secrets")
				}
				return Success("ok", nil), nil
			}},
			secrets: func(string) (string, error) { return "x", nil },
		},
		{
			name:     "granted secret not bound",
			tool:     &fakeBuiltin{name: "acme.unbound", rt: Runtime{SecretResources: []string{SecretEmail}}},
			secrets:  bound(map[string]string{SecretLLM: "k"}),
			wantCode: CodeSecretUnavailable,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			reg, err := Load([]Tool{tc.tool}, "", "")
			if err != nil {
				t.Fatal(err)
			}
			call, err := reg.Prepare(tc.tool.name, json.RawMessage(`{"path": "a"}`))
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tc.cancel {
				cancel()
			}
			r := call.Run(ctx, Invocation{Workspace: t.TempDir(), CallID: "c1", Secrets: tc.secrets})
			if tc.wantCode != "" {
				if r.Status != StatusError || r.Error == nil || r.Error.Code != tc.wantCode {
					t.Fatalf("Run = %+v (error %+v); want error code %s", r, r.Error, tc.wantCode)
				}
				return
			}
			if r.Status != StatusSuccess {
				t.Fatalf("Run = %+v (error %+v); want success", r, r.Error)
			}
			if tc.check != nil {
				tc.check(t, r)
			}
		})
	}
}

func TestResultJSON(t *testing.T) {
	tests := []struct {
		name string
		r    Result
		want string
	}{
		{"success with fields", Result{Status: StatusSuccess, Summary: "s", ArtifactRef: "h1",
			Fields: map[string]any{"b": 2, "a": "x", "status": "ignored"}},
			`{"status":"success","summary":"s","artifact_ref":"h1","a":"x","b":2}`},
		{"error", ErrorResult(PathErrorf(CodePathRefused, "../x", "the path leaves the workspace")),
			`{"status":"error","summary":"the path leaves the workspace","error":{"code":"path_refused","message":"the path leaves the workspace","path":"../x"}}`},
		{"zero value", Result{}, `{"status":"success","summary":""}`},
	}
	for _, tc := range tests {
		got, err := json.Marshal(tc.r)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != tc.want {
			t.Errorf("%s: json = %s; want %s", tc.name, got, tc.want)
		}
	}
}

func TestParseResult(t *testing.T) {
	tests := []struct {
		in      string
		status  Status
		code    string
		wantErr string
	}{
		{in: `{"summary":"ok","x":1}`, status: StatusSuccess},
		{in: ` {"status":"success"} ` + "\n", status: StatusSuccess},
		{in: `{"status":"error","error":{"code":"quota","message":"over quota"}}`, status: StatusError, code: "quota"},
		{in: `{"status":"error","summary":"it broke"}`, status: StatusError, code: CodeToolError},
		{in: `{"status":"maybe"}`, wantErr: `/status: want "success" or "error"`},
		{in: `{"summary":5}`, wantErr: "/summary: want a string"},
		{in: `not json`, wantErr: "want one JSON object"},
		{in: `{} {}`, wantErr: "unexpected data after it"},
		{in: `null`, wantErr: "want one JSON object"},
		{in: ``, wantErr: "want one JSON object"},
	}
	for _, tc := range tests {
		r, err := ParseResult([]byte(tc.in))
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("ParseResult(%q) error = %v; want %q", tc.in, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseResult(%q) = %v", tc.in, err)
			continue
		}
		if r.Status != tc.status || (tc.code != "" && (r.Error == nil || r.Error.Code != tc.code)) {
			t.Errorf("ParseResult(%q) = %+v (error %+v); want status %s code %q", tc.in, r, r.Error, tc.status, tc.code)
		}
	}
}

func TestHostTool(t *testing.T) {
	var gotName, gotCall, gotInput string
	ht, err := NewHostTool(HostDef{
		LLM: LLMTool{Name: "choir.web.browse", Description: "Browse.", Parameters: json.RawMessage(
			`{"type":"object","properties":{"url":{"type":"string"}},"required":["url"]}`)},
		Runtime: Runtime{Timeout: time.Minute, Locks: []LockReq{{Key: "browser_tab", Mode: Exclusive}},
			SideEffect: SideEffectExternal, Exposure: ExposeBoth, Network: true},
	}, func(_ context.Context, name, callID string, input json.RawMessage) (json.RawMessage, error) {
		gotName, gotCall, gotInput = name, callID, string(input)
		if strings.Contains(string(input), "fail") {
			return nil, errors.New("worker crashed")
		}
		if strings.Contains(string(input), "garbage") {
			return json.RawMessage(`<html>`), nil
		}
		return json.RawMessage(`{"status":"success","summary":"fetched","text":"hello"}`), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	reg, err := Load([]Tool{ht}, "", "")
	if err != nil {
		t.Fatal(err)
	}
	if !ht.Runtime().Host {
		t.Error("Runtime().Host = false for a host tool")
	}
	tests := []struct {
		input, code string
	}{
		{`{"url":"https://example.org"}`, ""},
		{`{"url":"fail"}`, CodeHost},
		{`{"url":"garbage"}`, CodeBadOutput},
	}
	for _, tc := range tests {
		call, err := reg.Prepare("choir.web.browse", json.RawMessage(tc.input))
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(call.Locks, []LockReq{{Key: "browser_tab", Mode: "X"}}) {
			t.Errorf("Locks = %v; want browser_tab X", call.Locks)
		}
		r := call.Run(context.Background(), Invocation{Workspace: "/w", CallID: "call-7"})
		if gotName != "choir.web.browse" || gotCall != "call-7" || gotInput != tc.input {
			t.Errorf("HostFunc got (%s, %s, %s)", gotName, gotCall, gotInput)
		}
		if tc.code == "" {
			if r.Status != StatusSuccess || string(r.Fields["text"].(json.RawMessage)) != `"hello"` {
				t.Errorf("Run(%s) = %+v; want success with text", tc.input, r)
			}
			continue
		}
		if r.Error == nil || r.Error.Code != tc.code {
			t.Errorf("Run(%s) = %+v; want code %s", tc.input, r, tc.code)
		}
	}
	if _, err := NewHostTool(HostDef{LLM: LLMTool{Name: "choir.x.y"}}, nil); err == nil {
		t.Error("NewHostTool without a HostFunc = nil error")
	}
}
