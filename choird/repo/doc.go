// Package repo keeps choird's clones of the git repositories that agents are
// built from (design §6.5, §17.3): the global repo under
// <home>/repos/global/ (GlobalDir) and each agent's repo under
// <home>/repos/agents/<id>/ (AgentDir).
//
// It drives the git command line. Sync clones a repository the first time,
// into a temporary directory beside the target that is renamed into place
// only once the checkout is complete, so a half-made clone is never seen.
// Afterwards it points origin at the configured URL, fetches every branch
// and tag and checks out the configured ref as a detached HEAD, discarding
// anything else in the work tree: the clones belong to choird and nobody
// edits them. A ref is looked up as the remote's branch (never a stale local
// one), then a tag, then a commit SHA (full or abbreviated; a commit no
// branch reaches is fetched by name, which the server must allow); an empty
// ref is the remote's default branch. URLs may be local paths (a relative
// one is taken from choird's working directory), file://, ssh (ssh:// or
// user@host:path), https or http.
//
// A fetch that fails (an unreachable remote, refused credentials) is not an
// error when a clone exists: Sync checks out the ref as the clone last saw
// it and reports the failure as Checkout.Warning, so a build can go on from
// the stale clone. With no clone at all it is an error naming the repo and
// its URL, and nothing is left behind.
//
// Git never prompts: it runs with GIT_TERMINAL_PROMPT=0, no askpass
// program, no credential helper (-c credential.helper=) and, unless
// GIT_SSH_COMMAND or GIT_SSH says otherwise, ssh in batch mode. Credentials
// therefore come from the ssh keys and known_hosts of the user choird runs
// as, or from the URL itself; a password in a URL is never repeated in an
// error (Redact). Every error carries git's own message (its stderr) as a
// *GitError.
//
// Export writes the tree of a commit into a directory (git archive), so
// that a build reads exactly the commit it names even while another Sync
// moves the clone. Calls on one clone are serialised within the process.
package repo
