package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"syscall"
	"unicode/utf8"
)

// EditSecrets changes secrets.json under an exclusive lock: it reads the
// file (refusing it as Load does: not 0600, not choird's user's, too large,
// malformed), lets edit change the map, and rewrites it atomically with mode
// 0600, through a symbolic link if secrets.json is one (WriteFileAtomic).
// Concurrent editors are serialised; a failing edit, or a result choird
// would refuse (a value of invalid UTF-8 or over MaxSecretValueBytes, a file
// over MaxSecretsBytes), writes nothing.
func EditSecrets(home Home, edit func(Secrets) error) error {
	lock, err := os.OpenFile(home.SecretsPath()+".lock", os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return fmt.Errorf("lock secrets: %w", err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("lock secrets: %w", err)
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN)
	s, err := LoadSecrets(home)
	if err != nil {
		return err
	}
	if err := edit(s); err != nil {
		return err
	}
	for _, name := range s.Names() {
		if err := ValidSecretValue(s[name]); err != nil {
			return fmt.Errorf("secret %q: %w; nothing written", name, err)
		}
	}
	data := MarshalSecrets(s)
	if len(data) > MaxSecretsBytes {
		return fmt.Errorf("%s would be %d bytes, over its limit of %d MiB; nothing written", home.SecretsPath(), len(data), MaxSecretsBytes>>20)
	}
	return WriteFileAtomic(home.SecretsPath(), data, 0o600)
}

// ValidSecretValue says why value cannot be stored in secrets.json, or nil:
// it must be valid UTF-8 (JSON would silently change other bytes) and at
// most MaxSecretValueBytes.
func ValidSecretValue(value string) error {
	if len(value) > MaxSecretValueBytes {
		return fmt.Errorf("the value is %d bytes, over the limit of %d MiB", len(value), MaxSecretValueBytes>>20)
	}
	if !utf8.ValidString(value) {
		return errors.New("the value is not valid UTF-8, which secrets.json (JSON text) cannot hold unchanged: encode a binary secret, e.g. in base64")
	}
	return nil
}

// MarshalSecrets renders secrets.json with sorted names.
func MarshalSecrets(s Secrets) []byte {
	names := s.Names()
	var b bytes.Buffer
	b.WriteString("{")
	for i, n := range names {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString("\n  ")
		b.Write(jsonString(n))
		b.WriteString(": ")
		b.Write(jsonString(s[n]))
	}
	if len(names) > 0 {
		b.WriteString("\n")
	}
	b.WriteString("}\n")
	return b.Bytes()
}

// ValidSecretName reports whether name can be a secret name.
func ValidSecretName(name string) error {
	if !secretNameRE.MatchString(name) {
		return fmt.Errorf("secret name %q: want 1-128 characters of A-Z, a-z, 0-9, '.', '-' and '_', starting with a letter or digit", name)
	}
	return nil
}

func jsonString(s string) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(s)
	return bytes.TrimRight(b.Bytes(), "\n")
}

// AddAgent inserts a placeholder agent entry (§17.8) into config.json's text,
// keeping every other key and its order. It refuses an existing id.
func AddAgent(data []byte, id string, repoURL string) ([]byte, error) {
	if !NamePattern.MatchString(id) {
		return nil, fmt.Errorf("agent id %q: want 1-48 characters of a-z, 0-9, '-' and '_', starting with a letter or digit", id)
	}
	return editTree(data, func(tree *node) error {
		agents := tree.field("agents")
		if agents == nil {
			agents = &node{kind: 'o'}
			tree.keys, tree.vals = append(tree.keys, "agents"), append(tree.vals, agents)
		}
		if agents.kind != 'o' {
			return fmt.Errorf("%s: agents is not an object", ConfigFile)
		}
		if agents.field(id) != nil {
			return fmt.Errorf("agent %q already exists in %s", id, ConfigFile)
		}
		str := func(s string) *node { return &node{kind: 's', str: s} }
		entry := &node{kind: 'o',
			keys: []string{"repo", "defaults"},
			vals: []*node{
				{kind: 'o', keys: []string{"url", "ref"}, vals: []*node{str(repoURL), str(DefaultRef)}},
				{kind: 'o',
					keys: []string{"workspace", "llm", "voice_profile", "git_identity", "notion", "email", "dm"},
					vals: []*node{str(""), str(""), str(""), str(""), str(""), str(""), str("")}},
			},
		}
		agents.keys, agents.vals = append(agents.keys, id), append(agents.vals, entry)
		return nil
	})
}

// editTree changes config.json's text through its parsed tree and writes it
// back indented, keeping every key and its order.
func editTree(data []byte, edit func(tree *node) error) ([]byte, error) {
	tree, err := parseTree(data, MaxConfigBytes)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", ConfigFile, err)
	}
	if tree.kind != 'o' {
		return nil, fmt.Errorf("%s: the top level is not an object", ConfigFile)
	}
	if err := edit(tree); err != nil {
		return nil, err
	}
	var b bytes.Buffer
	tree.write(&b, "")
	b.WriteString("\n")
	return b.Bytes(), nil
}

func (n *node) field(key string) *node {
	for i := len(n.keys) - 1; i >= 0; i-- {
		if n.keys[i] == key {
			return n.vals[i]
		}
	}
	return nil
}

// write renders the tree as indented JSON, keys in their original order.
func (n *node) write(b *bytes.Buffer, indent string) {
	switch n.kind {
	case 'o', 'a':
		open, close := "{", "}"
		if n.kind == 'a' {
			open, close = "[", "]"
		}
		b.WriteString(open)
		for i, v := range n.vals {
			if i > 0 {
				b.WriteString(",")
			}
			b.WriteString("\n" + indent + "  ")
			if n.kind == 'o' {
				b.Write(jsonString(n.keys[i]))
				b.WriteString(": ")
			}
			v.write(b, indent+"  ")
		}
		if len(n.vals) > 0 {
			b.WriteString("\n" + indent)
		}
		b.WriteString(close)
	case 's':
		b.Write(jsonString(n.str))
	default:
		b.WriteString(n.raw)
	}
}

// Skeleton is the config.json `choirctl init` writes: every section present
// and empty, Postgres on localhost expecting a secret named "postgres", and
// the tunables at their defaults.
func Skeleton() []byte {
	c := Default()
	c.Postgres = Postgres{Host: "localhost", Port: 5432, Database: "choir", SSLMode: DefaultSSLMode, PoolSize: DefaultPoolSize, Secret: "postgres"}
	c.GlobalRepo.Ref = DefaultRef
	c.Workspaces, c.Models, c.TTS, c.VoiceProfiles = map[string]Workspace{}, map[string]Model{}, map[string]TTS{}, map[string]VoiceProfile{}
	c.GitIdentities, c.NotionIntegrations, c.EmailAccounts = map[string]GitIdentity{}, map[string]Notion{}, map[string]EmailAccount{}
	c.Search, c.Gateways, c.DMs, c.Agents = map[string]Search{}, map[string]Gateway{}, map[string]DM{}, map[string]Agent{}
	out, _ := json.MarshalIndent(c, "", "  ")
	return append(out, '\n')
}

// SortedNames is the names of a resource map, sorted.
func SortedNames[M ~map[string]V, V any](m M) []string {
	return sortedKeys(m)
}

// SetGlobalRepo sets global_repo.url in config.json's text, keeping every
// other key and its order.
func SetGlobalRepo(data []byte, url string) ([]byte, error) {
	return editTree(data, func(tree *node) error {
		repo := tree.field("global_repo")
		if repo == nil {
			repo = &node{kind: 'o'}
			tree.keys, tree.vals = append(tree.keys, "global_repo"), append(tree.vals, repo)
		}
		if repo.kind != 'o' {
			return fmt.Errorf("%s: global_repo is not an object", ConfigFile)
		}
		if u := repo.field("url"); u != nil {
			*u = node{kind: 's', str: url}
		} else {
			repo.keys, repo.vals = append(repo.keys, "url"), append(repo.vals, &node{kind: 's', str: url})
		}
		return nil
	})
}
