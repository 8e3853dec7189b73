package config

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
)

// File names inside the home directory.
const (
	ConfigFile  = "config.json"
	SecretsFile = "secrets.json"
)

// Parse decodes config.json strictly over the defaults. It returns Problems
// listing every structural fault (syntax, unknown fields, wrong types,
// duplicate keys); it does not check meaning: call Validate for that.
func Parse(data []byte) (*Config, error) {
	tree, err := parseTree(data)
	if err != nil {
		return nil, Problems{{File: ConfigFile, Message: err.Error()}}
	}
	var ps Problems
	checkShape(ConfigFile, tree, reflect.TypeFor[Config](), "", &ps)
	if len(ps) > 0 {
		return nil, ps.sorted()
	}
	c := Default()
	if err := json.Unmarshal(data, &c); err != nil {
		// checkShape accepted the file, so this is a bug in checkShape.
		return nil, Problems{{File: ConfigFile, Message: "internal: " + err.Error()}}
	}
	c.applyDefaults()
	return &c, nil
}

// Secrets is secrets.json: secret name → value. Its values never leave choird
// except to the agent that is bound to the resource naming them.
type Secrets map[string]string

// ParseSecrets decodes secrets.json: a strict JSON object of string → string.
// Its problems never quote a value.
func ParseSecrets(data []byte) (Secrets, error) {
	tree, err := parseTree(data)
	if err != nil {
		return nil, Problems{{File: SecretsFile, Message: err.Error()}}
	}
	var ps Problems
	if tree.kind != 'o' {
		ps.add(SecretsFile, "", "", "want a JSON object of secret name → string value, got %s", tree.kindName())
		return nil, ps
	}
	for _, d := range tree.dupes {
		ps.add(SecretsFile, d, "", "this secret appears more than once; keep one")
	}
	s := make(Secrets, len(tree.keys))
	for i, name := range tree.keys {
		v := tree.vals[i]
		if !secretNameRE.MatchString(name) {
			ps.add(SecretsFile, name, "", "a secret name must match %s", secretNameRE)
		}
		if v.kind != 's' {
			ps.add(SecretsFile, name, "", "want a string value, got %s (value not shown)", v.kindName())
			continue
		}
		s[name] = v.str
	}
	return s, ps.sorted().Err()
}

// Loaded is one consistent read of the home directory's two files.
type Loaded struct {
	Config  *Config
	Secrets Secrets
	// Version identifies the content of config.json (a short SHA-256).
	Version string
}

// Load reads, parses and validates config.json and secrets.json from home.
// It refuses a secrets.json that group or others may access. The returned
// error is Problems when the files are wrong, or an I/O error.
func Load(home Home) (*Loaded, error) {
	data, err := os.ReadFile(home.ConfigPath())
	if err != nil {
		if os.IsNotExist(err) {
			return nil, fmt.Errorf("%s does not exist: run `choirctl init` to create it", home.ConfigPath())
		}
		return nil, fmt.Errorf("read config: %w", err)
	}
	secrets, err := LoadSecrets(home)
	if err != nil {
		return nil, err
	}
	c, err := Parse(data)
	if err != nil {
		return nil, err
	}
	if err := Validate(c, secrets); err != nil {
		return nil, err
	}
	sum := sha256.Sum256(data)
	return &Loaded{Config: c, Secrets: secrets, Version: hex.EncodeToString(sum[:6])}, nil
}

// LoadSecrets reads secrets.json, refusing it when its mode lets group or
// others in.
func LoadSecrets(home Home) (Secrets, error) {
	path := home.SecretsPath()
	if err := CheckSecretsMode(path); err != nil {
		return nil, err
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read secrets: %w", err)
	}
	return ParseSecrets(data)
}

// CheckSecretsMode refuses a secrets file that group or others may access.
func CheckSecretsMode(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		if os.IsNotExist(err) {
			return fmt.Errorf("%s does not exist: run `choirctl init` to create it", path)
		}
		return fmt.Errorf("stat secrets: %w", err)
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return fmt.Errorf("%s has mode %#o, so group or others can read it: run `chmod 600 %s`", path, perm, path)
	}
	return nil
}
