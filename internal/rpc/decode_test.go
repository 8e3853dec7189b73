package rpc

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"choir/internal/jsonlimit"
)

// TestHostileRPCBodies: DecodeStrict, the decoder of every verb, refuses
// bodies that are too deep or not UTF-8 before decoding anything, so the
// request is left as it was, and says where and what the limit is.
func TestHostileRPCBodies(t *testing.T) {
	const heartbeat = `{"base_rev":1,"new_rev":2,"patches":[],"config_version":3,"hash_prev":"a","hash_new":"b","timestamp":"2026-01-01T00:00:00Z"}`
	deepSnapshot := strings.Replace(heartbeat, `"patches":[]`, `"snapshot":`+strings.Repeat(`{"a":`, 130)+`1`+strings.Repeat("}", 130)+`,"patches":[]`, 1)
	for _, tc := range []struct {
		name string
		body string
		is   error // the jsonlimit kind, when the refusal is one
		want string
	}{
		{"two million levels", strings.Repeat("[", 2_000_000), jsonlimit.ErrTooDeep, "line 1:129 (byte 128): JSON nested deeper than the limit of 128 levels"},
		{"a snapshot nested past the limit", deepSnapshot, jsonlimit.ErrTooDeep, "limit of 128 levels"},
		{"invalid UTF-8 in a hash", strings.Replace(heartbeat, `"hash_new":"b"`, "\"hash_new\":\"b\xff\"", 1), jsonlimit.ErrInvalidUTF8, "invalid UTF-8 (byte 0xff)"},
		{"unpaired surrogate in a hash", strings.Replace(heartbeat, `"hash_new":"b"`, `"hash_new":"b\ud800"`, 1), jsonlimit.ErrInvalidUTF8, `\ud800 is the first half of a UTF-16 surrogate pair`},
		{"empty", "  ", nil, "empty body"},
		{"unknown field", strings.Replace(heartbeat, `{`, `{"token":"x",`, 1), nil, `unknown field "token"`},
		{"trailing data", heartbeat + `{}`, nil, "data after the JSON value"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := HeartbeatReq{BaseRev: 7, HashNew: "kept"}
			err := DecodeStrict([]byte(tc.body), &req)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("DecodeStrict = %v; want %q", err, tc.want)
			}
			if tc.is != nil {
				if !errors.Is(err, tc.is) {
					t.Errorf("DecodeStrict = %v; want errors.Is %v", err, tc.is)
				}
				if want := (HeartbeatReq{BaseRev: 7, HashNew: "kept"}); !reflect.DeepEqual(req, want) {
					t.Errorf("the request was changed by a refused body: %+v", req)
				}
			}
		})
	}
	var req HeartbeatReq
	if err := DecodeStrict([]byte(heartbeat), &req); err != nil || req.NewRev != 2 {
		t.Fatalf("DecodeStrict(valid heartbeat) = %v, %+v", err, req)
	}
}
