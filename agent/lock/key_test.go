package lock

import (
	"errors"
	"testing"
)

func TestFile(t *testing.T) {
	tests := []struct {
		rel     string
		want    Key
		wantErr bool
	}{
		{"src/a.go", "file:src/a.go", false},
		{"./src//a.go", "file:src/a.go", false},
		{"src/sub/../a.go", "file:src/a.go", false},
		{"src/", "file:src", false},
		{".choirtmp/recv/x.pdf", "file:.choirtmp/recv/x.pdf", false},
		{"a:b", "file:a:b", false},
		{"", "", true},
		{".", "", true},
		{"./", "", true},
		{"/etc/passwd", "", true},
		{"..", "", true},
		{"../x", "", true},
		{"a/../../x", "", true},
		{"a\x00b", "", true},
	}
	for _, tt := range tests {
		got, err := File(tt.rel)
		if got != tt.want || (err != nil) != tt.wantErr {
			t.Errorf("File(%q) = %q, %v; want %q, error %v", tt.rel, got, err, tt.want, tt.wantErr)
		}
		if err != nil && !errors.Is(err, ErrInvalidKey) {
			t.Errorf("File(%q) error %v; want ErrInvalidKey", tt.rel, err)
		}
	}
}

func TestParseKey(t *testing.T) {
	tests := []struct {
		in      string
		want    Key
		wantErr bool
	}{
		{"workspace", Workspace, false},
		{"browser_tab", BrowserTab, false},
		{"choirtmp", ChoirTmp, false},
		{"file:./x/y", "file:x/y", false},
		{"mem:main", "mem:main", false},
		{"repo:main", "repo:main", false},
		{"net:api.search.brave.com:443", "net:api.search.brave.com:443", false},
		{"ext:smtp", "ext:smtp", false},
		{"", "", true},
		{"Workspace", "", true},
		{"workspace:x", "", true},
		{"choirtmp:send", "", true},
		{"file:", "", true},
		{"file:/abs", "", true},
		{"file:../up", "", true},
		{"mem:", "", true},
		{"net:a b", "", true},
		{"tmp:x", "", true},
		{"http", "", true},
	}
	for _, tt := range tests {
		got, err := ParseKey(tt.in)
		if got != tt.want || (err != nil) != tt.wantErr {
			t.Errorf("ParseKey(%q) = %q, %v; want %q, error %v", tt.in, got, err, tt.want, tt.wantErr)
		}
		if err != nil && !errors.Is(err, ErrInvalidKey) {
			t.Errorf("ParseKey(%q) error %v; want ErrInvalidKey", tt.in, err)
		}
	}
}

func TestReservedConstructors(t *testing.T) {
	tests := []struct {
		name string
		f    func(string) (Key, error)
		arg  string
		want Key
	}{
		{"Mem", Mem, "main", "mem:main"},
		{"Repo", Repo, "main", "repo:main"},
		{"Net", Net, "brave", "net:brave"},
		{"Ext", Ext, "notion", "ext:notion"},
		{"Mem", Mem, "", ""},
		{"Net", Net, "tab\there", ""},
	}
	for _, tt := range tests {
		got, err := tt.f(tt.arg)
		if got != tt.want || (err != nil) != (tt.want == "") {
			t.Errorf("%s(%q) = %q, %v; want %q", tt.name, tt.arg, got, err, tt.want)
		}
	}
}

func TestOverlaps(t *testing.T) {
	tests := []struct {
		a, b Key
		want bool
	}{
		{"workspace", "workspace", true},
		{"workspace", "file:a", true},
		{"file:a/b", "workspace", true},
		{"file:a", "file:a", true},
		{"file:a", "file:a/b", true},
		{"file:a/b/c", "file:a", true},
		{"file:a", "file:ab", false},
		{"file:a/b", "file:a/c", false},
		{"workspace", "choirtmp", false},
		{"workspace", "browser_tab", false},
		{"mem:a", "mem:b", false},
		{"mem:a", "mem:a", true},
		{"choirtmp", "file:.choirtmp", false},
	}
	for _, tt := range tests {
		if got := overlaps(tt.a, tt.b); got != tt.want {
			t.Errorf("overlaps(%s, %s) = %v; want %v", tt.a, tt.b, got, tt.want)
		}
	}
}

func TestKeyPath(t *testing.T) {
	if p, ok := Key("file:src/a.go").Path(); p != "src/a.go" || !ok {
		t.Errorf("Key(file:src/a.go).Path() = %q, %v; want src/a.go, true", p, ok)
	}
	if p, ok := Workspace.Path(); p != "" || ok {
		t.Errorf("Workspace.Path() = %q, %v; want \"\", false", p, ok)
	}
}
