package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// ctlIn runs choirctl in-process against home.
func ctlIn(t *testing.T, home, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := realMain(context.Background(), append([]string{"--home", home}, args...), strings.NewReader(stdin), &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// TestSecretSetThroughSymlink: with secrets.json a symlink to a file kept
// elsewhere, set and delete change the target in place (atomically, 0600)
// and keep the link.
func TestSecretSetThroughSymlink(t *testing.T) {
	home := t.TempDir()
	vault := filepath.Join(t.TempDir(), "choir-secrets.json")
	os.WriteFile(vault, []byte(`{"a": "1"}`), 0o600)
	link := filepath.Join(home, "secrets.json")
	if err := os.Symlink(vault, link); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := ctlIn(t, home, "", "secret", "set", "b", "2"); code != 0 {
		t.Fatalf("secret set through a symlink = %d %s", code, stderr)
	}
	if code, _, stderr := ctlIn(t, home, "", "secret", "delete", "a"); code != 0 {
		t.Fatalf("secret delete through a symlink = %d %s", code, stderr)
	}
	if target, err := os.Readlink(link); err != nil || target != vault {
		t.Fatalf("secrets.json after set and delete: link to %q, %v; want the link to %s kept", target, err, vault)
	}
	data, _ := os.ReadFile(vault)
	if want := "{\n  \"b\": \"2\"\n}\n"; string(data) != want {
		t.Errorf("target content = %q; want %q", data, want)
	}
	if fi, _ := os.Stat(vault); fi.Mode().Perm() != 0o600 {
		t.Errorf("target mode = %v; want 0600", fi.Mode().Perm())
	}
	if code, stdout, _ := ctlIn(t, home, "", "secret", "list"); code != 0 || stdout != "b\n" {
		t.Errorf("secret list = %d %q; want b", code, stdout)
	}
}

// TestHostileSecretSet: `secret set` refuses what would store a secret
// other than the one given, or write where it should not, and leaves
// secrets.json (and whatever it links to) exactly as it was.
func TestHostileSecretSet(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, home, elsewhere string)
		stdin string
		args  []string
		code  int
		want  string
	}{
		{"a value of invalid UTF-8 on stdin", nil, "pass\xffword\n", []string{"secret", "set", "k"}, 1, "not valid UTF-8"},
		{"a value of invalid UTF-8 in argv", nil, "", []string{"secret", "set", "k", "\xc3"}, 1, "not valid UTF-8"},
		{"a value over 1 MiB on stdin", nil, strings.Repeat("x", 1<<20+1), []string{"secret", "set", "k"}, 1, "larger than 1 MiB"},
		{"a name that is a path", nil, "", []string{"secret", "set", "../k", "v"}, 2, "secret name"},
		{"a world-readable secrets.json", func(t *testing.T, home, _ string) {
			os.Chmod(filepath.Join(home, "secrets.json"), 0o644)
		}, "", []string{"secret", "set", "k", "v"}, 1, "run `chmod 600 "},
		{"a secrets.json linking to nothing", func(t *testing.T, home, elsewhere string) {
			os.Remove(filepath.Join(home, "secrets.json"))
			os.Symlink(filepath.Join(elsewhere, "missing.json"), filepath.Join(home, "secrets.json"))
		}, "", []string{"secret", "set", "k", "v"}, 1, "does not exist"},
		{"a secrets.json nested past the limit", func(t *testing.T, home, _ string) {
			os.WriteFile(filepath.Join(home, "secrets.json"), []byte(strings.Repeat("[", 100_000)), 0o600)
		}, "", []string{"secret", "set", "k", "v"}, 1, "limit of 64 levels"},
		{"delete from a secrets.json with invalid UTF-8", func(t *testing.T, home, _ string) {
			os.WriteFile(filepath.Join(home, "secrets.json"), []byte("{\"keep\": \"m\xffe\"}"), 0o600)
		}, "", []string{"secret", "delete", "keep"}, 1, "not valid UTF-8 (value not shown)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			home, elsewhere := filepath.Join(root, "home"), filepath.Join(root, "elsewhere")
			os.Mkdir(home, 0o700)
			os.Mkdir(elsewhere, 0o700)
			os.WriteFile(filepath.Join(home, "secrets.json"), []byte(`{"keep": "me"}`), 0o600)
			if tc.setup != nil {
				tc.setup(t, home, elsewhere)
			}
			before := tree(t, root)
			code, _, stderr := ctlIn(t, home, tc.stdin, tc.args...)
			if code != tc.code || !strings.Contains(stderr, tc.want) {
				t.Fatalf("choirctl %s = %d %s\nwant %d and %q", strings.Join(tc.args, " "), code, stderr, tc.code, tc.want)
			}
			if strings.Contains(stderr, "pass") || strings.Contains(stderr, "me\"") {
				t.Errorf("the refusal shows a secret value: %s", stderr)
			}
			after := tree(t, root)
			for p, b := range before {
				if after[p] != b {
					t.Errorf("%s changed on a refused %s:\n before %.80q\n after  %.80q", p, tc.args[1], b, after[p])
				}
			}
			for p := range after {
				if _, ok := before[p]; !ok && !strings.HasSuffix(p, ".lock") {
					t.Errorf("%s was created by a refused %s", p, tc.args[1])
				}
			}
		})
	}
}

// tree maps every path under root to its mode, link target or content.
func tree(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		fi, lerr := os.Lstat(p)
		if lerr != nil {
			return nil
		}
		s := fi.Mode().String()
		if fi.Mode()&os.ModeSymlink != 0 {
			l, _ := os.Readlink(p)
			s += " -> " + l
		} else if fi.Mode().IsRegular() {
			data, _ := os.ReadFile(p)
			s += " " + string(data)
		}
		out[p] = s
		return nil
	})
	return out
}
