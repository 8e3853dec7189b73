package config

import (
	"bytes"
	"encoding/json"
)

// Nullable is a JSON value that can be absent, null, or set, three states
// the design gives different meanings (temperature: absent = default,
// null = do not send).
type Nullable[T any] struct {
	Present bool // the key was in the file
	Null    bool // its value was null
	Value   T
}

// Some returns a Nullable holding v.
func Some[T any](v T) Nullable[T] { return Nullable[T]{Present: true, Value: v} }

// Null returns an explicitly null Nullable.
func Null[T any]() Nullable[T] { return Nullable[T]{Present: true, Null: true} }

// Get returns the value and whether one is set (present and not null).
func (n Nullable[T]) Get() (T, bool) { return n.Value, n.Present && !n.Null }

// IsZero reports absence, so `omitzero` drops an absent value when marshalling.
func (n Nullable[T]) IsZero() bool { return !n.Present }

// UnmarshalJSON is only called when the key is present.
func (n *Nullable[T]) UnmarshalJSON(b []byte) error {
	n.Present = true
	if bytes.Equal(bytes.TrimSpace(b), []byte("null")) {
		n.Null = true
		var zero T
		n.Value = zero
		return nil
	}
	n.Null = false
	return json.Unmarshal(b, &n.Value)
}

// MarshalJSON writes null for an explicit null.
func (n Nullable[T]) MarshalJSON() ([]byte, error) {
	if !n.Present || n.Null {
		return []byte("null"), nil
	}
	return json.Marshal(n.Value)
}

// nullableInner lets the structural checker see through Nullable.
func (n Nullable[T]) nullableInner() any { var v T; return v }

type nullable interface{ nullableInner() any }

// Temperature returns the temperature to send and whether to send one.
func (m Model) EffectiveTemperature() (float64, bool) {
	if !m.Temperature.Present {
		return DefaultTemperature, true
	}
	return m.Temperature.Get()
}
