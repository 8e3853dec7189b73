package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"choir/testkit"
)

// maxFuzzInput caps what one fuzz input may be: a real config.json is a few
// KiB, and the cap keeps every execution fast (no input may take
// pathological time below it).
const maxFuzzInput = 64 << 10

// problemsOf asserts err is a non-empty Problems about file, each problem
// saying something, and returns them.
func problemsOf(t *testing.T, err error, file string) Problems {
	t.Helper()
	var ps Problems
	if !errors.As(err, &ps) || len(ps) == 0 {
		t.Fatalf("error %v (%T) is not a non-empty Problems", err, err)
	}
	for _, p := range ps {
		if p.File != file || strings.TrimSpace(p.Message) == "" {
			t.Fatalf("problem %+v: want file %s and a message", p, file)
		}
		if strings.HasPrefix(p.Message, "internal:") {
			t.Fatalf("problem %+v: the structural check accepted what the decoder refused", p)
		}
	}
	return ps
}

// FuzzParseConfig: Parse answers every input with a *Config or with
// Problems naming config.json; what it accepts survives a round trip through
// json.Marshal unchanged (marshalling is a fixed point after one pass), and
// Validate answers an accepted config with nil or Problems. A config that
// validates has only names matching NamePattern, as the package promises.
func FuzzParseConfig(f *testing.F) {
	if example, err := os.ReadFile("testdata/example.json"); err == nil {
		secrets, _ := os.ReadFile("testdata/example-secrets.json")
		f.Add(example, secrets)
	}
	f.Fuzz(func(t *testing.T, data, secretsData []byte) {
		if len(data) > maxFuzzInput || len(secretsData) > maxFuzzInput {
			return
		}
		c, err := Parse(data)
		if err != nil {
			if c != nil {
				t.Fatalf("Parse returned a config with error %v", err)
			}
			problemsOf(t, err, ConfigFile)
			return
		}
		if !utf8.Valid(data) || testkit.JSONNesting(data) > MaxDepth {
			t.Fatalf("Parse accepted %q: invalid UTF-8 or nested %d deep (limit %d)", data, testkit.JSONNesting(data), MaxDepth)
		}
		first, err := json.Marshal(withEmptyMaps(c))
		if err != nil {
			t.Fatalf("Marshal(accepted config) = %v", err)
		}
		c2, err := Parse(first)
		if err != nil {
			t.Fatalf("Parse(Marshal(Parse(%q))) = %v; a config Parse accepts must survive a round trip", data, err)
		}
		if second, _ := json.Marshal(withEmptyMaps(c2)); !bytes.Equal(first, second) {
			t.Fatalf("round trip changed the config:\n%s\n%s", first, second)
		}
		var indented bytes.Buffer
		if err := json.Indent(&indented, data, "", "  "); err != nil {
			t.Fatalf("json.Indent(accepted config) = %v", err)
		}
		if c3, err := Parse(indented.Bytes()); err != nil {
			t.Fatalf("Parse accepts %q but not its indented form: %v", data, err)
		} else if third, _ := json.Marshal(withEmptyMaps(c3)); !bytes.Equal(first, third) {
			t.Fatalf("the indented form parses differently:\n%s\n%s", first, third)
		}
		secrets, _ := ParseSecrets(secretsData)
		verr := Validate(c, secrets)
		if verr != nil {
			problemsOf(t, verr, ConfigFile)
			if again := Validate(c2, secrets); again == nil || again.Error() != verr.Error() {
				t.Fatalf("Validate differs after a round trip: %v, then %v", verr, again)
			}
			return
		}
		for _, names := range [][]string{
			sortedKeys(c.Workspaces), sortedKeys(c.Models), sortedKeys(c.TTS),
			sortedKeys(c.VoiceProfiles), sortedKeys(c.GitIdentities),
			sortedKeys(c.NotionIntegrations), sortedKeys(c.EmailAccounts),
			sortedKeys(c.Search), sortedKeys(c.Gateways), sortedKeys(c.DMs),
			sortedKeys(c.Agents),
		} {
			for _, n := range names {
				if !NamePattern.MatchString(n) {
					t.Fatalf("Validate accepted the name %q", n)
				}
			}
		}
	})
}

// withEmptyMaps returns a copy of c whose absent sections (nil maps, which
// marshal as null, which Parse refuses) are empty, as a config file
// written by hand would have them.
func withEmptyMaps(c *Config) *Config {
	cp := *c
	v := reflect.ValueOf(&cp).Elem()
	for i := range v.NumField() {
		if f := v.Field(i); f.Kind() == reflect.Map && f.IsNil() {
			f.Set(reflect.MakeMap(f.Type()))
		}
	}
	return &cp
}

// alnumCanary turns s into a non-empty string of letters and digits of the
// same length, and a second one differing from it at every position: two
// secret values that JSON encodes to the same number of bytes.
func alnumCanary(s string) (string, string) {
	const set = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	if s == "" {
		s = "v"
	}
	a, b := make([]byte, len(s)), make([]byte, len(s))
	for i := range len(s) {
		j := int(s[i]) % len(set)
		a[i], b[i] = set[j], set[(j+1)%len(set)]
	}
	return string(a), string(b)
}

// FuzzParseSecrets: ParseSecrets answers every input with a map or with
// Problems naming secrets.json that never carry a value; what it accepts
// survives MarshalSecrets (the writer of `choirctl secret set`) unchanged.
// The document is a first member name: value, then arbitrary bytes; the
// error text must not depend on that value, so it is parsed twice with two
// values of the same length that differ everywhere, and both answers must
// read the same.
func FuzzParseSecrets(f *testing.F) {
	f.Fuzz(func(t *testing.T, name, value string, rest []byte) {
		if len(name) > 256 || len(value) > 256 || len(rest) > maxFuzzInput {
			return
		}
		a, b := alnumCanary(value)
		doc := func(v string) []byte {
			var d bytes.Buffer
			d.WriteString("{")
			d.Write(jsonString(name))
			d.WriteString(":")
			d.Write(jsonString(v))
			d.Write(rest)
			return d.Bytes()
		}
		sa, erra := ParseSecrets(doc(a))
		sb, errb := ParseSecrets(doc(b))
		if (erra == nil) != (errb == nil) {
			t.Fatalf("ParseSecrets accepts one value and refuses the other: %v / %v", erra, errb)
		}
		if erra != nil {
			for _, p := range problemsOf(t, erra, SecretsFile) {
				if p.Value != "" {
					t.Fatalf("problem %+v quotes a value", p)
				}
			}
			if erra.Error() != errb.Error() {
				t.Fatalf("the error depends on the secret's value:\n%v\n%v", erra, errb)
			}
			if len(a) >= 6 && strings.Contains(erra.Error(), a) && !strings.Contains(name, a) && !bytes.Contains(rest, []byte(a)) {
				t.Fatalf("error %v quotes the value %q", erra, a)
			}
			return
		}
		var decoded string
		json.Unmarshal(jsonString(name), &decoded) // the name as the file spells it
		if got := sa[decoded]; got != a {
			t.Fatalf("ParseSecrets: %q = %q; want %q", decoded, got, a)
		}
		if len(sa) != len(sb) {
			t.Fatalf("ParseSecrets gave %d then %d secrets", len(sa), len(sb))
		}
		if d := doc(a); !utf8.Valid(d) || testkit.JSONNesting(d) > MaxDepth {
			t.Fatalf("ParseSecrets accepted %q: invalid UTF-8 or nested %d deep (limit %d)", d, testkit.JSONNesting(d), MaxDepth)
		}
		for n, v := range sa {
			if ValidSecretName(n) != nil || len(v) > MaxSecretValueBytes {
				t.Fatalf("ParseSecrets accepted the name %q with a value of %d bytes", n, len(v))
			}
		}
		out := MarshalSecrets(sa)
		again, err := ParseSecrets(out)
		if err != nil {
			t.Fatalf("ParseSecrets(MarshalSecrets(...)) = %v for\n%s", err, out)
		}
		if len(again) != len(sa) {
			t.Fatalf("round trip kept %d of %d secrets", len(again), len(sa))
		}
		for n, v := range sa {
			if again[n] != v {
				t.Fatalf("round trip changed %q: %q → %q", n, v, again[n])
			}
		}
	})
}
