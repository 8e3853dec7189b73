package objects

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func open(t *testing.T) *Store {
	t.Helper()
	s, err := Open(filepath.Join(t.TempDir(), "objects"))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestPutGetRoundTrip(t *testing.T) {
	s := open(t)
	data := []byte("verifier output\n")
	h, err := s.Put(data)
	if err != nil {
		t.Fatal(err)
	}
	if h != Sum(data) {
		t.Fatalf("Put = %s; want %s", h, Sum(data))
	}
	got, err := s.Get(h)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("Get(%s) = %q, %v; want %q", h, got, err, data)
	}
	p := filepath.Join(s.Root(), h[:2], h)
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatalf("object not at %s: %v", p, err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("object mode = %v; want 0600", fi.Mode().Perm())
	}
	di, _ := os.Stat(filepath.Dir(p))
	if di.Mode().Perm() != 0o700 {
		t.Errorf("directory mode = %v; want 0700", di.Mode().Perm())
	}
	if ok, err := s.Has(h); !ok || err != nil {
		t.Errorf("Has(%s) = %v, %v; want true", h, ok, err)
	}
	// Idempotent: the same bytes again, same name, one file.
	h2, err := s.Put(data)
	if err != nil || h2 != h {
		t.Fatalf("second Put = %s, %v; want %s", h2, err, h)
	}
	entries, _ := os.ReadDir(filepath.Dir(p))
	if len(entries) != 1 {
		t.Errorf("directory holds %d entries after two Puts; want 1", len(entries))
	}
}

func TestEmptyObject(t *testing.T) {
	s := open(t)
	h, err := s.Put(nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.Get(h)
	if err != nil || len(got) != 0 {
		t.Fatalf("Get(empty) = %q, %v", got, err)
	}
}

func TestGetMissing(t *testing.T) {
	s := open(t)
	_, err := s.Get(Sum([]byte("never stored")))
	if !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get(missing) = %v; want ErrNotFound", err)
	}
	if ok, err := s.Has(Sum([]byte("never stored"))); ok || err != nil {
		t.Fatalf("Has(missing) = %v, %v; want false, nil", ok, err)
	}
}

func TestCorruptionIsReported(t *testing.T) {
	s := open(t)
	h, err := s.Put([]byte("the real report"))
	if err != nil {
		t.Fatal(err)
	}
	p, _ := s.Path(h)
	if err := os.WriteFile(p, []byte("a forged report"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = s.Get(h)
	var ce *CorruptError
	if !errors.As(err, &ce) || !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Get(tampered) = %v; want a *CorruptError", err)
	}
	if ce.Got != Sum([]byte("a forged report")) || ce.Path != p {
		t.Errorf("CorruptError = %+v; want Got the forged bytes' hash and Path %s", ce, p)
	}
	if !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), "remove the file") {
		t.Errorf("error %q does not name the file and what to do", err)
	}
	// Putting the real bytes again repairs it.
	if _, err := s.Put([]byte("the real report")); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Get(h); err != nil || string(got) != "the real report" {
		t.Fatalf("Get after repair = %q, %v", got, err)
	}
}

func TestTruncatedObjectIsCorrupt(t *testing.T) {
	s := open(t)
	h, _ := s.Put([]byte("0123456789"))
	p, _ := s.Path(h)
	if err := os.Truncate(p, 3); err != nil {
		t.Fatal(err)
	}
	rc, err := s.Open(h)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	if _, err := io.ReadAll(rc); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("reading a truncated object: %v; want ErrCorrupt", err)
	}
}

func TestSymlinkInPlaceOfObjectIsRefused(t *testing.T) {
	s := open(t)
	secret := filepath.Join(t.TempDir(), "secret")
	os.WriteFile(secret, []byte("secret"), 0o600)
	h := Sum([]byte("secret"))
	p, _ := s.Path(h)
	os.MkdirAll(filepath.Dir(p), 0o700)
	if err := os.Symlink(secret, p); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(h); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Get through a symlink = %v; want ErrCorrupt", err)
	}
	if _, err := s.Has(h); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Has of a symlink = %v; want ErrCorrupt", err)
	}
}

func TestBadHashesAreRefused(t *testing.T) {
	s := open(t)
	good := Sum([]byte("x"))
	for _, h := range []string{
		"",
		"../../etc/passwd",
		good[:63],
		good + "0",
		strings.ToUpper(good),
		"../" + good[3:],
		good[:62] + "/.",
		good[:60] + "\x00abc",
		strings.Repeat("g", 64),
		"/" + good[1:],
	} {
		if _, err := s.Get(h); !errors.Is(err, ErrBadHash) {
			t.Errorf("Get(%q) = %v; want ErrBadHash", h, err)
		}
		if _, err := s.Has(h); !errors.Is(err, ErrBadHash) {
			t.Errorf("Has(%q) = %v; want ErrBadHash", h, err)
		}
		if _, err := s.Path(h); !errors.Is(err, ErrBadHash) {
			t.Errorf("Path(%q) = %v; want ErrBadHash", h, err)
		}
	}
}

func TestConcurrentPutOfTheSameContent(t *testing.T) {
	s := open(t)
	data := bytes.Repeat([]byte("same content "), 10000)
	var wg sync.WaitGroup
	errs := make([]error, 16)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if i%2 == 0 {
				_, errs[i] = s.Put(data)
			} else {
				_, _, errs[i] = s.PutReader(bytes.NewReader(data), int64(len(data)))
			}
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("Put %d: %v", i, err)
		}
	}
	got, err := s.Get(Sum(data))
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("Get after concurrent Puts: %v", err)
	}
	if n := countFiles(t, s.Root()); n != 1 {
		t.Errorf("store holds %d files; want 1 (no temporary file left)", n)
	}
}

func TestPutReaderCap(t *testing.T) {
	s := open(t)
	data := []byte(strings.Repeat("a", 100))
	h, n, err := s.PutReader(bytes.NewReader(data), 100)
	if err != nil || n != 100 || h != Sum(data) {
		t.Fatalf("PutReader(100 bytes, cap 100) = %s, %d, %v", h, n, err)
	}
	_, _, err = s.PutReader(bytes.NewReader(append(data, 'b')), 100)
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("PutReader(101 bytes, cap 100) = %v; want ErrTooLarge", err)
	}
	if ok, _ := s.Has(Sum(append(data, 'b'))); ok {
		t.Error("an object over the cap was stored")
	}
	if n := countFiles(t, s.Root()); n != 1 {
		t.Errorf("store holds %d files after a refused stream; want 1", n)
	}
}

func TestPutReaderFailingSourceLeavesNothing(t *testing.T) {
	s := open(t)
	r := io.MultiReader(strings.NewReader("partial"), errReader{})
	if _, _, err := s.PutReader(r, 1<<20); err == nil {
		t.Fatal("PutReader of a failing stream succeeded")
	}
	if n := countFiles(t, s.Root()); n != 0 {
		t.Errorf("store holds %d files after a failed stream; want 0", n)
	}
}

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, errors.New("disk on fire") }

func TestRemoveTemp(t *testing.T) {
	s := open(t)
	h, _ := s.Put([]byte("kept"))
	stale := filepath.Join(s.Root(), h[:2], tempPrefix+"dead")
	fresh := filepath.Join(s.Root(), tempPrefix+"live")
	os.WriteFile(stale, []byte("x"), 0o600)
	os.WriteFile(fresh, []byte("x"), 0o600)
	old := time.Now().Add(-time.Hour)
	os.Chtimes(stale, old, old)
	n, err := s.RemoveTemp(10 * time.Minute)
	if err != nil || n != 1 {
		t.Fatalf("RemoveTemp = %d, %v; want 1", n, err)
	}
	if _, err := os.Stat(stale); !errors.Is(err, fs.ErrNotExist) {
		t.Error("the stale temporary file is still there")
	}
	if _, err := os.Stat(fresh); err != nil {
		t.Error("a fresh temporary file (a Put in progress) was removed")
	}
	if _, err := s.Get(h); err != nil {
		t.Errorf("object lost by RemoveTemp: %v", err)
	}
}

type attestation struct {
	RunID  string `json:"run_id"`
	Result string `json:"result"`
}

func TestJSONHelpers(t *testing.T) {
	s := open(t)
	a := attestation{RunID: "r-0123456789ab", Result: "pass"}
	h, err := PutJSON(s, a)
	if err != nil {
		t.Fatal(err)
	}
	h2, _ := PutJSON(s, attestation{RunID: "r-0123456789ab", Result: "pass"})
	if h != h2 {
		t.Errorf("equal values stored under %s and %s", h, h2)
	}
	got, err := GetJSON[attestation](s, h)
	if err != nil || got != a {
		t.Fatalf("GetJSON = %+v, %v; want %+v", got, err, a)
	}
	other, _ := s.Put([]byte(`{"run_id":"r-1","surprise":true}`))
	if _, err := GetJSON[attestation](s, other); err == nil || !strings.Contains(err.Error(), "surprise") {
		t.Errorf("GetJSON of an object with an unknown field = %v; want an error naming it", err)
	}
}

func countFiles(t *testing.T, root string) int {
	t.Helper()
	n := 0
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			n++
		}
		return nil
	})
	return n
}

func BenchmarkPut4KiB(b *testing.B) {
	s, err := Open(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	data := make([]byte, 4096)
	b.SetBytes(int64(len(data)))
	for i := 0; b.Loop(); i++ {
		data[0], data[1], data[2] = byte(i), byte(i>>8), byte(i>>16)
		if _, err := s.Put(data); err != nil {
			b.Fatal(err)
		}
	}
}
