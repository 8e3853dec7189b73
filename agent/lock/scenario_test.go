package lock

import (
	"context"
	"testing"
)

const (
	coreA Owner = "core:a"
	coreB Owner = "core:b"
	coreC Owner = "core:c"
	coreZ Owner = "core:z"
)

// TestScenarios walks the lock manager through the transitions of spec 9.1,
// the hierarchy of 9.2 and the concurrency rules of 9.3-9.4, one step at a
// time, checking after each step which calls hold and which wait.
func TestScenarios(t *testing.T) {
	tests := []struct {
		name  string
		steps []step
	}{
		// 9.1 transitions.
		{"FREE to S_LOCKED to FREE", []step{
			state("file:a", "FREE"),
			acquire("c1", Edge, "file:a:S"), granted("c1"),
			state("file:a", "S_LOCKED(1)"),
			release("c1"), state("file:a", "FREE"),
		}},
		{"S_LOCKED adds readers and frees after the last", []step{
			acquire("c1", coreA, "file:a:S"), acquire("c2", coreB, "file:a:S"), acquire("c3", Edge, "file:a:S"),
			granted("c1"), granted("c2"), granted("c3"),
			state("file:a", "S_LOCKED(3)"),
			release("c1"), state("file:a", "S_LOCKED(2)"),
			release("c3"), release("c2"), state("file:a", "FREE"),
		}},
		{"FREE to X_LOCKED to FREE", []step{
			acquire("c1", coreA, "file:a:X"), granted("c1"),
			state("file:a", "X_LOCKED(core:a)"),
			release("c1"), state("file:a", "FREE"),
		}},
		{"X excludes S and X", []step{
			acquire("c1", coreA, "file:a:X"),
			acquire("c2", coreB, "file:a:S"), waiting("c2"),
			acquire("c3", Edge, "file:a:X"), waiting("c3"),
			release("c1"), granted("c2"), waiting("c3"),
			release("c2"), granted("c3"), state("file:a", "X_LOCKED(edge)"),
		}},
		{"S excludes X", []step{
			acquire("c1", coreA, "file:a:S"),
			acquire("c2", coreB, "file:a:X"), waiting("c2"),
			release("c1"), granted("c2"), state("file:a", "X_LOCKED(core:b)"),
		}},
		{"cores write different files side by side", []step{
			acquire("c1", "core:refactor-auth", "file:src/auth.go:X"),
			acquire("c2", "core:write-tests", "file:src/auth_test.go:X"),
			granted("c1"), granted("c2"),
		}},

		// 9.2 hierarchy.
		{"workspace X excludes file locks", []step{
			acquire("c1", coreA, "workspace:X"),
			acquire("c2", coreB, "file:a:S"), waiting("c2"),
			acquire("c3", coreC, "file:b:X"), waiting("c3"),
			release("c1"), granted("c2"), granted("c3"),
		}},
		{"file locks hold off workspace X", []step{
			acquire("c1", coreA, "file:a:S"),
			acquire("c2", coreB, "file:b/c:X"),
			acquire("c3", coreC, "workspace:X"), waiting("c3"),
			release("c1"), waiting("c3"),
			release("c2"), granted("c3"), state("workspace", "X_LOCKED(core:c)"),
		}},
		{"workspace S shares with workspace S and file S", []step{
			acquire("c1", coreA, "workspace:S"),
			acquire("c2", coreB, "file:a:S"),
			acquire("c3", Edge, "workspace:S"),
			granted("c1"), granted("c2"), granted("c3"),
			state("workspace", "S_LOCKED(2)"),
		}},
		{"workspace S excludes file X", []step{
			acquire("c1", coreA, "workspace:S"),
			acquire("c2", coreB, "file:a:X"), waiting("c2"),
			release("c1"), granted("c2"),
		}},
		{"file X excludes workspace S", []step{
			acquire("c1", coreA, "file:a:X"),
			acquire("c2", coreB, "workspace:S"), waiting("c2"),
			release("c1"), granted("c2"),
		}},
		{"workspace S excludes workspace X", []step{
			acquire("c1", coreA, "workspace:S"),
			acquire("c2", coreB, "workspace:X"), waiting("c2"),
			release("c1"), granted("c2"),
		}},
		{"a directory lock covers the files inside it", []step{
			acquire("c1", coreA, "file:src:S"),
			acquire("c2", coreB, "file:src/a.go:S"), granted("c2"),
			acquire("c3", coreC, "file:src/sub/b.go:X"), waiting("c3"),
			acquire("c4", Edge, "file:srcx/a.go:X"), granted("c4"),
			release("c1"), granted("c3"),
		}},
		{"a file X excludes its directory S", []step{
			acquire("c1", coreA, "file:src/a.go:X"),
			acquire("c2", Edge, "file:src:S"), waiting("c2"),
			release("c1"), granted("c2"),
		}},
		{"choirtmp, browser_tab and reserved keys are independent of workspace", []step{
			acquire("c1", coreA, "workspace:X"),
			acquire("c2", coreB, "choirtmp:X"),
			acquire("c3", coreC, "browser_tab:X"),
			acquire("c4", Edge, "mem:w1:X", "net:brave:X"),
			granted("c1"), granted("c2"), granted("c3"), granted("c4"),
		}},
		{"reserved keys lock per name", []step{
			acquire("c1", coreA, "mem:w1:X"),
			acquire("c2", coreB, "mem:w2:X"), granted("c2"),
			acquire("c3", Edge, "mem:w1:S"), waiting("c3"),
		}},

		// 9.4 writer preference, made a fair queue.
		{"a waiting X blocks new S", []step{
			acquire("c1", coreA, "file:a:S"),
			acquire("c2", coreB, "file:a:X"), waiting("c2"),
			acquire("c3", coreC, "file:a:S"), waiting("c3"),
			queue(coreB, coreC),
			release("c1"), granted("c2"), waiting("c3"),
			release("c2"), granted("c3"),
		}},
		{"a waiting workspace X blocks new file S", []step{
			acquire("c1", coreA, "file:a:S"),
			acquire("c2", coreB, "workspace:X"), waiting("c2"),
			acquire("c3", coreC, "file:b:S"), waiting("c3"),
			acquire("c4", Edge, "choirtmp:S"), granted("c4"),
			release("c1"), granted("c2"), waiting("c3"),
			release("c2"), granted("c3"),
		}},
		{"a waiting S holds back a later X", []step{
			acquire("c1", coreA, "file:a:X"),
			acquire("c2", coreB, "file:a:S"), waiting("c2"),
			acquire("c3", coreC, "file:a:X"), waiting("c3"),
			release("c1"), granted("c2"), waiting("c3"),
		}},
		{"a waiting lockset is not overtaken on its free keys", []step{
			acquire("c1", coreA, "file:b:X"),
			acquire("c2", coreB, "file:a:X", "file:b:X"), waiting("c2"),
			state("file:a", "FREE"),
			acquire("c3", coreC, "file:a:X"), waiting("c3"),
			release("c1"), granted("c2"), waiting("c3"),
		}},
		{"crossed locksets queue without deadlock", []step{
			acquire("c1", coreA, "file:a:S", "file:b:S"),
			acquire("c2", coreB, "file:a:X", "file:b:S"), waiting("c2"),
			acquire("c3", coreC, "file:b:X", "file:a:S"), waiting("c3"),
			release("c1"), granted("c2"), waiting("c3"),
			release("c2"), granted("c3"),
		}},

		// 9.4 dirty-read exception.
		{"the edge reads a file under a core's workspace X", []step{
			acquire("c1", coreA, "workspace:X"),
			acquire("c2", Edge, "file:a:S"), granted("c2"),
			state("workspace", "X_LOCKED(core:a)"), state("file:a", "S_LOCKED(1)"),
		}},
		{"a core gets no dirty read", []step{
			acquire("c1", coreA, "workspace:X"),
			acquire("c2", coreB, "file:a:S"), waiting("c2"),
		}},
		{"the edge gets no dirty write", []step{
			acquire("c1", coreA, "workspace:X"),
			acquire("c2", Edge, "file:a:X"), waiting("c2"),
		}},
		{"a core gets no dirty read under the edge's workspace X", []step{
			acquire("c1", Edge, "workspace:X"),
			acquire("c2", coreA, "file:a:S"), waiting("c2"),
		}},
		{"the dirty read passes the queue", []step{
			acquire("c1", coreA, "workspace:X"),
			acquire("c2", coreB, "workspace:X"), waiting("c2"),
			acquire("c3", coreC, "file:a:X"), waiting("c3"),
			acquire("c4", Edge, "file:a:S"), granted("c4"),
		}},
		{"the dirty read respects a file lock the core holds", []step{
			acquire("c1", coreA, "workspace:X", "file:a:X"),
			acquire("c2", Edge, "file:a:S"), waiting("c2"),
			release("c1"), granted("c2"),
		}},
		{"a queued edge read turns dirty once a core holds workspace X", []step{
			acquire("c1", coreA, "file:b:X"),
			acquire("c2", coreB, "workspace:X"), waiting("c2"),
			acquire("c3", Edge, "file:a:S"), waiting("c3"),
			release("c1"), granted("c2"), granted("c3"),
		}},
		{"the dirty read ends with the workspace X", []step{
			acquire("c1", coreA, "workspace:X"),
			acquire("c2", Edge, "file:a:S"), granted("c2"),
			acquire("c3", coreB, "file:a:X"), waiting("c3"),
			release("c1"), waiting("c3"),
			release("c2"), granted("c3"),
		}},

		// Owners and locksets.
		{"no S to X upgrade", []step{
			acquire("c1", coreA, "file:a:S"),
			acquire("c2", coreA, "file:a:X"), fails("c2", ErrUpgrade),
			state("file:a", "S_LOCKED(1)"),
		}},
		{"one lockset per owner", []step{
			acquire("c1", coreA, "file:a:X"),
			acquire("c2", coreA, "file:b:S"), fails("c2", ErrHolding),
			acquire("c3", coreA, "workspace:X"), fails("c3", ErrHolding),
			state("file:b", "FREE"),
		}},
		{"an owner's second call waits for its first lockset", []step{
			acquire("c1", coreZ, "file:a:X"),
			acquire("c2", coreA, "file:a:S"), waiting("c2"),
			acquire("c3", coreA, "file:b:S"), granted("c3"),
			release("c1"), waiting("c2"),
			release("c3"), granted("c2"),
		}},
		{"a key named twice is held once in the stronger mode", []step{
			acquire("c1", coreA, "file:a:S", "file:./a:X", "file:b/../a:S", "choirtmp:S"),
			granted("c1"),
			locks("c1", "choirtmp:S", "file:a:X"),
			state("file:a", "X_LOCKED(core:a)"),
			acquire("c2", Edge, "file:a:S"), waiting("c2"),
		}},
		{"locks in one set never conflict", []step{
			acquire("c1", coreA, "workspace:S", "file:a:X", "file:a/b:X"),
			granted("c1"),
		}},
		{"release is idempotent", []step{
			acquire("c1", coreA, "file:a:S"), acquire("c2", coreB, "file:a:S"),
			release("c1"), release("c1"),
			state("file:a", "S_LOCKED(1)"),
			acquire("c3", coreA, "file:b:S"), granted("c3"),
			acquire("c4", coreZ, "workspace:X"), waiting("c4"),
			release("c3"), waiting("c4"),
			release("c2"), granted("c4"),
		}},
		{"an empty lockset is granted at once", []step{
			acquire("c1", coreA, "workspace:X"),
			acquire("c2", coreA), granted("c2"),
			acquire("c3", coreB), granted("c3"),
		}},

		// Cancellation and deadlines.
		{"cancel while waiting", []step{
			acquire("c1", coreA, "file:a:S"),
			acquire("c2", coreB, "file:a:X", "file:b:X"), waiting("c2"),
			acquire("c3", coreC, "file:a:S"), waiting("c3"),
			cancel("c2"), fails("c2", context.Canceled),
			holdsNothing(coreB), queue(), granted("c3"),
			state("file:b", "FREE"),
		}},
		{"deadline while waiting", []step{
			acquire("c1", coreA, "workspace:X"),
			acquireWith(expiring, "c2", coreB, "file:a:S"), waiting("c2"),
			cancel("c2"), fails("c2", context.DeadlineExceeded),
			holdsNothing(coreB), queue(),
			release("c1"), state("file:a", "FREE"),
		}},
		{"a done context gets nothing, even when free", []step{
			acquireWith(doneBefore, "c1", coreA, "file:a:S"),
			fails("c1", context.Canceled), state("file:a", "FREE"),
		}},

		// Refused requests.
		{"unknown namespace", []step{acquire("c1", coreA, "tmp:x:S"), fails("c1", ErrInvalidKey)}},
		{"path leaving the workspace", []step{acquire("c1", coreA, "file:a/../../x:S"), fails("c1", ErrInvalidKey)}},
		{"invalid mode", []step{acquire("c1", coreA, "file:a:W"), fails("c1", ErrInvalidMode)}},
		{"invalid owner", []step{acquire("c1", "core:", "file:a:S"), fails("c1", ErrInvalidOwner)}},
		{"lane name is not an owner", []step{acquire("c1", "core", "file:a:S"), fails("c1", ErrInvalidOwner)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRunner(t)
			for _, s := range tt.steps {
				s(r)
			}
		})
	}
}
