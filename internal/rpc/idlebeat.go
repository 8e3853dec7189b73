package rpc

import "time"

// decodeIdleBeat reads the body the client sends for a heartbeat with
// nothing to store (json.Marshal of a HeartbeatReq without patches,
// snapshot, summary or final, hashes in hex):
//
//	{"base_rev":7,"new_rev":7,"patches":null,"config_version":3,"hash_prev":"…","hash_new":"…","timestamp":"…"}
//
// into r as DecodeStrict would, without reflection (an idle agent sends
// little else, and encoding/json's decoding was a quarter of choird's CPU
// per heartbeat); false for any other body, which DecodeStrict then reads.
// Every body it accepts is one JSON object of those members exactly, in
// ASCII, nested one level: FuzzDecodeIdleBeat checks that encoding/json
// decodes each the same.
func decodeIdleBeat(body []byte, r *HeartbeatReq) bool {
	p := idleParser{b: body}
	var base, rev, version int64
	var prev, next string
	var ts time.Time
	ok := p.lit(`{"base_rev":`) && p.int(&base) &&
		p.lit(`,"new_rev":`) && p.int(&rev) &&
		p.lit(`,"patches":null,"config_version":`) && p.int(&version) &&
		p.lit(`,"hash_prev":`) && p.hex(&prev) &&
		p.lit(`,"hash_new":`) && p.hex(&next) &&
		p.lit(`,"timestamp":`) && p.time(&ts) &&
		p.lit(`}`) && len(p.b) == 0
	if !ok {
		return false
	}
	// As encoding/json: the members present are set, the others kept.
	r.BaseRev, r.NewRev, r.Patches, r.ConfigVersion = base, rev, nil, version
	r.HashPrev, r.HashNew, r.Timestamp = prev, next, ts
	return true
}

// idleParser consumes b from the front.
type idleParser struct{ b []byte }

func (p *idleParser) lit(s string) bool {
	if len(p.b) < len(s) || string(p.b[:len(s)]) != s {
		return false
	}
	p.b = p.b[len(s):]
	return true
}

// int reads an integer as json.Marshal writes one: an optional minus,
// then 0 or up to 18 digits without a leading zero (so it cannot overflow).
func (p *idleParser) int(v *int64) bool {
	neg := len(p.b) > 0 && p.b[0] == '-'
	i := 0
	if neg {
		i = 1
	}
	start := i
	var n int64
	for i < len(p.b) && p.b[i] >= '0' && p.b[i] <= '9' && i-start < 18 {
		n = n*10 + int64(p.b[i]-'0')
		i++
	}
	digits := i - start
	if digits == 0 || digits > 1 && p.b[start] == '0' || i < len(p.b) && p.b[i] >= '0' && p.b[i] <= '9' {
		return false
	}
	if neg {
		if n == 0 {
			return false // "-0": left to encoding/json
		}
		n = -n
	}
	*v, p.b = n, p.b[i:]
	return true
}

// hex reads a string of at most MaxIDBytes lower-case hex digits.
func (p *idleParser) hex(v *string) bool {
	if len(p.b) == 0 || p.b[0] != '"' {
		return false
	}
	i := 1
	for i < len(p.b) && i <= MaxIDBytes && (p.b[i] >= '0' && p.b[i] <= '9' || p.b[i] >= 'a' && p.b[i] <= 'f') {
		i++
	}
	if i >= len(p.b) || p.b[i] != '"' {
		return false
	}
	*v, p.b = string(p.b[1:i]), p.b[i+1:]
	return true
}

// time reads a timestamp with time.Time's own JSON decoding (RFC 3339),
// of the characters one has only.
func (p *idleParser) time(v *time.Time) bool {
	if len(p.b) == 0 || p.b[0] != '"' {
		return false
	}
	i := 1
	for i < len(p.b) && i < 64 && (p.b[i] >= '0' && p.b[i] <= '9' || p.b[i] == '-' || p.b[i] == ':' || p.b[i] == '.' || p.b[i] == '+' || p.b[i] == 'T' || p.b[i] == 'Z') {
		i++
	}
	if i >= len(p.b) || p.b[i] != '"' {
		return false
	}
	if err := v.UnmarshalJSON(p.b[:i+1]); err != nil {
		return false
	}
	p.b = p.b[i+1:]
	return true
}
