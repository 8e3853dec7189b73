package rpc

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"
)

// idleBodies are the bodies the client sends for idle heartbeats.
func idleBodies(t testing.TB) [][]byte {
	var out [][]byte
	for _, r := range []HeartbeatReq{
		{},
		{BaseRev: 41, NewRev: 41, ConfigVersion: 3, HashPrev: "9f86d081884c7d65", HashNew: "9f86d081884c7d65", Timestamp: time.Date(2026, 11, 29, 9, 58, 1, 123456789, time.UTC)},
		{BaseRev: 1 << 40, NewRev: 1 << 40, ConfigVersion: -1, HashPrev: strings.Repeat("a", MaxIDBytes), Timestamp: time.Date(2026, 1, 2, 3, 4, 5, 0, time.FixedZone("", 3600))},
	} {
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
	return out
}

// TestIdleBeatsTakeTheShortPath: the client's idle heartbeats are read
// without encoding/json, as encoding/json reads them; a body a little
// different goes to encoding/json.
func TestIdleBeatsTakeTheShortPath(t *testing.T) {
	for _, body := range idleBodies(t) {
		var fast, slow HeartbeatReq
		if !decodeIdleBeat(body, &fast) {
			t.Errorf("decodeIdleBeat(%s) = false; want the short path", body)
		}
		if err := decodeStrict(body, &slow); err != nil || !reflect.DeepEqual(fast, slow) {
			t.Errorf("%s: short path %+v; encoding/json %+v, %v", body, fast, slow, err)
		}
	}
	for _, body := range []string{
		`{"base_rev":0,"new_rev":0,"patches":null,"config_version":0,"hash_prev":"","hash_new":"","timestamp":"0001-01-01T00:00:00Z"} `,
		`{"base_rev":0,"new_rev":0,"patches":[],"config_version":0,"hash_prev":"","hash_new":"","timestamp":"0001-01-01T00:00:00Z"}`,
		`{"base_rev":01,"new_rev":0,"patches":null,"config_version":0,"hash_prev":"","hash_new":"","timestamp":"0001-01-01T00:00:00Z"}`,
		`{"base_rev":1e3,"new_rev":0,"patches":null,"config_version":0,"hash_prev":"","hash_new":"","timestamp":"0001-01-01T00:00:00Z"}`,
		`{"base_rev":0,"new_rev":0,"patches":null,"config_version":0,"hash_prev":"A","hash_new":"","timestamp":"0001-01-01T00:00:00Z"}`,
		`{"base_rev":0,"new_rev":0,"patches":null,"config_version":0,"hash_prev":"","hash_new":"","timestamp":"0001-01-01T00:00:00Z","final":true}`,
		`{"base_rev":0,"new_rev":0,"patches":null,"config_version":0,"hash_prev":"","hash_new":"","timestamp":"2026-13-01T00:00:00Z"}`,
		`{"base_rev":9999999999999999999,"new_rev":0,"patches":null,"config_version":0,"hash_prev":"","hash_new":"","timestamp":"0001-01-01T00:00:00Z"}`,
		`{"base_rev":0,"new_rev":0,"patches":null,"config_version":0,"hash_prev":"` + strings.Repeat("a", MaxIDBytes+1) + `","hash_new":"","timestamp":"0001-01-01T00:00:00Z"}`,
	} {
		var r HeartbeatReq
		if decodeIdleBeat([]byte(body), &r) {
			t.Errorf("decodeIdleBeat(%s) = true; want it left to encoding/json", clip(body))
		}
	}
}

// FuzzDecodeIdleBeat: whatever body the short path accepts, encoding/json
// accepts too (DecodeStrict's checks) and decodes to the same request,
// also into a request that already holds values.
func FuzzDecodeIdleBeat(f *testing.F) {
	for _, b := range idleBodies(f) {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		held := HeartbeatReq{BaseRev: 5, Patches: []Event{{Rev: 1}}, Snapshot: json.RawMessage(`{}`), SnapshotRev: 2, Final: true, Summary: json.RawMessage(`{}`)}
		fast, slow := held, held
		if !decodeIdleBeat(body, &fast) {
			return
		}
		if err := decodeStrict(body, &slow); err != nil {
			t.Fatalf("the short path accepted %q, which DecodeStrict refuses: %v", body, err)
		}
		if !reflect.DeepEqual(fast, slow) {
			t.Fatalf("%q: short path %+v; encoding/json %+v", body, fast, slow)
		}
	})
}
