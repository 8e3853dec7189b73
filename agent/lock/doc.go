// Package lock is choir-agent's resource lock manager (spec section 9): the
// arbiter acquires a tool's whole lockset before the tool runs and releases it
// when the result is committed, so lanes that touch the same resource are
// serialised and lanes that touch different resources run side by side.
//
// # Keys, modes and owners
//
// A [Key] names a resource: [Workspace], file:<path> (built by [File] from a
// workspace-relative path), [BrowserTab], [ChoirTmp], and the reserved
// mem:<x>, repo:<x>, net:<x> and ext:<x>. [ParseKey] refuses anything else.
// A lock is taken in mode [S] (shared, read) or [X] (exclusive, write). An
// [Owner] is a lane: [Edge] or core:<job-name> (see [Core]).
//
// Each key is in one of three states:
//
//	FREE              nobody holds it
//	S_LOCKED(count)   count owners hold it in S
//	X_LOCKED(owner)   one owner holds it in X
//
//	FREE     -> S_LOCKED  acquire S
//	FREE     -> X_LOCKED  acquire X
//	S_LOCKED -> S_LOCKED  acquire S (another reader)
//	S_LOCKED -> FREE      last S released
//	X_LOCKED -> FREE      X released
//
// There is no S_LOCKED -> X_LOCKED upgrade: an owner asking X on a key it
// holds in S gets [ErrUpgrade] at once instead of waiting on itself.
//
// # Hierarchy
//
// Locks held by two different owners conflict when their resources overlap
// and at least one of the two locks is X. The file keys form a tree under
// workspace, and a resource overlaps everything inside it:
//
//   - workspace contains every file:<path>;
//   - file:<dir> contains file:<dir>/<anything> (fs.search may lock a
//     directory: it then covers the files under it);
//   - browser_tab, choirtmp, mem:, repo:, net: and ext: keys overlap only
//     themselves, so choirtmp is independent of workspace.
//
// Hence workspace X (choir.exec) excludes every file lock and waits for all
// of them to go; workspace S is a read lock on the whole tree: it coexists
// with workspace S and any file S, and excludes workspace X and any file X
// (a consistent whole-workspace read, unused by v1 tools). file:src/a.go X
// and file:src/b.go X coexist; file:src S excludes file:src/a.go X.
//
// # Locksets
//
// [Manager.Acquire] takes a whole lockset or nothing: it never holds part of a
// set while it waits, so locksets cannot deadlock each other. The set is made
// canonical first (keys cleaned, a key named twice kept once in the stronger
// mode); locks inside one set never conflict with each other. An owner holds
// at most one lockset at a time, as a lane runs one tool at a time: asking
// for a second one fails with [ErrHolding] (or [ErrUpgrade]) rather than risk
// a hold-and-wait deadlock. [Held.Release] gives the whole set back at once;
// it is idempotent, so `defer held.Release()` covers every exit, panics
// included. Waiting ends with ctx.Err() when the context is cancelled or
// its deadline passes, and the caller then holds nothing.
//
// # Writer preference and the queue
//
// A waiting request reserves its place: a later request waits behind every
// earlier waiting request that it conflicts with. Since S never conflicts
// with S, this is the spec's writer preference (a waiting X blocks new S
// grants on everything it overlaps, so workspace X is not starved by a stream
// of file reads) made fair: the earliest waiter is blocked only by holders, so
// every waiter is eventually served and the queue cannot deadlock. S requests
// behind the same holder are admitted together.
//
// # The dirty-read exception
//
// While a core holds workspace X, the edge may still take file:<path> S, past
// both the workspace X and the queue: the edge keeps answering the user while
// a core runs choir.exec, and may see files half written. Only the edge, only
// S, only file keys, and only against a core's workspace X: a file lock the
// core holds explicitly (file:<path> X in the same set) still excludes the
// edge, and cores never get dirty reads.
//
// # Fairness caveats
//
//   - Dirty reads jump the queue, but only while a core holds workspace X.
//   - A reservation can delay a request whose own keys are free: the set
//     {file:a S, file:b X} waiting for file:b makes a later file:a X wait
//     too. That is the price of never starving large locksets.
//   - Edge and cores have equal priority outside the dirty-read exception.
//   - Every release wakes all waiters (one sync.Cond), which recheck their
//     sets; this is cheap for the edge plus a handful of cores, the sizes
//     choir runs at, and would not scale to thousands of waiters.
//
// One mutex and one condition variable guard all state (spec 9.4). Locks live
// in memory only: if choir-agent dies, they die with it.
package lock
