// Package workspace holds the built-in tools that work on the leased
// workspace (design §8.7 rows 1-4): choir.exec, choir.fs.read,
// choir.fs.write and choir.fs.search. Tools returns them for tool.Load.
//
// Every path a file tool takes goes through Confine, the one confinement
// check: workspace-relative, no ~, no NUL, no .. out of the root, and no
// symlink leading outside (resolved on the deepest existing ancestor, so
// creating a file under a symlinked directory is checked too). Refusals are
// path_refused errors naming the path.
//
// Lock keys (design §9.5) use the cleaned relative path: choir.fs.read and
// choir.fs.search take file:<path> S, choir.fs.write file:<path> X,
// choir.exec workspace X. The root is the workspace key and paths under
// .choirtmp/ use the independent choirtmp key (§9.2). A symlink inside the
// workspace and its target have different keys; the file tools cannot race
// choir.exec, which could create one, because workspace X excludes them.
package workspace
