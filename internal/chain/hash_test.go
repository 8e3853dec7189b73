package chain

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"testing"
	"time"
)

var t0 = time.Date(2025, 3, 4, 5, 6, 7, 890123000, time.FixedZone("x", 3600))

// log3 is a three-event log chained from genesis.
func log3(t *testing.T) []Event {
	t.Helper()
	evs := []Event{
		{Rev: 1, Type: "UserMsg", Lane: "edge", Payload: json.RawMessage(`{"text":"hi"}`), Time: t0},
		{Rev: 2, Type: "ModelOutput", Lane: "edge", Payload: json.RawMessage(`{"text":"hello","model":"m"}`), Time: t0},
		{Rev: 3, Type: "CoreStarted", Lane: "core", Payload: json.RawMessage(`{"job":"j1","n":1.50e1}`), Time: t0.Add(time.Microsecond)},
	}
	prev := ""
	for i := range evs {
		h, err := Hash(prev, evs[i])
		if err != nil {
			t.Fatal(err)
		}
		evs[i].Hash, prev = h, h
	}
	return evs
}

// TestHashDefinition recomputes one hash from its written definition, so a
// change of the format (which would orphan every stored log) fails here.
func TestHashDefinition(t *testing.T) {
	e := Event{Rev: 7, Type: "UserMsg", Lane: "edge", Payload: json.RawMessage(` {"text": "<b>", "a": 1E2} `), Time: t0}
	prev := "ab"
	sum := sha256.Sum256([]byte(prev + `{"lane":"edge","payload":{"a":100,"text":"\u003cb\u003e"},"rev":7,"time":"2025-03-04T04:06:07.890123Z","type":"UserMsg"}`))
	want := hex.EncodeToString(sum[:])
	if got, err := Hash(prev, e); got != want || err != nil {
		t.Errorf("Hash() = %s, %v; want %s", got, err, want)
	}
	none := Event{Rev: 1, Type: "T", Time: t0}
	sum = sha256.Sum256([]byte(`{"lane":"","payload":null,"rev":1,"time":"2025-03-04T04:06:07.890123Z","type":"T"}`))
	if got, _ := Hash("", none); got != hex.EncodeToString(sum[:]) {
		t.Errorf("Hash(no payload, no lane) = %s; want %x", got, sum)
	}
}

func TestVerify(t *testing.T) {
	good := log3(t)
	if err := Verify("", good); err != nil {
		t.Fatalf("Verify(a good log) = %v", err)
	}
	if err := Verify(good[0].Hash, good[1:]); err != nil {
		t.Errorf("Verify(from event 1's hash, events 2-3) = %v", err)
	}
	// Equivalent JSON verifies: what jsonb gives back.
	reordered := log3(t)
	reordered[2].Payload = json.RawMessage(`{"n": 15.0, "job": "j1"}`)
	reordered[0].Time = t0.UTC()
	if err := Verify("", reordered); err != nil {
		t.Errorf("Verify(payload as jsonb prints it) = %v", err)
	}
	for _, tc := range []struct {
		name    string
		prev    string
		change  func(evs []Event) []Event
		wantRev int64
		want    error
	}{
		{"payload changed", "", func(e []Event) []Event { e[1].Payload = json.RawMessage(`{"text":"forged"}`); return e }, 2, ErrBroken},
		{"type changed", "", func(e []Event) []Event { e[2].Type = "CoreStopped"; return e }, 3, ErrBroken},
		{"lane changed", "", func(e []Event) []Event { e[0].Lane = "core"; return e }, 1, ErrBroken},
		{"time changed", "", func(e []Event) []Event { e[1].Time = e[1].Time.Add(time.Microsecond); return e }, 2, ErrBroken},
		{"hash changed", "", func(e []Event) []Event { e[0].Hash = "00"; return e }, 1, ErrBroken},
		{"wrong start", "ff", func(e []Event) []Event { return e }, 1, ErrBroken},
		{"renumbered", "", func(e []Event) []Event { e[2].Rev = 4; return e }, 4, ErrNotConsecutive},
		{"dropped", "", func(e []Event) []Event { return []Event{e[0], e[2]} }, 3, ErrNotConsecutive},
		{"not JSON", "", func(e []Event) []Event { e[0].Payload = json.RawMessage(`{`); return e }, 1, nil},
	} {
		err := Verify(tc.prev, tc.change(log3(t)))
		var b *Break
		if !errors.As(err, &b) || b.Rev != tc.wantRev || (tc.want != nil && !errors.Is(err, tc.want)) {
			t.Errorf("%s: Verify() = %v; want a break at event %d (%v)", tc.name, err, tc.wantRev, tc.want)
		}
	}
}

func TestAppendStringMapsNUL(t *testing.T) {
	for in, want := range map[string]string{
		"plain": `"plain"`, "a\x00b": "\"a\uFFFDb\"", "<&>": `"\u003c\u0026\u003e"`, "\xff": "\"\uFFFD\"",
	} {
		got := AppendString(nil, in)
		if string(got) != want {
			t.Errorf("AppendString(%q) = %s; want %s", in, got, want)
		}
		if c, _ := Canonical(got); string(c) != string(got) {
			t.Errorf("AppendString(%q) = %s is not canonical (%s)", in, got, c)
		}
	}
}
