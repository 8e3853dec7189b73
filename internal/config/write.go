package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// WriteFileAtomic replaces path with data so that a reader sees either the
// old file or the new one, never a half-written one, and the new file has
// perm from its first byte (a secret is never briefly world-readable).
//
// When path is a symbolic link (secrets.json kept on another disk, say), the
// write goes through it: the link is resolved, the temporary file is made
// beside the link's target, synced and renamed over the target, so the link
// stays and points at the new content. A link whose target does not exist is
// refused: writing would create a file wherever it points.
func WriteFileAtomic(path string, data []byte, perm os.FileMode) (err error) {
	target, err := writeTarget(path)
	if err != nil {
		return err
	}
	dir := filepath.Dir(target)
	f, err := os.CreateTemp(dir, "."+filepath.Base(target)+".tmp-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if err = f.Chmod(perm); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if _, err = f.Write(data); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err = f.Sync(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err = f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err = os.Rename(tmp, target); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if d, derr := os.Open(dir); derr == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

// writeTarget is the file a write to path replaces: path itself, or the end
// of the chain of links starting there.
func writeTarget(path string) (string, error) {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) || (err == nil && fi.Mode()&fs.ModeSymlink == 0) {
		return path, nil
	}
	if err != nil {
		return "", fmt.Errorf("write %s: %w", path, err)
	}
	target, err := filepath.EvalSymlinks(path)
	if err != nil {
		link, _ := os.Readlink(path)
		return "", fmt.Errorf("write %s: it is a symbolic link to %s, which cannot be resolved (%v): point the link at an existing file, or remove the link", path, link, err)
	}
	fi, err = os.Stat(target)
	if err != nil {
		return "", fmt.Errorf("write %s: %w", path, err)
	}
	if !fi.Mode().IsRegular() {
		return "", fmt.Errorf("write %s: it is a symbolic link to %s, which is not a regular file: point the link at a plain file", path, target)
	}
	return target, nil
}
