package rpc

import (
	"strings"
	"testing"
)

// SPEND's payload is checked before choird's ledger sees it; each refusal
// names the field.
func TestSpendReqHostile(t *testing.T) {
	long := strings.Repeat("x", MaxIDBytes+1)
	for _, tt := range []struct {
		body, want string
	}{
		{`{"op":"spend","call_id":"c"}`, "op"},
		{`{"op":"reserve","call_id":""}`, "call_id"},
		{`{"op":"reserve","call_id":"` + long + `"}`, "call_id"},
		{`{"op":"reserve","call_id":"c","model":"` + long + `"}`, "model"},
		{`{"op":"reserve","call_id":"c","lane":"` + long + `"}`, "lane"},
		{`{"op":"reserve","call_id":"c","prompt_tokens":-1}`, "prompt_tokens"},
		{`{"op":"reserve","call_id":"c","max_output_tokens":1e15}`, "max_output_tokens"},
		{`{"op":"reserve","call_id":"c","max_output_tokens":"many"}`, "max_output_tokens"},
		{`{"op":"reserve","call_id":"c","cost":1}`, "unknown field"},
		{`{"op":"settle","call_id":"c"}`, "record"},
		{`{"op":"settle","call_id":"c","record":{"call_id":"c","cost":-1}}`, "record.cost"},
		{`{"op":"settle","call_id":"c","record":{"call_id":"c","cost":1e10}}`, "record.cost"},
		{`{"op":"settle","call_id":"c","record":{"call_id":"c","prompt_tokens":-5}}`, "record.prompt_tokens"},
		{`{"op":"settle","call_id":"c","record":{"call_id":"c","outcome":"` + long + `"}}`, "record.outcome"},
		{`{"op":"settle","call_id":"c","record":{"call_id":"c","extra":1}}`, "unknown field"},
	} {
		var r SpendReq
		err := DecodeStrict([]byte(tt.body), &r)
		if err == nil {
			err = r.check()
		}
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("SPEND %s = %v; want a refusal naming %s", tt.body, err, tt.want)
		}
	}
	ok := `{"op":"settle","call_id":"c","record":{"call_id":"c","prompt_tokens":10,"completion_tokens":2,"cost":0.01,"outcome":"ok"}}`
	var r SpendReq
	if err := DecodeStrict([]byte(ok), &r); err != nil || r.check() != nil {
		t.Errorf("a good settle = %v, %v; want accepted", err, r.check())
	}
}
