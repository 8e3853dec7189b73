package lock

import "errors"

// Errors reported by this package; each is wrapped with the details of the
// refused key, owner or lockset, so match them with errors.Is.
var (
	// ErrInvalidKey reports a key outside the known namespaces or a file path
	// that is empty, absolute or leaves the workspace.
	ErrInvalidKey = errors.New("lock: invalid key")
	// ErrInvalidOwner reports an owner that is neither edge nor core:<job-name>.
	ErrInvalidOwner = errors.New("lock: invalid owner")
	// ErrInvalidMode reports a mode other than S or X.
	ErrInvalidMode = errors.New("lock: invalid mode")
	// ErrUpgrade reports an owner asking X on a key it holds in S.
	ErrUpgrade = errors.New("lock: no S to X upgrade")
	// ErrHolding reports an owner asking for a lockset while it holds one.
	ErrHolding = errors.New("lock: owner already holds a lockset")
	// ErrWouldBlock reports that TryAcquire could not take the set at once.
	ErrWouldBlock = errors.New("lock: lockset is not free")
)
