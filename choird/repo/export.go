package repo

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Export writes the tree of commit, as stored in the clone at dir, into
// dest (which must exist and should be empty): regular files with their
// executable bit, directories and symbolic links, never anything outside
// dest. It reads the object database (git archive), not the work tree, so a
// concurrent Sync cannot change what it writes.
func Export(ctx context.Context, dir, commit, dest string) error {
	unlock := lock(dir)
	defer unlock()
	cmd := exec.CommandContext(ctx, "git", "-c", "core.askPass=", "archive", "--format=tar", commit)
	cmd.Dir = dir
	cmd.Env = gitEnv()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("export %s: %w", commit, err)
	}
	xerr := untar(out, dest)
	if xerr != nil {
		io.Copy(io.Discard, out)
	}
	werr := cmd.Wait()
	if werr != nil {
		return &GitError{Args: []string{"archive", "--format=tar", commit}, Dir: dir, Stderr: strings.TrimSpace(stderr.String()), Err: werr}
	}
	if xerr != nil {
		return fmt.Errorf("export %s into %s: %w", commit, dest, xerr)
	}
	return nil
}

// untar extracts the archive git archive writes.
func untar(r io.Reader, dest string) error {
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		name := filepath.Clean(filepath.FromSlash(h.Name))
		if name == "." || h.Typeflag == tar.TypeXGlobalHeader {
			continue
		}
		if !filepath.IsLocal(name) {
			return fmt.Errorf("archive entry %q leaves the tree", h.Name)
		}
		target := filepath.Join(dest, name)
		if err := checkParents(dest, name); err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return err
		}
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(target, 0o755); err != nil {
				return err
			}
		case tar.TypeReg:
			mode := os.FileMode(0o644)
			if h.Mode&0o111 != 0 {
				mode = 0o755
			}
			f, err := os.OpenFile(target, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
			if err != nil {
				return err
			}
			_, err = io.Copy(f, tr)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return err
			}
		case tar.TypeSymlink:
			if err := os.Symlink(h.Linkname, target); err != nil {
				return err
			}
		default:
			// Submodules appear as nothing; git archive writes no other types.
		}
	}
}

// checkParents makes sure no directory on the way to name is a symbolic
// link, so that an entry cannot be written through one.
func checkParents(dest, name string) error {
	dir := filepath.Dir(name)
	for dir != "." {
		fi, err := os.Lstat(filepath.Join(dest, dir))
		if err == nil && fi.Mode()&os.ModeSymlink != 0 {
			return fmt.Errorf("archive entry %q is below the symbolic link %q", name, dir)
		}
		dir = filepath.Dir(dir)
	}
	return nil
}
