// Package objects is the content-addressed object store of headless runs
// (seed 002 §2.4): verifier output, reports, attestations, patches, and any
// other blob a receipt points at by its SHA-256.
//
// An object lives at <root>/<hash[:2]>/<hash>, where hash is the lowercase
// hex SHA-256 of its bytes. Writes are atomic: the bytes go to a temporary
// file in the destination directory, are fsynced, renamed into place, and
// the directory is fsynced, so a crash leaves either the whole object or
// none (plus, at worst, a temporary file that RemoveTemp clears). Files are
// mode 0600 and directories 0700: the store belongs to choird's user.
//
// Put is idempotent: the same bytes always land at the same name, and
// concurrent Puts of the same content both succeed. Get reads an object back
// and checks its hash, so a file changed on disk is reported as a
// *CorruptError instead of being returned. A name that is not 64 lowercase
// hex digits is refused before any file is touched (ErrBadHash): a hash from
// a request can never name a path outside the store.
package objects

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Errors for errors.Is.
var (
	ErrNotFound = errors.New("object not found")
	ErrBadHash  = errors.New("not an object hash (want 64 lowercase hex digits)")
	ErrTooLarge = errors.New("object too large")
	ErrCorrupt  = errors.New("object corrupt")
)

// tempPrefix starts the name of every temporary file; RemoveTemp finds
// them by it.
const tempPrefix = ".tmp-"

// Store is an object store rooted at one directory. It is safe for
// concurrent use, also by several processes.
type Store struct {
	root string
}

// Open opens the store at root, creating the directory (mode 0700) when
// it is missing.
func Open(root string) (*Store, error) {
	if root == "" {
		return nil, errors.New("object store: no directory given")
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("object store %s: %w", root, err)
	}
	if err := os.MkdirAll(abs, 0o700); err != nil {
		return nil, fmt.Errorf("object store: create %s: %w", abs, err)
	}
	return &Store{root: abs}, nil
}

// Root is the store's directory.
func (s *Store) Root() string { return s.root }

// Sum is the hash an object of data is stored under.
func Sum(data []byte) string {
	h := sha256.Sum256(data)
	return hex.EncodeToString(h[:])
}

// Valid reports whether h is an object hash: 64 lowercase hex digits.
func Valid(h string) bool {
	if len(h) != 64 {
		return false
	}
	for i := 0; i < len(h); i++ {
		c := h[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// Path returns where the object h lives (whether or not it exists), or
// ErrBadHash.
func (s *Store) Path(h string) (string, error) {
	if !Valid(h) {
		return "", fmt.Errorf("object %q: %w", truncate(h), ErrBadHash)
	}
	return filepath.Join(s.root, h[:2], h), nil
}

// Put stores data and returns its hash. Storing bytes already present is a
// no-op (a present copy that fails its hash is replaced).
func (s *Store) Put(data []byte) (string, error) {
	h := Sum(data)
	p, _ := s.Path(h)
	if s.intact(p, h) {
		return h, nil
	}
	dir := filepath.Dir(p)
	if err := s.mkdir(dir); err != nil {
		return "", err
	}
	f, err := os.CreateTemp(dir, tempPrefix+"*")
	if err != nil {
		return "", fmt.Errorf("object store: %w", err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		os.Remove(f.Name())
		return "", fmt.Errorf("object store: write %s: %w", f.Name(), err)
	}
	if err := s.commit(f, p); err != nil {
		return "", err
	}
	return h, nil
}

// PutReader stores what r yields, reading at most max bytes: a longer
// stream is refused with ErrTooLarge and nothing is stored. It returns the
// hash and the size. The bytes are streamed to a temporary file in the
// store's root (the same file system), never held in memory.
func (s *Store) PutReader(r io.Reader, max int64) (string, int64, error) {
	if max < 0 {
		return "", 0, fmt.Errorf("object store: negative size cap %d", max)
	}
	f, err := os.CreateTemp(s.root, tempPrefix+"*")
	if err != nil {
		return "", 0, fmt.Errorf("object store: %w", err)
	}
	hw := sha256.New()
	n, err := io.Copy(io.MultiWriter(f, hw), io.LimitReader(r, max+1))
	if err == nil && n > max {
		err = fmt.Errorf("more than %d bytes: %w", max, ErrTooLarge)
	}
	if err != nil {
		f.Close()
		os.Remove(f.Name())
		return "", 0, fmt.Errorf("object store: store a stream: %w", err)
	}
	h := hex.EncodeToString(hw.Sum(nil))
	p, _ := s.Path(h)
	if s.intact(p, h) {
		f.Close()
		os.Remove(f.Name())
		return h, n, nil
	}
	if err := s.mkdir(filepath.Dir(p)); err != nil {
		f.Close()
		os.Remove(f.Name())
		return "", 0, err
	}
	if err := s.commit(f, p); err != nil {
		return "", 0, err
	}
	// The rename also removed the temporary name from the root.
	if err := syncDir(s.root); err != nil {
		return "", 0, fmt.Errorf("object store: sync %s: %w", s.root, err)
	}
	return h, n, nil
}

// commit fsyncs and closes f, renames it to p and fsyncs p's directory. On
// failure the temporary file is removed.
func (s *Store) commit(f *os.File, p string) error {
	name := f.Name()
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		os.Remove(name)
		return fmt.Errorf("object store: chmod %s: %w", name, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		os.Remove(name)
		return fmt.Errorf("object store: sync %s: %w", name, err)
	}
	if err := f.Close(); err != nil {
		os.Remove(name)
		return fmt.Errorf("object store: close %s: %w", name, err)
	}
	if err := os.Rename(name, p); err != nil {
		os.Remove(name)
		return fmt.Errorf("object store: %w", err)
	}
	if err := syncDir(filepath.Dir(p)); err != nil {
		return fmt.Errorf("object store: sync %s: %w", filepath.Dir(p), err)
	}
	return nil
}

func (s *Store) mkdir(dir string) error {
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("object store: create %s: %w", dir, err)
	} else if err == nil {
		if err := syncDir(s.root); err != nil {
			return fmt.Errorf("object store: sync %s: %w", s.root, err)
		}
	}
	return nil
}

// intact reports whether p exists and holds bytes hashing to h.
func (s *Store) intact(p, h string) bool {
	f, err := os.Open(p)
	if err != nil {
		return false
	}
	defer f.Close()
	hw := sha256.New()
	if _, err := io.Copy(hw, f); err != nil {
		return false
	}
	return hex.EncodeToString(hw.Sum(nil)) == h
}

// Has reports whether the object h is present (without reading it).
func (s *Store) Has(h string) (bool, error) {
	p, err := s.Path(h)
	if err != nil {
		return false, err
	}
	fi, err := os.Lstat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("object store: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return false, &CorruptError{Hash: h, Path: p, Reason: "not a regular file (" + fi.Mode().Type().String() + ")"}
	}
	return true, nil
}

// CorruptError is an object whose file no longer matches its hash (or is
// not a regular file). It wraps ErrCorrupt.
type CorruptError struct {
	Hash   string // the name it was asked for
	Path   string // its file
	Got    string // the hash of what the file holds; "" when not computed
	Reason string // what is wrong, when not a hash mismatch
}

func (e *CorruptError) Error() string {
	what := e.Reason
	if what == "" {
		what = "its content hashes to " + e.Got
	}
	return fmt.Sprintf("object %s is corrupt: %s at %s; remove the file, then store the object again from its source (receipts pointing at it are unreadable until then)", e.Hash, what, e.Path)
}

func (e *CorruptError) Unwrap() error { return ErrCorrupt }

// Get returns the object h, checked against its hash. A missing object is
// ErrNotFound; one whose bytes do not match, a *CorruptError.
func (s *Store) Get(h string) ([]byte, error) {
	rc, err := s.Open(h)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return io.ReadAll(rc)
}

// Open returns a reader of the object h that checks the hash as it goes:
// the read that reaches the end returns a *CorruptError instead of io.EOF
// when the bytes do not match. Use it to stream a large object.
func (s *Store) Open(h string) (io.ReadCloser, error) {
	p, err := s.Path(h)
	if err != nil {
		return nil, err
	}
	f, err := os.OpenFile(p, os.O_RDONLY|noFollow, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("object %s: %w", h, ErrNotFound)
	}
	if err != nil {
		if isLoop(err) {
			return nil, &CorruptError{Hash: h, Path: p, Reason: "a symbolic link"}
		}
		return nil, fmt.Errorf("object store: %w", err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("object store: %w", err)
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, &CorruptError{Hash: h, Path: p, Reason: "not a regular file (" + fi.Mode().Type().String() + ")"}
	}
	return &verifier{f: f, h: sha256.New(), want: h, path: p}, nil
}

type verifier struct {
	f    *os.File
	h    hash.Hash
	want string
	path string
}

func (v *verifier) Read(p []byte) (int, error) {
	n, err := v.f.Read(p)
	v.h.Write(p[:n])
	if err == io.EOF {
		if got := hex.EncodeToString(v.h.Sum(nil)); got != v.want {
			return n, &CorruptError{Hash: v.want, Path: v.path, Got: got}
		}
	}
	return n, err
}

func (v *verifier) Close() error { return v.f.Close() }

// RemoveTemp removes temporary files older than age, left by writers that
// died between creating and renaming them. Call it at startup; a younger
// file may belong to a Put in progress in another process.
func (s *Store) RemoveTemp(age time.Duration) (int, error) {
	cutoff := time.Now().Add(-age)
	n := 0
	err := filepath.WalkDir(s.root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != s.root && filepath.Dir(p) != s.root {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasPrefix(d.Name(), tempPrefix) {
			return nil
		}
		fi, err := d.Info()
		if err != nil || fi.ModTime().After(cutoff) {
			return nil
		}
		if err := os.Remove(p); err == nil {
			n++
		}
		return nil
	})
	if err != nil {
		return n, fmt.Errorf("object store: remove temporary files: %w", err)
	}
	return n, nil
}

// PutJSON stores v encoded as JSON (one line, no trailing newline) and
// returns its hash. Equal values of the same type give the same hash, since
// encoding/json writes struct fields in order and map keys sorted.
func PutJSON[T any](s *Store, v T) (string, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("object store: encode %T: %w", v, err)
	}
	return s.Put(b)
}

// GetJSON reads the object h and decodes it into a T, refusing unknown
// fields and trailing data.
func GetJSON[T any](s *Store, h string) (T, error) {
	var v T
	b, err := s.Get(h)
	if err != nil {
		return v, err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); err != nil {
		return v, fmt.Errorf("object %s: decode as %T: %w", h, v, err)
	}
	if dec.More() {
		return v, fmt.Errorf("object %s: decode as %T: trailing data after the JSON value", h, v)
	}
	return v, nil
}

func truncate(s string) string {
	if len(s) > 80 {
		return s[:80] + "..."
	}
	return s
}
