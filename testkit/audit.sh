#!/usr/bin/env bash
# make audit: what someone auditing choir air-gapped runs (issue 22 item 4).
#
# From the tree alone, with no network and an empty module cache
# (GOFLAGS=-mod=vendor, GOPROXY=off, a fresh GOMODCACHE and GOCACHE), it
#   1. checks that vendor/ is exactly what go.mod and go.sum ask for;
#   2. builds choird, choirctl and choir-agent as `make build` does;
#   3. runs go vet and the tests that need no backend (those that need
#      Docker, Postgres or a browser skip, saying why);
#   4. prints the third-party code that is compiled in: each module of
#      vendor/modules.txt with its version, its licence (identified from its
#      licence file) and the Go lines it adds;
#   5. builds again in a fresh clone of the same commit and shows that all
#      three binaries are byte-identical (sha256).
# It needs git, Go and the checkout; nothing else.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
say() { printf '\n== %s\n' "$*"; }

work=$(mktemp -d "${TMPDIR:-/tmp}/choir-audit-XXXXXX")
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT
export GOFLAGS=-mod=vendor GOPROXY=off GOSUMDB=off GOTOOLCHAIN=local \
	GOMODCACHE="$work/modcache" GOCACHE="$work/gocache" GOWORK=off
unset CHOIR_TEST_STRICT DOCKER_HOST CHOIR_TEST_DATABASE_URL
# Only the tests that need no backend: none is found or started.
export CHOIR_TEST_NO_BACKENDS=1

# One build as `make build` makes it, into $2, from the tree at $1.
build() {
	(cd "$1" &&
		go build -trimpath -o "$2/choird" ./choird &&
		go build -trimpath -o "$2/choirctl" ./choirctl &&
		CGO_ENABLED=0 go build -trimpath -o "$2/choir-agent" ./agent)
}

say "vendor/ against go.mod (go mod vendor would change nothing)"
[ -f vendor/modules.txt ] || { echo "no vendor/: run go mod vendor" >&2; exit 1; }
# A vendor/ that disagrees with go.mod makes every -mod=vendor command fail.
go list -deps ./... >/dev/null
echo "consistent"

say "building from the tree alone ($(go version | cut -d' ' -f3), empty module cache, GOPROXY=off)"
build "$root" "$work/one"
ls -l "$work/one"

say "go vet"
go vet ./...

say "tests that need no backend (those needing Docker, Postgres or a browser skip)"
go test -count=1 ./...

say "third-party code compiled in (vendor/modules.txt)"
licence() {
	local f text
	f=$(find "vendor/$1" -maxdepth 1 -type f \( -iname 'LICENSE*' -o -iname 'LICENCE*' -o -iname 'COPYING*' \) | sort | head -1)
	[ -n "$f" ] || { echo "no licence file"; return; }
	text=$(tr -s '[:space:]' ' ' <"$f")
	case $text in
	*"Apache License"*"Version 2.0"*) echo "Apache-2.0" ;;
	*"Mozilla Public License"*"2.0"*) echo "MPL-2.0" ;;
	*"Permission is hereby granted, free of charge"*) echo "MIT" ;;
	*"Permission to use, copy, modify, and/or distribute"*) echo "ISC" ;;
	*"Redistribution and use in source and binary forms"*"Neither the name"*) echo "BSD-3-Clause" ;;
	*"Redistribution and use in source and binary forms"*) echo "BSD-2-Clause" ;;
	*) echo "unidentified: read $f" ;;
	esac
}
printf '%-48s %-36s %-14s %8s\n' MODULE VERSION LICENCE GO-LINES
total=0
while read -r hash mod version _; do
	[ "$hash" = "#" ] && [ -n "${version:-}" ] || continue
	[ -d "vendor/$mod" ] || continue
	lines=$(find "vendor/$mod" -name '*.go' -print0 | xargs -0 cat | wc -l)
	total=$((total + lines))
	printf '%-48s %-36s %-14s %8d\n' "$mod" "$version" "$(licence "$mod")" "$lines"
done <vendor/modules.txt
own=$(git ls-files '*.go' | grep -v '^vendor/' | tr '\n' '\0' | xargs -0 cat | wc -l)
printf '%d Go lines of third-party code; choir itself: %d\n' "$total" "$own"

say "a second build in a fresh clone of the same commit"
git clone --quiet --no-hardlinks "$root" "$work/tree"
(cd "$work/tree" && git checkout --quiet "$(git -C "$root" rev-parse HEAD)")
if [ -n "$(git status --porcelain --untracked-files=no)" ]; then
	echo "note: the checkout has uncommitted changes; the clone builds the commit, so the binaries may differ" >&2
fi
build "$work/tree" "$work/two"
fail=0
for b in choird choirctl choir-agent; do
	a=$(sha256sum <"$work/one/$b" | cut -d' ' -f1)
	c=$(sha256sum <"$work/two/$b" | cut -d' ' -f1)
	if [ "$a" = "$c" ]; then
		printf '%-12s %s identical\n' "$b" "$a"
	else
		printf '%-12s %s (here) != %s (fresh clone)\n' "$b" "$a" "$c"
		fail=1
	fi
done
[ "$fail" = 0 ] || { echo "the builds differ" >&2; exit 1; }
say "audit passed"
