package webapi

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"choir/agent/tool"
)

func TestResultTellsTheModelWhatToDo(t *testing.T) {
	cases := []struct {
		name string
		f    Failure
		code string
		says string
	}{
		{"refused before sending", Failure{Message: "the query is empty"}, tool.CodeInvalidInput, "fix the input"},
		{"no answer", Failure{Err: errors.New("connection refused")}, CodeUnreachable, "cannot be reached"},
		{"timeout", Failure{Status: 200, Err: context.DeadlineExceeded}, tool.CodeTimeout, "try again later"},
		{"too large", Failure{Status: 200, TooLarge: true}, tool.CodeTooLarge, "ask for less"},
		{"auth", Failure{Status: 401, Auth: true}, CodeAuth, "the operator must fix it: FIX"},
		{"quota beats auth", Failure{Status: 401, Auth: true, Quota: true}, CodeQuota, "retrying will not help"},
		{"429", Failure{Status: 429, RetryAfter: 1500 * time.Millisecond}, CodeRateLimited, "wait 2 s"},
		{"429 without a wait", Failure{Status: 429}, CodeRateLimited, "wait 1 s"},
		{"not found", Failure{Status: 404, NotFound: true}, CodeNotFound, "check the id"},
		{"5xx", Failure{Status: 503}, CodeUpstream, "try again in a while"},
		{"4xx", Failure{Status: 400}, CodeRefused, "fix the request"},
		{"malformed", Failure{Status: 200}, CodeBadAnswer, "unexpected"},
	}
	for _, tc := range cases {
		r := Result("Svc", "FIX", tc.f)
		if r.Status != tool.StatusError || r.Error == nil || r.Error.Code != tc.code || !strings.Contains(r.Summary, tc.says) || !strings.HasPrefix(r.Summary, "Svc failed: ") {
			t.Errorf("%s: Result = %+v; want code %s saying %q", tc.name, r, tc.code, tc.says)
		}
	}
	if r := Result("Svc", "", Failure{Status: 429, RetryAfter: 7 * time.Second}); r.Fields["retry_after_s"] != 7 {
		t.Errorf("retry_after_s = %v; want 7", r.Fields["retry_after_s"])
	}
}
