package dockertest

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"choir/internal/docker"
	"choir/testkit"
)

// BusyboxPath is the host's static busybox (Debian package busybox-static).
const BusyboxPath = "/bin/busybox"

// labelRootfs on an imported image holds the hash of its rootfs, so that a
// second import of the same content is skipped.
const labelRootfs = "choir.test.rootfs"

// File is an extra file for BusyboxImage.
type File struct {
	Name string      // path in the image, e.g. "/usr/local/bin/choir-agent"
	Mode fs.FileMode // permission bits; 0 means 0644
	Body []byte
}

var imageMu sync.Mutex

// BusyboxImage makes sure the engine has the image ref: a root file system
// built in memory from the host's static busybox (every applet linked in
// /bin, /sbin, /usr/bin, /usr/sbin), the usual directories (/tmp, /etc with
// passwd and group for root and nobody, /proc, /sys, /dev, /run, /root) and
// the extra files, imported with CMD ["sh"] and a PATH. It is imported only
// when ref is missing or holds other content, so calling it from every test
// is cheap. It returns the image ID.
func BusyboxImage(t testing.TB, c *docker.Client, ref string, extra ...File) string {
	t.Helper()
	rootfs, err := busyboxRootfs(extra)
	if err != nil {
		testkit.Unavailable(t, "%v", err)
	}
	sum := sha256.Sum256(rootfs)
	hash := hex.EncodeToString(sum[:])

	imageMu.Lock()
	defer imageMu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	img, err := c.ImageInspect(ctx, ref)
	if err == nil && img.Config != nil && img.Config.Labels[labelRootfs] == hash {
		return img.ID
	}
	if err != nil && !docker.IsNotFound(err) {
		t.Fatalf("dockertest: inspect %s: %v", ref, err)
	}
	id, err := c.ImageImport(ctx, bytes.NewReader(rootfs), ref, docker.ImportOptions{
		Changes: []string{
			`CMD ["sh"]`,
			"ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
			"LABEL " + labelRootfs + "=" + hash,
		},
		Message: "dockertest busybox rootfs",
	})
	if err != nil {
		t.Fatalf("dockertest: import %s: %v", ref, err)
	}
	return id
}

// busyboxRootfs builds the image's tar archive. Headers carry fixed times
// and owners, so the same inputs give the same bytes.
func busyboxRootfs(extra []File) ([]byte, error) {
	bb, err := os.ReadFile(BusyboxPath)
	if err != nil {
		return nil, fmt.Errorf("no static busybox to build test images from (%v): apt-get install -y --no-install-recommends busybox-static", err)
	}
	if err := checkStatic(BusyboxPath); err != nil {
		return nil, err
	}
	applets, err := busyboxApplets()
	if err != nil {
		return nil, err
	}

	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	mtime := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	dirs := map[string]bool{}
	var addDir func(name string, mode int64) error
	addDir = func(name string, mode int64) error {
		if name == "." || name == "/" || dirs[name] {
			return nil
		}
		if err := addDir(path.Dir(name), 0o755); err != nil {
			return err
		}
		dirs[name] = true
		return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: name + "/", Mode: mode, ModTime: mtime})
	}
	addFile := func(name string, mode int64, body []byte) error {
		if err := addDir(path.Dir(name), 0o755); err != nil {
			return err
		}
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: mode, Size: int64(len(body)), ModTime: mtime}); err != nil {
			return err
		}
		_, err := tw.Write(body)
		return err
	}
	for _, d := range []struct {
		name string
		mode int64
	}{
		{"bin", 0o755}, {"sbin", 0o755}, {"usr/bin", 0o755}, {"usr/sbin", 0o755},
		{"dev", 0o755}, {"etc", 0o755}, {"proc", 0o555}, {"sys", 0o555},
		{"run", 0o755}, {"root", 0o700}, {"tmp", 0o1777}, {"var/tmp", 0o1777},
	} {
		if err := addDir(d.name, d.mode); err != nil {
			return nil, err
		}
	}
	if err := addFile("bin/busybox", 0o755, bb); err != nil {
		return nil, err
	}
	for _, a := range applets {
		if err := addDir(path.Dir(a), 0o755); err != nil {
			return nil, err
		}
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeSymlink, Name: a, Linkname: "/bin/busybox", Mode: 0o777, ModTime: mtime}); err != nil {
			return nil, err
		}
	}
	etc := []struct{ name, body string }{
		{"etc/passwd", "root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n"},
		{"etc/group", "root:x:0:\nnogroup:x:65534:\n"},
	}
	for _, f := range etc {
		if err := addFile(f.name, 0o644, []byte(f.body)); err != nil {
			return nil, err
		}
	}
	sorted := append([]File(nil), extra...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	for _, f := range sorted {
		name := strings.TrimPrefix(path.Clean("/"+f.Name), "/")
		if name == "" {
			return nil, fmt.Errorf("dockertest: extra file with empty name")
		}
		mode := int64(f.Mode.Perm())
		if mode == 0 {
			mode = 0o644
		}
		if err := addFile(name, mode, f.Body); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// checkStatic refuses a dynamically linked busybox, which would not run in
// an image without a libc.
func checkStatic(p string) error {
	f, err := elf.Open(p)
	if err != nil {
		return fmt.Errorf("%s: %v", p, err)
	}
	defer f.Close()
	for _, prog := range f.Progs {
		if prog.Type == elf.PT_INTERP {
			return fmt.Errorf("%s is dynamically linked and cannot run in a test image: apt-get install -y --no-install-recommends busybox-static", p)
		}
	}
	return nil
}

var (
	appletsOnce sync.Once
	applets     []string
	appletsErr  error
)

// busyboxApplets lists the applets' paths (bin/sh, usr/bin/env, ...).
func busyboxApplets() ([]string, error) {
	appletsOnce.Do(func() {
		out, err := exec.Command(BusyboxPath, "--list-full").Output()
		if err != nil {
			appletsErr = fmt.Errorf("%s --list-full: %v", BusyboxPath, err)
			return
		}
		for _, a := range strings.Fields(string(out)) {
			a = strings.TrimPrefix(path.Clean("/"+a), "/")
			if a != "" && a != "bin/busybox" {
				applets = append(applets, a)
			}
		}
		sort.Strings(applets)
	})
	return applets, appletsErr
}
