package config

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"reflect"

	"choir/internal/jsonlimit"
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
	tree, err := parseTree(data, MaxConfigBytes)
	if err != nil {
		return nil, Problems{{File: ConfigFile, Message: treeMessage(ConfigFile, err)}}
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
	tree, err := parseTree(data, MaxSecretsBytes)
	if err != nil {
		return nil, Problems{{File: SecretsFile, Message: treeMessage(SecretsFile, err)}}
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

// treeMessage words an error of parseTree for file.
func treeMessage(file string, err error) string {
	var le *jsonlimit.Error
	if errors.As(err, &le) {
		return limitMessage(file, le)
	}
	return err.Error()
}

// Loaded is one consistent read of the home directory's two files.
type Loaded struct {
	Config  *Config
	Secrets Secrets
	// Version identifies the content of config.json (a short SHA-256).
	Version string
}

// Load reads, parses and validates config.json and secrets.json from home,
// then checks the configuration against the host (CheckHost). It refuses a
// config.json that group or others may write and a secrets.json that is not
// mode 0600 and owned by choird's user (ReadConfig, LoadSecrets). The
// returned error is Problems when the files are wrong, or an I/O error.
func Load(home Home) (*Loaded, error) {
	var ps Problems
	// collect adds err's problems to ps; it reports false for another error.
	collect := func(err error) bool {
		if err == nil {
			return true
		}
		more, ok := err.(Problems)
		ps = append(ps, more...)
		return ok
	}
	data, err := readConfigFile(home)
	if !collect(err) {
		return nil, err
	}
	sdata, err := readSecretsFile(home)
	if !collect(err) {
		return nil, err
	}
	var secrets Secrets
	if sdata != nil {
		secrets, err = ParseSecrets(sdata)
		collect(err)
	}
	var c *Config
	if data != nil {
		c, err = Parse(data)
		collect(err)
	}
	if c != nil {
		// Without secrets (secrets.json refused), Validate would call
		// every secret missing: the file's problems are enough then.
		if secrets != nil {
			collect(Validate(c, secrets))
		}
		ps = append(ps, CheckHost(c, home)...)
	}
	if err := ps.sorted().Err(); err != nil {
		return nil, err
	}
	sum := sha256.Sum256(data)
	return &Loaded{Config: c, Secrets: secrets, Version: hex.EncodeToString(sum[:6])}, nil
}

// LoadSecrets reads and parses secrets.json, refusing it unless it is a
// regular file of mode 0600 owned by choird's user, within MaxSecretsBytes.
func LoadSecrets(home Home) (Secrets, error) {
	data, err := readSecretsFile(home)
	if err != nil {
		return nil, err
	}
	return ParseSecrets(data)
}
