package config

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// snapshot records every file under dir (content, mode, link target) so a
// test can assert that a refusal changed nothing.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return nil
		}
		s := fi.Mode().String()
		switch {
		case fi.Mode()&os.ModeSymlink != 0:
			l, _ := os.Readlink(p)
			s += " -> " + l
		case fi.Mode().IsRegular():
			data, _ := os.ReadFile(p)
			s += " " + string(data)
		}
		out[p] = s
		return nil
	})
	return out
}

func assertUnchanged(t *testing.T, before, after map[string]string) {
	t.Helper()
	for p, b := range before {
		if a, ok := after[p]; !ok {
			t.Errorf("%s was removed by a refused operation", p)
		} else if a != b {
			t.Errorf("%s changed on a refused operation:\n before %.120q\n after  %.120q", p, b, a)
		}
	}
	for p := range after {
		if _, ok := before[p]; !ok && !strings.HasSuffix(p, ".lock") {
			t.Errorf("%s was created by a refused operation", p)
		}
	}
}

// validHome writes the example config (its workspaces moved to temp
// directories) and its secrets into a fresh home, and returns the config as
// a map to mutate.
func validHome(t *testing.T) (Home, map[string]any, string) {
	t.Helper()
	t.Setenv("DOCKER_HOST", "")
	example, secrets := readExample(t)
	home := Home{Dir: filepath.Join(t.TempDir(), ".choir.d")}
	for _, d := range []string{home.Dir, home.ReposDir(), home.SocksDir()} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	var m map[string]any
	if err := json.Unmarshal(example, &m); err != nil {
		t.Fatal(err)
	}
	base := t.TempDir()
	obj(m, "workspaces", "main-ws")["path"] = filepath.Join(base, "main")
	obj(m, "workspaces", "scratch")["path"] = filepath.Join(base, "scratch")
	writeConfig(t, home, m)
	sdata, _ := json.Marshal(map[string]string(secrets))
	if err := os.WriteFile(home.SecretsPath(), sdata, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(home); err != nil {
		t.Fatalf("Load(valid home) = %v", err)
	}
	return home, m, base
}

func writeConfig(t *testing.T, home Home, m map[string]any) {
	t.Helper()
	data, _ := json.MarshalIndent(m, "", "  ")
	if err := os.WriteFile(home.ConfigPath(), data, 0o644); err != nil {
		t.Fatal(err)
	}
	os.Chmod(home.ConfigPath(), 0o644)
}

func setWorkspace(t *testing.T, home Home, m map[string]any, name, path string) {
	t.Helper()
	obj(m, "workspaces", name)["path"] = path
	writeConfig(t, home, m)
}

func mkfifo(t *testing.T, path string) {
	t.Helper()
	os.Remove(path)
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
}

func needRoot(t *testing.T) {
	t.Helper()
	if os.Getuid() != 0 {
		t.Skip("changing a file's owner needs root")
	}
}

type hostileCase struct {
	name  string
	setup func(t *testing.T, home Home, m map[string]any, base string)
	want  []string // every one must appear in the error; "$HOME", "$BASE" are replaced
}

func runHostile(t *testing.T, cases []hostileCase) {
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			home, m, base := validHome(t)
			tc.setup(t, home, m, base)
			before := snapshot(t, filepath.Dir(home.Dir))
			done := make(chan error, 1)
			go func() { _, err := Load(home); done <- err }()
			var err error
			select {
			case err = <-done:
			case <-time.After(time.Minute):
				t.Fatal("Load did not return within a minute")
			}
			if err == nil {
				t.Fatal("Load = nil; want a refusal")
			}
			for _, w := range tc.want {
				w = strings.NewReplacer("$HOME", home.Dir, "$BASE", base).Replace(w)
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Load = %v\nwant it to contain %q", err, w)
				}
			}
			assertUnchanged(t, before, snapshot(t, filepath.Dir(home.Dir)))
		})
	}
}

// TestHostileConfig: config.json files that would open the boundary between
// an agent and the host, or exhaust the reader, are refused with the file,
// the field and the fix, and nothing is changed.
func TestHostileConfig(t *testing.T) {
	ws := func(path string) func(*testing.T, Home, map[string]any, string) {
		return func(t *testing.T, home Home, m map[string]any, base string) {
			setWorkspace(t, home, m, "scratch", strings.NewReplacer("$HOME", home.Dir, "$BASE", base).Replace(path))
		}
	}
	raw := func(data []byte) func(*testing.T, Home, map[string]any, string) {
		return func(t *testing.T, home Home, m map[string]any, base string) {
			if err := os.WriteFile(home.ConfigPath(), data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	runHostile(t, []hostileCase{
		{"workspace is the choir home", ws("$HOME"), []string{"config.json: workspaces.scratch.path", "is the choir home $HOME", "secrets.json", "choose a directory"}},
		{"workspace inside the choir home", ws("$HOME/logs/ws"), []string{"workspaces.scratch.path", "lies inside the choir home"}},
		{"workspace containing the choir home", func(t *testing.T, home Home, m map[string]any, base string) {
			setWorkspace(t, home, m, "scratch", filepath.Dir(home.Dir))
		}, []string{"workspaces.scratch.path", "contains the choir home"}},
		{"workspace inside the repo cache", ws("$HOME/repos/global"), []string{"workspaces.scratch.path", "lies inside the choir home"}},
		{"workspace is the root", ws("/"), []string{"workspaces.scratch.path", "root directory cannot be a workspace"}},
		{"workspace is /etc", ws("/etc"), []string{"workspaces.scratch.path", "is the system directory /etc"}},
		{"workspace inside /proc", ws("/proc/self"), []string{"lies inside the system directory /proc"}},
		{"workspace /var contains /var/run", ws("/var"), []string{"contains the system directory /var/run"}},
		{"workspace inside /usr", ws("/usr/local/ws"), []string{"lies inside the system directory /usr"}},
		{"workspace inside /lib64", ws("/lib64/ws"), []string{"lies inside the system directory /lib64"}},
		{"workspace inside /dev", ws("/dev/shm/ws"), []string{"lies inside the system directory /dev"}},
		{"workspace is the Docker socket's directory", func(t *testing.T, home Home, m map[string]any, base string) {
			t.Setenv("DOCKER_HOST", "unix://"+base+"/docker/docker.sock")
			setWorkspace(t, home, m, "scratch", base+"/docker")
		}, []string{"workspaces.scratch.path", "is the directory of the Docker socket $BASE/docker", "root on the host"}},
		{"workspace contains the Docker socket's directory", func(t *testing.T, home Home, m map[string]any, base string) {
			t.Setenv("DOCKER_HOST", "unix://"+base+"/scratch/run/docker.sock")
		}, []string{"workspaces.scratch.path", "contains the directory of the Docker socket"}},
		{"relative workspace", ws("ws/scratch"), []string{"workspaces.scratch.path", "want an absolute path"}},
		{"dot-dot in the workspace", ws("$BASE/x/../scratch2"), []string{"not in canonical form: write it as \"$BASE/scratch2\""}},
		{"workspace through a symlink to the home", func(t *testing.T, home Home, m map[string]any, base string) {
			os.Symlink(home.Dir, base+"/link")
			setWorkspace(t, home, m, "scratch", base+"/link")
		}, []string{"not canonical: it resolves to $HOME", "write the canonical path \"$HOME\"", "resolves to $HOME, which is the choir home"}},
		{"missing workspace under a symlink to /etc", func(t *testing.T, home Home, m map[string]any, base string) {
			os.Symlink("/etc", base+"/etc-link")
			setWorkspace(t, home, m, "scratch", base+"/etc-link/choir-ws")
		}, []string{"resolves to /etc/choir-ws", "lies inside the system directory /etc"}},
		{"dangling symlink in the workspace path", func(t *testing.T, home Home, m map[string]any, base string) {
			os.Symlink(base+"/nowhere", base+"/dangling")
			setWorkspace(t, home, m, "scratch", base+"/dangling/ws")
		}, []string{"workspaces.scratch.path", "is a symbolic link to $BASE/nowhere, which does not exist"}},
		{"workspaces nested", ws("$BASE/main/sub"), []string{"workspaces.scratch.path", `lies inside workspace "main-ws"`}},
		{"workspace containing another", func(t *testing.T, home Home, m map[string]any, base string) {
			setWorkspace(t, home, m, "main-ws", base+"/scratch/deeper")
		}, []string{"workspaces.scratch.path", `contains workspace "main-ws"`}},
		{"workspaces overlapping through a symlink", func(t *testing.T, home Home, m map[string]any, base string) {
			os.MkdirAll(base+"/main/inner", 0o755)
			os.Symlink(base+"/main/inner", base+"/alias")
			setWorkspace(t, home, m, "scratch", base+"/alias")
		}, []string{"not canonical", `resolves to $BASE/main/inner, which lies inside workspace "main-ws"`}},
		{"config.json group-writable", func(t *testing.T, home Home, m map[string]any, base string) {
			os.Chmod(home.ConfigPath(), 0o664)
		}, []string{"config.json", "mode 0664", "run `chmod go-w $HOME/config.json`"}},
		{"config.json world-writable", func(t *testing.T, home Home, m map[string]any, base string) {
			os.Chmod(home.ConfigPath(), 0o666)
		}, []string{"run `chmod go-w $HOME/config.json`"}},
		{"config.json owned by another user", func(t *testing.T, home Home, m map[string]any, base string) {
			needRoot(t)
			os.Chown(home.ConfigPath(), 65534, 65534)
		}, []string{"owned by uid 65534", "run `chown 0 $HOME/config.json`"}},
		{"config.json is a FIFO", func(t *testing.T, home Home, m map[string]any, base string) {
			mkfifo(t, home.ConfigPath())
		}, []string{"config.json", "not a regular file"}},
		{"config.json nested two million levels", raw(bytes.Repeat([]byte("["), 2_000_000)), []string{"config.json: line 1:65 (byte 64)", "limit of 64 levels"}},
		{"config.json nested 65 levels in a field", raw([]byte(`{"workspaces":{"w":{"path":` + strings.Repeat("[", 62) + strings.Repeat("]", 62) + `}}}`)), []string{"config.json: line 1:", "limit of 64 levels"}},
		{"config.json over 16 MiB", raw(append(append([]byte(`{"global_repo":{"url":"`), bytes.Repeat([]byte("a"), 16<<20)...), `"}}`...)), []string{"config.json", "over the limit of 16 MiB"}},
		{"invalid UTF-8 in a config string", raw([]byte("{\n  \"global_repo\": {\"url\": \"/srv/g\xffit\"}\n}")), []string{"config.json: line 2:33 (byte 34)", "invalid UTF-8 (byte 0xff)"}},
		{"lone surrogate escape in a config key", raw([]byte(`{"workspaces":{"w\udc00":{"path":"/srv/w"}}}`)), []string{"config.json: line 1:18", "surrogate pair"}},
	})
}

// TestHostileSecrets: a secrets.json that others could reach, or that would
// fool or exhaust the reader, is refused with the fix; no value is shown.
func TestHostileSecrets(t *testing.T) {
	raw := func(data []byte) func(*testing.T, Home, map[string]any, string) {
		return func(t *testing.T, home Home, m map[string]any, base string) {
			if err := os.WriteFile(home.SecretsPath(), data, 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	mode := func(perm os.FileMode) func(*testing.T, Home, map[string]any, string) {
		return func(t *testing.T, home Home, m map[string]any, base string) { os.Chmod(home.SecretsPath(), perm) }
	}
	runHostile(t, []hostileCase{
		{"secrets.json world-readable", mode(0o644), []string{"secrets.json", "mode 0644", "group or others", "run `chmod 600 $HOME/secrets.json`"}},
		{"secrets.json group-readable", mode(0o640), []string{"mode 0640", "run `chmod 600 $HOME/secrets.json`"}},
		{"secrets.json read-only", mode(0o400), []string{"mode 0400", "must be 0600", "run `chmod 600 $HOME/secrets.json`"}},
		{"secrets.json setuid", mode(0o600 | os.ModeSetuid), []string{"mode 04600", "run `chmod 600"}},
		{"secrets.json owned by another user", func(t *testing.T, home Home, m map[string]any, base string) {
			needRoot(t)
			os.Chown(home.SecretsPath(), 65534, 65534)
		}, []string{"owned by uid 65534", "run `chown 0 $HOME/secrets.json` (as root)"}},
		{"secrets.json symlink to a readable file", func(t *testing.T, home Home, m map[string]any, base string) {
			data, _ := os.ReadFile(home.SecretsPath())
			os.WriteFile(base+"/real-secrets.json", data, 0o644)
			os.Chmod(base+"/real-secrets.json", 0o644)
			os.Remove(home.SecretsPath())
			os.Symlink(base+"/real-secrets.json", home.SecretsPath())
		}, []string{"mode 0644", "run `chmod 600 $HOME/secrets.json`"}},
		{"secrets.json is a FIFO", func(t *testing.T, home Home, m map[string]any, base string) {
			mkfifo(t, home.SecretsPath())
		}, []string{"secrets.json", "not a regular file"}},
		{"secrets.json is a directory", func(t *testing.T, home Home, m map[string]any, base string) {
			os.Remove(home.SecretsPath())
			os.Mkdir(home.SecretsPath(), 0o700)
		}, []string{"secrets.json", "not a regular file"}},
		{"secrets.json over 16 MiB", func(t *testing.T, home Home, m map[string]any, base string) {
			os.Truncate(home.SecretsPath(), 17<<20)
		}, []string{"secrets.json", "over the limit of 16 MiB"}},
		{"secrets.json nested two million levels", raw(bytes.Repeat([]byte("{\"a\":"), 2_000_000)[:4<<20]), []string{"secrets.json: line 1:", "limit of 64 levels"}},
		{"invalid UTF-8 in a secret value", raw([]byte("{\"k\": \"hunt\xfeer2\"}")), []string{"secrets.json: line 1:12 (byte 11): not valid UTF-8 (value not shown)"}},
		{"lone surrogate escape in a secret value", raw([]byte(`{"k": "hunter\ud834"}`)), []string{"secrets.json: line 1:14 (byte 13): not valid UTF-8 (value not shown)"}},
		{"a secret that is an object", raw([]byte(`{"k": {"v": "x"}}`)), []string{"secrets.json: k", "want a string value, got an object (value not shown)"}},
	})
	// No refusal above may quote a secret's bytes.
	home, _, _ := validHome(t)
	os.WriteFile(home.SecretsPath(), []byte("{\"k\": \"hunt\xfeer2\"}"), 0o600)
	if _, err := Load(home); err == nil || strings.Contains(err.Error(), "hunt") || strings.Contains(err.Error(), "0xfe") {
		t.Errorf("Load with invalid UTF-8 in a value = %v; want a refusal that shows no byte of it", err)
	}
}

// TestParseRefusesDeepInputQuickly: the raw-tree first pass of Parse and of
// config edits is guarded before it recurses.
func TestParseRefusesDeepInputQuickly(t *testing.T) {
	deep := bytes.Repeat([]byte("["), 2_000_000)
	for name, f := range map[string]func() error{
		"Parse":         func() error { _, err := Parse(deep); return err },
		"ParseSecrets":  func() error { _, err := ParseSecrets(deep); return err },
		"AddAgent":      func() error { _, err := AddAgent(deep, "a", "/r"); return err },
		"SetGlobalRepo": func() error { _, err := SetGlobalRepo(deep, "/r"); return err },
	} {
		if err := f(); err == nil || !strings.Contains(err.Error(), "limit of 64 levels") {
			t.Errorf("%s(2M levels) = %v; want the depth limit", name, err)
		}
	}
}

// TestSecretsWriteThroughSymlink: secrets.json kept elsewhere behind a
// symlink is edited in place: the link stays, its target gets the new
// content atomically with mode 0600, and nothing else appears.
func TestSecretsWriteThroughSymlink(t *testing.T) {
	home := Home{Dir: t.TempDir()}
	vault := t.TempDir()
	target := filepath.Join(vault, "choir-secrets.json")
	if err := os.WriteFile(target, []byte(`{"a": "1"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, home.SecretsPath()); err != nil {
		t.Fatal(err)
	}
	if err := EditSecrets(home, func(s Secrets) error { s["b"] = "2"; return nil }); err != nil {
		t.Fatalf("EditSecrets through a symlink = %v", err)
	}
	fi, err := os.Lstat(home.SecretsPath())
	if err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("secrets.json after the edit: %v, %v; want it still a symlink", fi.Mode(), err)
	}
	if l, _ := os.Readlink(home.SecretsPath()); l != target {
		t.Errorf("the link points at %s; want %s", l, target)
	}
	s, err := LoadSecrets(home)
	if err != nil || s["a"] != "1" || s["b"] != "2" {
		t.Fatalf("LoadSecrets after the edit = %v, %v; want a and b", s.Names(), err)
	}
	tfi, _ := os.Stat(target)
	if tfi.Mode().Perm() != 0o600 {
		t.Errorf("target mode = %v; want 0600", tfi.Mode().Perm())
	}
	for _, dir := range []string{home.Dir, vault} {
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			if strings.Contains(e.Name(), ".tmp-") {
				t.Errorf("temp file %s left in %s", e.Name(), dir)
			}
		}
	}
}

// TestHostileSecretEdits: edits choird would refuse, or that could write
// somewhere unexpected, write nothing.
func TestHostileSecretEdits(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, home Home, other string)
		edit  func(Secrets) error
		want  string
	}{
		{"value of invalid UTF-8", nil, func(s Secrets) error { s["k"] = "a\xffb"; return nil }, "not valid UTF-8"},
		{"value over 1 MiB", nil, func(s Secrets) error { s["k"] = strings.Repeat("x", 1<<20+1); return nil }, "over the limit of 1 MiB"},
		{"file over 16 MiB", nil, func(s Secrets) error {
			for i := range 17 {
				s[string(rune('a'+i))] = strings.Repeat("x", 1<<20)
			}
			return nil
		}, "over its limit of 16 MiB; nothing written"},
		{"dangling symlink", func(t *testing.T, home Home, other string) {
			os.Remove(home.SecretsPath())
			os.Symlink(filepath.Join(other, "gone.json"), home.SecretsPath())
		}, func(s Secrets) error { s["k"] = "v"; return nil }, "does not exist"},
		{"open secrets.json", func(t *testing.T, home Home, other string) {
			os.Chmod(home.SecretsPath(), 0o644)
		}, func(s Secrets) error { s["k"] = "v"; return nil }, "chmod 600"},
		{"symlink to a FIFO", func(t *testing.T, home Home, other string) {
			mkfifo(t, filepath.Join(other, "fifo"))
			os.Remove(home.SecretsPath())
			os.Symlink(filepath.Join(other, "fifo"), home.SecretsPath())
		}, func(s Secrets) error { s["k"] = "v"; return nil }, "not a regular file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			home := Home{Dir: filepath.Join(root, "home")}
			other := filepath.Join(root, "other")
			os.Mkdir(home.Dir, 0o700)
			os.Mkdir(other, 0o700)
			os.WriteFile(home.SecretsPath(), []byte(`{"keep": "me"}`), 0o600)
			if tc.setup != nil {
				tc.setup(t, home, other)
			}
			before := snapshot(t, root)
			err := EditSecrets(home, tc.edit)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("EditSecrets = %v; want %q", err, tc.want)
			}
			assertUnchanged(t, before, snapshot(t, root))
		})
	}
}

func TestCanonicalPath(t *testing.T) {
	dir := t.TempDir()
	real, _ := filepath.EvalSymlinks(dir)
	os.MkdirAll(filepath.Join(dir, "a", "b"), 0o755)
	os.Symlink(filepath.Join(dir, "a"), filepath.Join(dir, "l"))
	for _, tc := range []struct{ in, want string }{
		{dir + "/a/b", real + "/a/b"},
		{dir + "/l/b", real + "/a/b"},
		{dir + "/l/missing/deeper", real + "/a/missing/deeper"},
		{"/nonexistent-root-dir/x", "/nonexistent-root-dir/x"},
	} {
		if got, err := canonicalPath(tc.in); err != nil || got != tc.want {
			t.Errorf("canonicalPath(%s) = %s, %v; want %s", tc.in, got, err, tc.want)
		}
	}
}
