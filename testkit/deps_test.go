package testkit

import (
	"os/exec"
	"strings"
	"testing"
)

// badDeps lists, per binary, packages it must never link (STYLE.md): the CLI
// and the in-container runtime stay free of the database, the browser and the
// Docker client, which only choird may hold.
var badDeps = map[string][]string{
	"choir/choirctl": {"github.com/jackc/pgx", "github.com/pgvector", "github.com/playwright-community", "choir/internal/docker", "choir/choird/"},
	"choir/agent":    {"github.com/jackc/pgx", "github.com/pgvector", "github.com/playwright-community", "choir/internal/docker", "choir/choird/"},
}

func TestBinariesLinkOnlyWhatTheyMay(t *testing.T) {
	for bin, bad := range badDeps {
		out, err := exec.Command("go", "list", "-deps", bin).Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", bin, err)
		}
		for _, dep := range strings.Fields(string(out)) {
			for _, b := range bad {
				if strings.HasPrefix(dep, b) {
					t.Errorf("%s depends on %s; it must not link %s", bin, dep, b)
				}
			}
		}
	}
}

// TestOnlyTheStoreImportsPgx keeps the database behind one package.
func TestOnlyTheStoreImportsPgx(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, "choir/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		for _, imp := range fields[1:] {
			if strings.HasPrefix(imp, "github.com/jackc/pgx") && fields[0] != "choir/choird/store" {
				t.Errorf("%s imports %s; only choir/choird/store may", fields[0], imp)
			}
		}
	}
}

// TestOnlyTheBrowserWorkerImportsPlaywright keeps playwright-go in one room,
// choird/browser: the rest of choird talks to the browser through it.
func TestOnlyTheBrowserWorkerImportsPlaywright(t *testing.T) {
	out, err := exec.Command("go", "list", "-test", "-f", `{{.ImportPath}} {{join .Imports " "}}`, "choir/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		// With -test, a package's test variant is listed as
		// "pkg [pkg.test] imports...": its first field is still pkg.
		fields := strings.Fields(line)
		for _, imp := range fields[1:] {
			if strings.HasPrefix(imp, "github.com/playwright-community/") && fields[0] != "choir/choird/browser" {
				t.Errorf("%s imports %s; only choir/choird/browser may", fields[0], imp)
			}
		}
	}
}
