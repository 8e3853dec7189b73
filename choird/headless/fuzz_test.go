package headless

import (
	"encoding/json"
	"fmt"
	"testing"
)

// Project reads receipts that anything may have written (an old choird, a
// bug, a hand-edited row): it must never panic, and must account for every
// receipt it could not use.
func FuzzProject(f *testing.F) {
	for _, body := range []string{
		`{"type":"HYPOTHESIS","text":"x","test":"t","budget":{"tokens":1}}`,
		`{"type":"HYPOTHESIS","text":"x","test":"t","budget":null}`,
		`{"verifier":"v","passed":true,"supports":["r-000000000001#1"]}`,
		`{"status":"failed","reason":"x"}`, `{"commit":"c","evidence":null}`, `null`, `[]`, `{"type":7}`, ``,
	} {
		for _, k := range []Kind{KindNote, KindVerifierResults, KindRunEnded, KindCommitReceipt, KindCommitDecision} {
			f.Add(string(k), body)
		}
	}
	f.Fuzz(func(t *testing.T, kind, body string) {
		rs := []Receipt{
			{RunID: "r-000000000001", Seq: 1, Kind: KindNote, Body: json.RawMessage(`{"type":"OBSERVATION","text":"seen"}`)},
			{RunID: "r-000000000001", Seq: 2, Kind: Kind(kind), Body: json.RawMessage(body)},
			{RunID: "r-000000000001", Seq: 3, Kind: Kind(kind), Body: json.RawMessage(body)},
		}
		st := Project(rs)
		if st.Receipts != 3 || len(st.Skipped) > 2 {
			t.Errorf("Project() = %+v", st)
		}
		for _, a := range st.Assert {
			if len(a.Cites) == 0 {
				t.Errorf("an ASSERT without citations: %+v", a)
			}
		}
	})
}

// Note.Check either accepts a note or says where it is wrong.
func FuzzNoteCheck(f *testing.F) {
	f.Add(`{"type":"HYPOTHESIS","text":"x","test":"t","budget":{"tokens":1}}`)
	f.Add(`{"type":"CONJECTURE","claim":"c","test":"t","edge":"e","delta_o":"d","scope":"s","cites":["r-000000000001#1"]}`)
	f.Add(`{"type":"DRIVE","text":"x","anti_drive":"\u0000"}`)
	f.Fuzz(func(t *testing.T, body string) {
		var n Note
		if json.Unmarshal([]byte(body), &n) != nil {
			return
		}
		err := n.Check()
		if err == nil {
			return
		}
		ve, ok := err.(*ValidationError)
		if !ok || ve.Where == "" || ve.Problem == "" {
			t.Errorf("Check() = %#v; want a ValidationError with where and what", err)
		}
	})
}

// BenchmarkProject rebuilds the state vector of 100 runs of 100 receipts.
func BenchmarkProject(b *testing.B) {
	var rs []Receipt
	for run := range 100 {
		id := fmt.Sprintf("r-%012x", run)
		for seq := int64(1); seq <= 100; seq++ {
			body := `{"type":"HYPOTHESIS","text":"h","test":"t","budget":{"tokens":1}}`
			kind := KindNote
			if seq%10 == 0 {
				kind, body = KindVerifierResults, fmt.Sprintf(`{"verifier":"v","passed":true,"supports":["%s#%d"]}`, id, seq-1)
			}
			rs = append(rs, Receipt{RunID: id, Seq: seq, Kind: kind, Body: json.RawMessage(body)})
		}
	}
	b.ResetTimer()
	for b.Loop() {
		Project(rs)
	}
}
