// Package manifest computes the manifest hashes of an agent image's
// /choir/version.json (design §15.1): choird's build computes them from the
// repos it merges, choir-agent from the files it finds under /choir/tools
// and /choir/skills, with the same functions, so choird can compare the two
// at INIT_HELLO.
package manifest

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Canonical is a manifest's content without its formatting: compact JSON
// with object members sorted, numbers as written.
func Canonical(data []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var tree any
	if err := dec.Decode(&tree); err != nil {
		return nil, fmt.Errorf("not JSON: %v", err)
	}
	if dec.More() {
		return nil, errors.New("more than one JSON value")
	}
	return json.Marshal(tree)
}

// Hash is the hex SHA-256 over canonical manifests in name order, each
// followed by a newline. Each manifest carries its own name, so the hash
// covers (name, content) pairs.
func Hash(canon [][]byte) string {
	h := sha256.New()
	for _, c := range canon {
		h.Write(c)
		h.Write([]byte{'\n'})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// MaxFileBytes bounds one manifest read by Dir; a larger file is hashed by
// its size and first MaxFileBytes bytes, which still differs from anything
// the build accepted.
const MaxFileBytes = 1 << 20

// Dirs hashes the *.json files found in dirs, in that order, the way the
// build merges them: a later directory's file replaces an earlier one of
// the same name (tools/agent over tools/global). Other files and
// subdirectories are ignored, as the tool and skill loaders ignore them; a
// missing directory holds nothing. A file that is not JSON is hashed as
// its bytes, so it changes the hash rather than hiding from it.
func Dirs(dirs ...string) (string, error) {
	files := map[string][]byte{}
	for _, dir := range dirs {
		entries, err := os.ReadDir(dir)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return "", fmt.Errorf("hash manifests: %w", err)
		}
		for _, e := range entries {
			name, ok := strings.CutSuffix(e.Name(), ".json")
			if !ok || e.IsDir() {
				continue
			}
			data, err := readCapped(filepath.Join(dir, e.Name()))
			if err != nil {
				return "", fmt.Errorf("hash manifests: %w", err)
			}
			files[name] = data
		}
	}
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	canon := make([][]byte, 0, len(names))
	for _, n := range names {
		c, err := Canonical(files[n])
		if err != nil {
			c = files[n]
		}
		canon = append(canon, c)
	}
	return Hash(canon), nil
}

func readCapped(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil || len(data) <= MaxFileBytes {
		return data, err
	}
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	return fmt.Appendf(data[:MaxFileBytes], "\n%d bytes", st.Size()), nil
}
