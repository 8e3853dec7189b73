package logs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// Retention bounds logs/archive/: archives older than MaxAge are deleted,
// then the oldest (across all sources) while the archive holds more than
// MaxBytes. Zero means no limit for each.
type Retention struct {
	MaxAge   time.Duration
	MaxBytes int64
}

// Archived is one archived log under logs/archive/.
type Archived struct {
	Name    string // relative to logs/archive/: "<source>/<UTC time>.log.gz"
	Size    int64
	ModTime time.Time
}

// Why an archive is deleted.
const (
	ReasonAge  = "age"  // older than the retention age
	ReasonSize = "size" // the archive was over its size limit
)

// Deletion is an archive that retention removes, and why.
type Deletion struct {
	Archived
	Reason string // ReasonAge or ReasonSize
}

// Plan decides which archives to delete under r at now: every file older
// than r.MaxAge, then the oldest of the rest (by modification time, across
// all sources) until the total is within r.MaxBytes. keep (a Name) is never
// deleted, even when it alone is over the limit: it is the archive just
// written.
func Plan(files []Archived, r Retention, now time.Time, keep string) []Deletion {
	sorted := append([]Archived(nil), files...)
	sort.Slice(sorted, func(i, j int) bool {
		if !sorted[i].ModTime.Equal(sorted[j].ModTime) {
			return sorted[i].ModTime.Before(sorted[j].ModTime)
		}
		return sorted[i].Name < sorted[j].Name
	})
	var out []Deletion
	var total int64
	rest := sorted[:0:0]
	for _, f := range sorted {
		if f.Name != keep && r.MaxAge > 0 && now.Sub(f.ModTime) > r.MaxAge {
			out = append(out, Deletion{f, ReasonAge})
			continue
		}
		rest = append(rest, f)
		total += f.Size
	}
	if r.MaxBytes <= 0 {
		return out
	}
	for _, f := range rest {
		if total <= r.MaxBytes {
			break
		}
		if f.Name == keep {
			continue
		}
		out = append(out, Deletion{f, ReasonSize})
		total -= f.Size
	}
	return out
}

// ListArchive lists the archived logs under dir (logs/archive/):
// regular *.log.gz files one level below a source directory. Symlinks,
// whether a source or a file, are neither followed nor listed, nor are
// in-flight temporary files (dot names). A missing dir is empty.
func ListArchive(dir string) ([]Archived, error) {
	root, err := os.OpenRoot(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list log archive: %w", err)
	}
	defer root.Close()
	fsys := root.FS()
	sources, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return nil, fmt.Errorf("list log archive %s: %w", dir, err)
	}
	var out []Archived
	for _, src := range sources {
		if !src.IsDir() { // a symlink's type is ModeSymlink, never a dir
			continue
		}
		entries, err := fs.ReadDir(fsys, src.Name())
		if err != nil {
			return out, fmt.Errorf("list log archive %s: %w", filepath.Join(dir, src.Name()), err)
		}
		for _, e := range entries {
			if !e.Type().IsRegular() || strings.HasPrefix(e.Name(), ".") || !strings.HasSuffix(e.Name(), ".log.gz") {
				continue
			}
			info, err := e.Info() // lstat: a name replaced since is skipped
			if err != nil || !info.Mode().IsRegular() {
				continue
			}
			out = append(out, Archived{Name: src.Name() + "/" + e.Name(), Size: info.Size(), ModTime: info.ModTime()})
		}
	}
	return out, nil
}

// removeArchived deletes one archive, refusing any name that is not a
// regular file inside dir: an absolute or ".." name, a symlink, or a path
// through a symlinked directory (os.Root does not follow links out of dir).
func removeArchived(dir, name string) error {
	if !filepath.IsLocal(name) || strings.Count(filepath.ToSlash(name), "/") != 1 {
		return fmt.Errorf("refuse to delete %q: not an archived log inside %s", name, dir)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return fmt.Errorf("delete archived log %s: %w", name, err)
	}
	defer root.Close()
	parent, err := root.Lstat(filepath.Dir(name))
	if err != nil {
		return fmt.Errorf("delete archived log %s: %w", name, err)
	}
	if !parent.IsDir() {
		return fmt.Errorf("refuse to delete %s: %s is not a directory (a symlink?)", filepath.Join(dir, name), filepath.Dir(name))
	}
	fi, err := root.Lstat(name)
	if err != nil {
		return fmt.Errorf("delete archived log %s: %w", name, err)
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("refuse to delete %s: not a regular file (%s)", filepath.Join(dir, name), fi.Mode().Type())
	}
	if err := root.Remove(name); err != nil {
		return fmt.Errorf("delete archived log: %w", err)
	}
	return nil
}

// DirSize is the total size of the regular files under dir (the logs
// directory, for choirctl doctor). Symlinks are not followed.
func DirSize(dir string) (int64, error) {
	var total int64
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && path != dir {
				return nil // removed while walking (an archive pruned)
			}
			return err
		}
		if d.Type().IsRegular() {
			if info, err := d.Info(); err == nil {
				total += info.Size()
			}
		}
		return nil
	})
	if err != nil {
		return total, fmt.Errorf("size of %s: %w", dir, err)
	}
	return total, nil
}
