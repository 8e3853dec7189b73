package build

import (
	"archive/tar"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// contextTime is the modification time of every file in a build context,
// so that equal content gives equal contexts.
var contextTime = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// contextWriter writes a build context: a tar archive of a directory tree
// and extra files, owned by root, with fixed times.
type contextWriter struct {
	tw   *tar.Writer
	dirs map[string]bool
}

func newContextWriter(w io.Writer) *contextWriter {
	return &contextWriter{tw: tar.NewWriter(w), dirs: map[string]bool{}}
}

func (c *contextWriter) header(name string, mode int64, typ byte, size int64) *tar.Header {
	return &tar.Header{Name: name, Mode: mode, Typeflag: typ, Size: size, ModTime: contextTime, Format: tar.FormatPAX}
}

// dir adds name/ and its missing parents.
func (c *contextWriter) dir(name string) error {
	if name == "." || name == "" || c.dirs[name] {
		return nil
	}
	if err := c.dir(filepath.ToSlash(filepath.Dir(name))); err != nil {
		return err
	}
	c.dirs[name] = true
	return c.tw.WriteHeader(c.header(name+"/", 0o755, tar.TypeDir, 0))
}

// file adds a file with the given content and mode.
func (c *contextWriter) file(name string, mode fs.FileMode, body []byte) error {
	if err := c.dir(filepath.ToSlash(filepath.Dir(name))); err != nil {
		return err
	}
	if err := c.tw.WriteHeader(c.header(name, int64(mode.Perm()), tar.TypeReg, int64(len(body)))); err != nil {
		return err
	}
	_, err := c.tw.Write(body)
	return err
}

// copyFile adds the host file at src as name, streaming it.
func (c *contextWriter) copyFile(name string, mode fs.FileMode, src string) error {
	f, err := os.Open(src)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if err := c.dir(filepath.ToSlash(filepath.Dir(name))); err != nil {
		return err
	}
	if err := c.tw.WriteHeader(c.header(name, int64(mode.Perm()), tar.TypeReg, fi.Size())); err != nil {
		return err
	}
	_, err = io.CopyN(c.tw, f, fi.Size())
	return err
}

// tree adds the directory root, leaving out the paths skip reports.
// Symbolic links are added as links, never followed.
func (c *contextWriter) tree(root string, skip func(rel string) bool) error {
	return filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil || rel == "." {
			return err
		}
		rel = filepath.ToSlash(rel)
		if skip != nil && skip(rel) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			return c.dir(rel)
		case fi.Mode().IsRegular():
			mode := fs.FileMode(0o644)
			if fi.Mode().Perm()&0o111 != 0 {
				mode = 0o755
			}
			return c.copyFile(rel, mode, p)
		case fi.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			h := c.header(rel, 0o777, tar.TypeSymlink, 0)
			h.Linkname = target
			return c.tw.WriteHeader(h)
		}
		return nil
	})
}

func (c *contextWriter) Close() error { return c.tw.Close() }
