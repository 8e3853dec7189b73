package jsonschema

import (
	"encoding/json"
	"testing"
)

// FuzzValidate feeds arbitrary schema and instance bytes through Compile and
// Validate: neither may panic, and validation must be deterministic.
func FuzzValidate(f *testing.F) {
	f.Add([]byte(writeSchema), []byte(`{"path":"a","content":"b","lines":[1,"x"]}`))
	f.Add([]byte(`{"type":["integer","null"],"minimum":1e999999999}`), []byte(`1e-999999999`))
	f.Add([]byte(`{"enum":[1,{"a":[null]}],"maxLength":2}`), []byte(`{"a":[null]}`))
	f.Add([]byte(`{"items":{"additionalProperties":false,"required":["a~/b"]}}`), []byte(`[{"x":1},{}]`))
	f.Add([]byte(`false`), []byte(`"日本語"`))
	f.Fuzz(func(t *testing.T, schema, instance []byte) {
		s, err := Compile(json.RawMessage(schema))
		if err != nil {
			if s != nil {
				t.Fatalf("Compile(%q) returned a schema with error %v", schema, err)
			}
			return
		}
		first := errString(s.Validate(json.RawMessage(instance)))
		if again := errString(s.Validate(json.RawMessage(instance))); again != first {
			t.Fatalf("Validate(%q) = %q then %q; want the same", instance, first, again)
		}
	})
}
