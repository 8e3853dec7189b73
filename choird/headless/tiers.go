package headless

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"
	"unicode/utf8"
)

// Tier is a doc tier of a work repository (seed 002 §9): what a run may
// change freely (NOTES), only through a merged SPEC_CHANGE_REQUEST
// (SPECS), or only with a human's approval of the commit (DOCTRINE).
type Tier string

const (
	TierDoctrine Tier = "DOCTRINE"
	TierSpecs    Tier = "SPECS"
	TierNotes    Tier = "NOTES"
)

// TiersFile is where a work repository declares its doc tiers, relative to
// its root. The file itself is DOCTRINE whatever it says.
const TiersFile = ".choir/docs.json"

// maxTiersFile bounds the tier file; maxTierEntries its entries per tier.
const (
	maxTiersFile   = 64 << 10
	maxTierEntries = 256
)

// DocTiers is a repository's declaration, .choir/docs.json:
//
//	{"doctrine": ["DOCTRINE.md", "docs/doctrine/"],
//	 "specs":    ["SPECS/", "docs/api.md"],
//	 "notes":    ["notes/"]}
//
// Each entry is a path relative to the repository's root: a file, or a
// directory prefix when it ends in "/". A path takes the tier of its
// longest matching entry; a path no entry matches has no tier (code and
// everything else: free, like NOTES). An empty or absent file declares
// nothing but itself.
type DocTiers struct {
	Doctrine []string `json:"doctrine,omitempty"`
	Specs    []string `json:"specs,omitempty"`
	Notes    []string `json:"notes,omitempty"`
}

// ParseDocTiers reads a tier file's bytes; name is what errors call the
// file. Unknown members, paths that leave the repository (absolute, "..",
// backslashes), unclean paths, and one path in two tiers are refused.
func ParseDocTiers(name string, data []byte) (DocTiers, error) {
	var t DocTiers
	if len(bytes.TrimSpace(data)) == 0 {
		return t, nil
	}
	if len(data) > maxTiersFile {
		return t, fmt.Errorf("%s: %d bytes, over the limit of %d: declare directories (\"specs/\") rather than every file", name, len(data), maxTiersFile)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&t); err != nil {
		return DocTiers{}, fmt.Errorf("%s: %v: write one JSON object with the lists \"doctrine\", \"specs\" and \"notes\" (paths relative to the repository, a directory ending in \"/\")", name, err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return DocTiers{}, fmt.Errorf("%s: more than one JSON value: keep one object", name)
	}
	seen := map[string]string{}
	for _, tier := range []struct {
		key  string
		list []string
	}{{"doctrine", t.Doctrine}, {"specs", t.Specs}, {"notes", t.Notes}} {
		if len(tier.list) > maxTierEntries {
			return DocTiers{}, fmt.Errorf("%s: %s has %d entries, over the limit of %d: declare directories instead", name, tier.key, len(tier.list), maxTierEntries)
		}
		for i, p := range tier.list {
			where := fmt.Sprintf("%s: %s[%d]", name, tier.key, i)
			if err := checkRepoPath(p, true); err != nil {
				return DocTiers{}, fmt.Errorf("%s: %w", where, err)
			}
			if other, dup := seen[p]; dup {
				return DocTiers{}, fmt.Errorf("%s: %q is declared already in %s: give each path one tier", where, p, other)
			}
			seen[p] = fmt.Sprintf("%s[%d]", tier.key, i)
		}
	}
	return t, nil
}

// checkRepoPath checks a path relative to a repository's root: not empty,
// not absolute, no "..", ".", empty segments or backslashes, valid UTF-8
// without control characters; a trailing "/" (a directory) only when dir.
func checkRepoPath(p string, dir bool) error {
	if p == "" {
		return errors.New("is empty: give a path relative to the repository's root")
	}
	if len(p) > 1024 || !utf8.ValidString(p) {
		return fmt.Errorf("%q is not a path of at most 1024 bytes of UTF-8", p)
	}
	for _, r := range p {
		if r < 0x20 || r == 0x7f || r == '\\' {
			return fmt.Errorf("%q holds a control character or a backslash: use / between directories", p)
		}
	}
	trimmed := p
	if dir {
		trimmed = strings.TrimSuffix(p, "/")
	}
	if strings.HasPrefix(p, "/") {
		return fmt.Errorf("%q is absolute: give it relative to the repository's root", p)
	}
	for _, seg := range strings.Split(trimmed, "/") {
		switch seg {
		case "..":
			return fmt.Errorf("%q leaves the repository (..): give a path inside it", p)
		case ".", "":
			return fmt.Errorf("%q is not clean (write it as %q)", p, path.Clean(p))
		}
	}
	return nil
}

// TierOf is the tier of a path relative to the repository's root: the
// tier file is DOCTRINE; otherwise the longest declared entry that is the
// path itself or a directory holding it decides; "" when none does.
func (t DocTiers) TierOf(p string) Tier {
	if p == TiersFile {
		return TierDoctrine
	}
	best, tier := -1, Tier("")
	for _, d := range []struct {
		tier Tier
		list []string
	}{{TierDoctrine, t.Doctrine}, {TierSpecs, t.Specs}, {TierNotes, t.Notes}} {
		for _, e := range d.list {
			match := e == p || strings.HasSuffix(e, "/") && strings.HasPrefix(p, e)
			if match && len(e) > best {
				best, tier = len(e), d.tier
			}
		}
	}
	return tier
}

// DocChange is one file a patch touches in a gated tier (DOCTRINE or
// SPECS), as the PatchReceipt records it.
type DocChange struct {
	Path string `json:"path"`
	Tier Tier   `json:"tier"`
}

// GatedChanges lists the files among files (paths relative to the
// repository's root, as a patch names them) in DOCTRINE or SPECS, in the
// order given.
func (t DocTiers) GatedChanges(files []string) []DocChange {
	var out []DocChange
	for _, f := range files {
		switch tier := t.TierOf(f); tier {
		case TierDoctrine, TierSpecs:
			out = append(out, DocChange{Path: f, Tier: tier})
		}
	}
	return out
}

// ReadDocTiers reads and parses dir's tier file (a checked-out worktree,
// before the agent worked in it). An absent file declares nothing but
// itself; a file that is not a regular file (a symlink that could point
// outside the repository) is refused, as is one that does not parse.
func ReadDocTiers(dir string) (DocTiers, error) {
	p := filepath.Join(dir, filepath.FromSlash(TiersFile))
	fi, err := os.Lstat(p)
	if errors.Is(err, os.ErrNotExist) {
		return DocTiers{}, nil
	}
	if err != nil {
		return DocTiers{}, fmt.Errorf("%s: %w", TiersFile, err)
	}
	if !fi.Mode().IsRegular() {
		return DocTiers{}, fmt.Errorf("%s is not a regular file (%s): make it one, committed by a human", TiersFile, fi.Mode().Type())
	}
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return DocTiers{}, fmt.Errorf("%s: %w", TiersFile, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxTiersFile+1))
	if err != nil {
		return DocTiers{}, fmt.Errorf("%s: %w", TiersFile, err)
	}
	return ParseDocTiers(TiersFile, data)
}
