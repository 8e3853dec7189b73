// Package doctor checks a choir installation and says, for each thing that
// is wrong, what to do: `choird --doctor`, which `choirctl doctor` runs.
//
// Each check is a small function that reads and never writes: the config
// (the same checks as `choird --check`), the secrets file's owner and mode,
// the socket directory and sockets, whether choird runs and is healthy (its
// admin socket's status), the Docker engine (version, API version, storage
// driver) and the free space of its data root, Postgres (reached with the
// configured secret, its version, the vector extension), the base image and
// each configured agent's image (present, and built from its repos' heads,
// asked of the remotes with git ls-remote), the size of the log directory,
// and the clock (against a model endpoint's Date header; skipped offline).
//
// Checks run one after another, each under its own deadline (Timeout, a
// few seconds): one that has not answered by then is reported as failed
// and abandoned, so a hung engine or database cannot hang the doctor. A
// check that needs what an earlier one found (the images need the engine,
// Postgres needs a valid config) is skipped when that is missing.
//
// The result of each check is one line: ok, warn, fail or skip, what was
// found, and for anything not ok what to do. The report is written as text
// or JSON (Report); the installation passes when nothing failed.
package doctor
