// Package imagetest gives tests images that would otherwise come from a
// registry, made on this host with no registry at all.
//
// Debian makes debian:bookworm-slim, the image the reference Dockerfile.base
// starts from: debootstrap (variant minbase) of Debian bookworm with the
// packages Dockerfile.base installs already in it, kept in a cache
// directory across runs ($CHOIR_TEST_CACHE, else
// /var/cache/choir-test/debian-bookworm) and imported into the engine.
// Containers on the test engine cannot reach a Debian mirror (dockerd runs
// with --iptables=false), which is why the packages are installed on the
// host side; Dockerfile.base skips apt-get when they are present.
//
// The first run needs root, the debootstrap package (installed with apt-get
// when missing) and a Debian mirror ($CHOIR_DEBIAN_MIRROR, else the one
// debootstrap uses by default); it takes a minute or two. Without them the
// test is unavailable (testkit.Unavailable).
package imagetest

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"choir/internal/docker"
	"choir/testkit"
)

// Names and places Debian uses.
const (
	DebianRef    = "debian:bookworm-slim"
	CacheEnv     = "CHOIR_TEST_CACHE"
	DefaultCache = "/var/cache/choir-test/debian-bookworm"
	MirrorEnv    = "CHOIR_DEBIAN_MIRROR"
	Suite        = "bookworm"
	// LabelRootfs marks an image imported by Debian.
	LabelRootfs = "choir.test.rootfs"
	complete    = ".choir-test-complete" // in the cache dir once debootstrap succeeded
)

// Packages are the packages of Dockerfile.base, installed by debootstrap.
var Packages = []string{"git", "openssh-client", "python3-minimal", "ripgrep", "ca-certificates"}

// CacheDir is where the Debian root file system is kept.
func CacheDir() string {
	if d := os.Getenv(CacheEnv); d != "" {
		return d
	}
	return DefaultCache
}

// Debian makes sure the engine has DebianRef and returns it. An image of
// that name the engine already has is used as it is.
func Debian(t testing.TB, c *docker.Client) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	ref, err := Ensure(ctx, c)
	var na *unavailableError
	if errors.As(err, &na) {
		testkit.Unavailable(t, "imagetest: %v", err)
	}
	if err != nil {
		t.Fatalf("imagetest: %v", err)
	}
	return ref
}

// unavailableError means the machine cannot make the image (no root, no
// debootstrap, no mirror), as opposed to an engine failure.
type unavailableError struct{ msg string }

func (e *unavailableError) Error() string { return e.msg }

// Ensure is Debian for programs (make demo): it makes sure the engine has
// DebianRef, debootstrapping into the cache the first time (a minute or
// two, root needed), and returns the reference.
func Ensure(ctx context.Context, c *docker.Client) (string, error) {
	if _, err := c.ImageInspect(ctx, DebianRef); err == nil {
		return DebianRef, nil
	} else if !docker.IsNotFound(err) {
		return "", fmt.Errorf("inspect %s: %w", DebianRef, err)
	}
	root := CacheDir()
	unlock, err := lockCache(root)
	if err != nil {
		return "", &unavailableError{fmt.Sprintf("cannot use the cache %s: %v", root, err)}
	}
	defer unlock()
	if _, err := os.Stat(filepath.Join(root, complete)); err != nil {
		if msg := bootstrap(ctx, root); msg != "" {
			return "", &unavailableError{msg}
		}
	}
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(writeRootfs(pw, root)) }()
	_, err = c.ImageImport(ctx, pr, DebianRef, docker.ImportOptions{
		Changes: []string{`CMD ["bash"]`, "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
			"LABEL " + LabelRootfs + "=debootstrap-" + Suite},
		Message: "debootstrap --variant=minbase " + Suite,
	})
	pr.CloseWithError(errors.New("import ended"))
	if err != nil {
		return "", fmt.Errorf("import %s from %s: %w", DebianRef, root, err)
	}
	return DebianRef, nil
}

// lockCache takes an exclusive lock beside root, so that test binaries
// running at once do not bootstrap twice.
func lockCache(root string) (func(), error) {
	if err := os.MkdirAll(filepath.Dir(root), 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(root+".lock", os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, err
	}
	return func() { syscall.Flock(int(f.Fd()), syscall.LOCK_UN); f.Close() }, nil
}

// bootstrap runs debootstrap into a directory beside root and renames it
// into place when it succeeded. It returns why it could not, or "".
func bootstrap(ctx context.Context, root string) string {
	if os.Geteuid() != 0 {
		return "debootstrap needs root to make " + root
	}
	if _, err := exec.LookPath("debootstrap"); err != nil {
		out, err := exec.CommandContext(ctx, "apt-get", "install", "-y", "--no-install-recommends", "debootstrap").CombinedOutput()
		if err != nil {
			return fmt.Sprintf("install debootstrap: %v\n%s", err, tail(out))
		}
	}
	tmp := root + ".tmp"
	os.RemoveAll(tmp)
	args := []string{"--variant=minbase", "--include=" + strings.Join(Packages, ","), Suite, tmp}
	mirror := os.Getenv(MirrorEnv)
	if mirror != "" {
		args = append(args, mirror)
	} else {
		mirror = "debootstrap's default mirror"
	}
	cmd := exec.CommandContext(ctx, "debootstrap", args...)
	if out, err := cmd.CombinedOutput(); err != nil {
		os.RemoveAll(tmp)
		return fmt.Sprintf("debootstrap %s from %s: %v\n%s", Suite, mirror, err, tail(out))
	}
	// What apt downloaded is not part of the image.
	for _, glob := range []string{"var/cache/apt/archives/*.deb", "var/lib/apt/lists/*_Packages", "var/lib/apt/lists/*Release*"} {
		matches, _ := filepath.Glob(filepath.Join(tmp, glob))
		for _, m := range matches {
			os.Remove(m)
		}
	}
	if err := os.WriteFile(filepath.Join(tmp, complete), []byte(time.Now().UTC().Format(time.RFC3339)+"\n"), 0o644); err != nil {
		return err.Error()
	}
	os.RemoveAll(root)
	if err := os.Rename(tmp, root); err != nil {
		return err.Error()
	}
	return ""
}

func tail(b []byte) string {
	const max = 4000
	if len(b) > max {
		b = b[len(b)-max:]
	}
	return string(b)
}

// slimExcluded are the paths the -slim Debian images leave out (their
// /etc/dpkg/dpkg.cfg.d/docker path-exclude rules), below usr/share/.
var slimExcluded = []string{"man/", "groff/", "info/", "lintian/", "linda/", "locale/"}

// slimmed reports whether rel is left out of a -slim image: documentation
// except copyright files, manual pages, translations.
func slimmed(rel string, dir bool) bool {
	rest, ok := strings.CutPrefix(rel, "usr/share/")
	if !ok {
		return false
	}
	if dir {
		rest += "/"
	}
	for _, x := range slimExcluded {
		if strings.HasPrefix(rest, x) && rest != x {
			return true
		}
	}
	if doc, ok := strings.CutPrefix(rest, "doc/"); ok && doc != "" && !dir {
		return !strings.HasSuffix(doc, "/copyright")
	}
	return false
}

// writeRootfs writes root as a tar archive: ownership and modes as on
// disk, the contents of /proc, /sys and /dev left out (their directories
// kept), device nodes, sockets and pipes skipped, and what a -slim image
// leaves out (slimmed) left out too.
func writeRootfs(w io.Writer, root string) error {
	tw := tar.NewWriter(w)
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil || rel == "." || rel == complete {
			return err
		}
		rel = filepath.ToSlash(rel)
		for _, skip := range []string{"proc/", "sys/", "dev/"} {
			if strings.HasPrefix(rel, skip) {
				if d.IsDir() {
					return filepath.SkipDir
				}
				return nil
			}
		}
		if slimmed(rel, d.IsDir()) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		var link string
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			if link, err = os.Readlink(p); err != nil {
				return err
			}
		case fi.IsDir(), fi.Mode().IsRegular():
		default:
			return nil
		}
		h, err := tar.FileInfoHeader(fi, link)
		if err != nil {
			return err
		}
		h.Name = rel
		if fi.IsDir() {
			h.Name += "/"
		}
		h.Uname, h.Gname = "", ""
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			h.Uid, h.Gid = int(st.Uid), int(st.Gid)
		}
		h.Format = tar.FormatPAX
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if !fi.Mode().IsRegular() {
			return nil
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = io.CopyN(tw, f, fi.Size())
		return err
	})
	if err != nil {
		return err
	}
	return tw.Close()
}
