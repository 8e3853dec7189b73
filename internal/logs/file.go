package logs

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// File is an append-only log file that counts its lines and archives itself
// past a threshold. Writes are serialised; each Write should be whole lines
// (slog handlers write one record per call).
type File struct {
	mu         sync.Mutex
	path       string
	archiveDir string
	threshold  int // lines; 0 = never archive by size
	redact     *Redactor
	f          *os.File
	lines      int
	now        func() time.Time
	onError    func(error)
	mirror     io.Writer // also receives every (redacted) write, e.g. stderr
	// archived is told each archive written, after the file's lock is
	// released (the Manager prunes the archive there).
	archived func(path string)
}

// OpenFile opens (creating, 0600) the log at path. Archives go to archiveDir.
func OpenFile(path, archiveDir string, threshold int, redact *Redactor) (*File, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("create log directory: %w", err)
	}
	lf := &File{path: path, archiveDir: archiveDir, threshold: threshold, redact: redact, now: time.Now}
	if err := lf.open(); err != nil {
		return nil, err
	}
	return lf, nil
}

func (lf *File) open() error {
	f, err := os.OpenFile(lf.path, os.O_CREATE|os.O_RDWR|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("open log: %w", err)
	}
	n, err := countLines(f)
	if err != nil {
		f.Close()
		return fmt.Errorf("read log %s: %w", lf.path, err)
	}
	lf.f, lf.lines = f, n
	return nil
}

func countLines(r io.Reader) (int, error) {
	buf := make([]byte, 64<<10)
	n := 0
	for {
		k, err := r.Read(buf)
		n += bytes.Count(buf[:k], []byte{'\n'})
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, err
		}
	}
}

// Path is the active log file.
func (lf *File) Path() string { return lf.path }

// Write appends p after redaction, archiving the file first when it has
// reached its threshold.
func (lf *File) Write(p []byte) (int, error) {
	out := []byte(lf.redact.String(string(p)))
	var dst string
	defer func() { lf.notify(dst) }() // runs after the unlock below
	lf.mu.Lock()
	defer lf.mu.Unlock()
	if lf.f == nil {
		return 0, os.ErrClosed
	}
	if lf.threshold > 0 && lf.lines >= lf.threshold {
		var err error
		if dst, err = lf.archiveLocked(); err != nil && lf.onError != nil {
			lf.onError(err) // keep logging into the old file rather than lose lines
		}
	}
	if _, err := lf.f.Write(out); err != nil {
		return 0, err
	}
	if lf.mirror != nil {
		lf.mirror.Write(out)
	}
	lf.lines += bytes.Count(out, []byte{'\n'})
	return len(p), nil
}

// Archive compresses the active file into the archive directory and starts
// a new empty one. An empty log is not archived.
func (lf *File) Archive() error {
	lf.mu.Lock()
	dst, err := lf.archiveLocked()
	lf.mu.Unlock()
	lf.notify(dst)
	return err
}

func (lf *File) notify(dst string) {
	lf.mu.Lock()
	fn := lf.archived
	lf.mu.Unlock()
	if dst != "" && fn != nil {
		fn(dst)
	}
}

// archiveLocked returns the archive written ("" when none was), even when
// starting the new log afterwards failed.
func (lf *File) archiveLocked() (string, error) {
	if lf.f == nil {
		return "", os.ErrClosed
	}
	if lf.lines == 0 {
		return "", nil
	}
	if err := os.MkdirAll(lf.archiveDir, 0o700); err != nil {
		return "", fmt.Errorf("create archive directory: %w", err)
	}
	dst, err := lf.archiveName()
	if err != nil {
		return "", err
	}
	if err := gzipFile(lf.path, dst); err != nil {
		return "", err
	}
	// Only once the archive is safely written is the active file replaced,
	// by a new empty file (a new inode, so followers notice the switch).
	tmp, err := os.CreateTemp(filepath.Dir(lf.path), ".new-log-*")
	if err != nil {
		return dst, fmt.Errorf("start a new log after archiving: %w", err)
	}
	tmp.Close()
	if err := os.Chmod(tmp.Name(), 0o600); err != nil {
		os.Remove(tmp.Name())
		return dst, fmt.Errorf("start a new log after archiving: %w", err)
	}
	if err := os.Rename(tmp.Name(), lf.path); err != nil {
		os.Remove(tmp.Name())
		return dst, fmt.Errorf("start a new log after archiving: %w", err)
	}
	lf.f.Close()
	lf.f = nil
	return dst, lf.open()
}

func (lf *File) archiveName() (string, error) {
	stamp := lf.now().UTC().Format("20060102T150405.000Z")
	for i := 0; i < 1000; i++ {
		name := stamp
		if i > 0 {
			name = fmt.Sprintf("%s-%d", stamp, i)
		}
		p := filepath.Join(lf.archiveDir, name+".log.gz")
		if _, err := os.Lstat(p); os.IsNotExist(err) {
			return p, nil
		}
	}
	return "", fmt.Errorf("no free archive name in %s", lf.archiveDir)
}

// gzipFile writes src compressed to dst atomically (temp file, fsync, rename).
func gzipFile(src, dst string) (err error) {
	in, err := os.Open(src)
	if err != nil {
		return fmt.Errorf("archive log: %w", err)
	}
	defer in.Close()
	tmp, err := os.CreateTemp(filepath.Dir(dst), ".archive-*")
	if err != nil {
		return fmt.Errorf("archive log: %w", err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	zw := gzip.NewWriter(tmp)
	if _, err = io.Copy(zw, in); err != nil {
		return fmt.Errorf("archive log: %w", err)
	}
	if err = zw.Close(); err != nil {
		return fmt.Errorf("archive log: %w", err)
	}
	if err = tmp.Sync(); err != nil {
		return fmt.Errorf("archive log: %w", err)
	}
	if err = tmp.Close(); err != nil {
		return fmt.Errorf("archive log: %w", err)
	}
	if err = os.Chmod(tmp.Name(), 0o600); err != nil {
		return fmt.Errorf("archive log: %w", err)
	}
	return os.Rename(tmp.Name(), dst)
}

// Close closes the file.
func (lf *File) Close() error {
	lf.mu.Lock()
	defer lf.mu.Unlock()
	if lf.f == nil {
		return nil
	}
	err := lf.f.Close()
	lf.f = nil
	return err
}

// SetThreshold changes the line count past which the file is archived.
func (lf *File) SetThreshold(lines int) {
	lf.mu.Lock()
	lf.threshold = lines
	lf.mu.Unlock()
}

// Mirror sends every line written to the file to w as well.
func (lf *File) Mirror(w io.Writer) {
	lf.mu.Lock()
	lf.mirror = w
	lf.mu.Unlock()
}
