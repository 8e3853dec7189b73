package jsonschema

import (
	"encoding/json"
	"testing"
)

// BenchmarkValidate measures one typical tool input (choir.fs.write) passing
// its schema, the check the arbiter makes before every tool call.
func BenchmarkValidate(b *testing.B) {
	s := MustCompile(writeSchema)
	in := json.RawMessage(`{"path":"main.go","content":"package main\n\nfunc main() {}\n","mode":"overwrite","lines":[1,2,3]}`)
	if err := s.Validate(in); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := s.Validate(in); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkValidateFailing measures an input with several failures, where
// messages and pointers are built.
func BenchmarkValidateFailing(b *testing.B) {
	s := MustCompile(writeSchema)
	in := json.RawMessage(`{"content":7,"mode":"x","lines":[1,"2",0,2.5],"extra":true}`)
	b.ReportAllocs()
	for b.Loop() {
		if err := s.Validate(in); err == nil {
			b.Fatal("Validate = nil; want failures")
		}
	}
}

func BenchmarkCompile(b *testing.B) {
	raw := json.RawMessage(writeSchema)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Compile(raw); err != nil {
			b.Fatal(err)
		}
	}
}
