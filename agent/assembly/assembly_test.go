package assembly

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// The end-to-end paths (messages in, replies, core reports, files, events
// on heartbeats) run in real containers in testkit/demo and choirctl's
// tests; these are the assembly's own rules.

func TestFirstTimeDropsRepeatsAndStaysBounded(t *testing.T) {
	rt := &Runtime{seen: map[string]bool{}}
	if !rt.firstTime("m1") || rt.firstTime("m1") {
		t.Fatal("firstTime(m1) twice = not true then false")
	}
	for i := range maxSeen + 10 {
		rt.firstTime(fmt.Sprintf("x%d", i))
	}
	if len(rt.seen) > maxSeen || len(rt.order) > maxSeen {
		t.Errorf("remembered %d ids; want at most %d", len(rt.seen), maxSeen)
	}
	if !rt.firstTime("m1") {
		t.Error("the oldest id was not forgotten after maxSeen newer ones")
	}
}

func TestOutgoingListsStagedRegularFiles(t *testing.T) {
	ws := t.TempDir()
	send := filepath.Join(ws, ".choirtmp", "send")
	os.MkdirAll(filepath.Join(send, "subdir"), 0o755)
	os.WriteFile(filepath.Join(send, "b.txt"), []byte("b"), 0o644)
	os.WriteFile(filepath.Join(send, "a.png"), []byte("a"), 0o644)
	os.Symlink("/etc/passwd", filepath.Join(send, "link"))
	rt := &Runtime{cfg: Config{Workspace: ws}}
	if got, want := rt.outgoing(), []string{".choirtmp/send/a.png", ".choirtmp/send/b.txt"}; !slices.Equal(got, want) {
		t.Errorf("outgoing() = %v; want %v (no directories, no symlinks)", got, want)
	}
	if got := (&Runtime{cfg: Config{Workspace: t.TempDir()}}).outgoing(); got != nil {
		t.Errorf("outgoing() with no staging directory = %v; want none", got)
	}
}
