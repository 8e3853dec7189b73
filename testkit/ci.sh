#!/usr/bin/env bash
# make test: install what the tests need on a fresh machine of this kind,
# start the shared Docker engine, then run
# every test with CHOIR_TEST_STRICT=1 so that a test missing a backend fails
# instead of skipping, and finish with short fuzzing runs.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
work=${CHOIR_TEST_WORK:-/tmp/choir-ci}
# Fuzzing runs a count of executions, not a duration: Go 1.26's fuzzer can
# fail a timed run with "context deadline exceeded" and no failing input
# (go.dev/issue/75804), which would fail make test at random.
fuzztime=${CHOIR_FUZZTIME:-50000x}

say() { printf '\n== %s\n' "$*"; }

# Debian packages the suite uses: git for repos, docker.io and busybox-static
# for the engine and test images, curl for the engine script, ripgrep for
# choir.fs.search, nodejs/npm for PGlite, systemd for `systemd-analyze
# verify` of choird.service (already in this machine kind's image: listed so
# a machine without it fails to install rather than skips); chromium for
# the browser worker; Dovecot and aiosmtpd, real IMAP and SMTP servers the
# email tests start; openssh for git over SSH; openssl for test certificates;
# prometheus for `promtool check metrics` of choird's /metrics (its server
# is stopped and disabled below: nothing of it may listen); docker-registry
# (Distribution) for the Swarm tests' registry (its system service is
# disabled below: the harness runs its own on a free port); postgresql-15
# and its server headers with make and gcc, for the native Postgres of
# testkit/pgnative (two choird replicas, advisory locks) with pgvector
# compiled below (its cluster service is stopped: the harness starts its
# own).
packages="git docker.io busybox-static curl ripgrep ca-certificates debootstrap systemd
  chromium dovecot-imapd dovecot-lmtpd python3-aiosmtpd openssh-server openssh-client openssl
  prometheus docker-registry postgresql-15 postgresql-server-dev-15 make gcc libc6-dev"
missing=""
for p in $packages; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing="$missing $p"
done
command -v node >/dev/null && command -v npm >/dev/null || missing="$missing nodejs npm"
if [ -n "$missing" ]; then
  say "installing:$missing"
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y --no-install-recommends $missing || { apt-get update && apt-get install -y --no-install-recommends $missing; }
  case " $missing " in *" prometheus "*)
    systemctl disable --now prometheus >/dev/null 2>&1 || /etc/init.d/prometheus stop >/dev/null 2>&1 || true ;;
  esac
  case " $missing " in *" docker-registry "*)
    systemctl disable --now docker-registry >/dev/null 2>&1 || true ;;
  esac
  case " $missing " in *" postgresql-15 "*)
    systemctl disable --now postgresql >/dev/null 2>&1 || pg_ctlcluster 15 main stop >/dev/null 2>&1 || true ;;
  esac
fi

# pgvector for the native Postgres (Debian has no package): its C source
# as the Go module proxy serves it (nothing else is downloaded), built
# against postgresql-server-dev-15 and installed once.
pgconfig=/usr/lib/postgresql/15/bin/pg_config
pgvector=v0.8.0
if [ ! -f "$($pgconfig --sharedir)/extension/vector--0.8.0.sql" ]; then
  say "building pgvector $pgvector from the Go module proxy's source"
  src=$(GOFLAGS=-mod=mod go mod download -json "github.com/pgvector/pgvector@$pgvector" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
  build=$(mktemp -d)
  cp -r "$src"/. "$build" && chmod -R u+w "$build"
  make -C "$build" PG_CONFIG=$pgconfig >/dev/null
  make -C "$build" PG_CONFIG=$pgconfig install >/dev/null
  rm -rf "$build"
fi

if [ -f testkit/pgtest/package-lock.json ]; then
  if [ ! -d testkit/pgtest/node_modules ] || [ testkit/pgtest/package-lock.json -nt testkit/pgtest/node_modules ]; then
    say "installing PGlite (npm ci)"
    npm ci --prefix testkit/pgtest --no-audit --no-fund
  fi
fi

# The Playwright driver for choird's browser worker: playwright-core 1.52.0,
# the version playwright-go v0.5200.1 speaks (never a browser download:
# the tests use Debian's chromium).
if [ ! -d testkit/browsertest/node_modules ] || [ testkit/browsertest/package-lock.json -nt testkit/browsertest/node_modules ]; then
  say "installing the Playwright driver (npm ci)"
  npm ci --prefix testkit/browsertest --no-audit --no-fund
fi

# The official MCP conformance suite and the reference server-everything
# (both pinned) and npm's Node 24 binary (the suite cannot load on Debian's
# Node 20), for internal/mcp's client scenarios and the MCP tests, whose
# agent image bakes server-everything and this Node in.
if [ ! -d testkit/mcptest/node_modules ] || [ testkit/mcptest/package-lock.json -nt testkit/mcptest/node_modules ]; then
  say "installing the MCP conformance suite and server-everything (npm ci)"
  npm ci --prefix testkit/mcptest --no-audit --no-fund
fi

mkdir -p "$work"
stop_all() {
  testkit/dockertest/engine.sh stop "$work/engine" >/dev/null 2>&1 || true
}
trap stop_all EXIT

say "starting the test Docker engine"
export "$(testkit/dockertest/engine.sh start "$work/engine")"
echo "DOCKER_HOST=$DOCKER_HOST"

# No shared PGlite: each test binary that needs Postgres starts its own
# private one (pgtest), so packages running at once never queue for one
# server's single connection (a choird waiting there misses its heartbeat
# deadlines). CHOIR_TEST_DATABASE_URL, when set, is used by all instead.

say "gofmt and go vet"
# vendor/ is third-party code as published, not choir's to format.
out=$(gofmt -l $(find . -path ./vendor -prune -o -name '*.go' -print))
if [ -n "$out" ]; then echo "gofmt would change:"; echo "$out"; exit 1; fi
go vet ./...
# the Swarm tests are built only with their tag (below)
go vet -tags swarm ./internal/docker/ ./testkit/swarmtest/ ./choird/swarm/ ./choirctl/

say "go test -race (strict: missing backends fail)"
# choirctl's end-to-end tests run one real agent after another and take
# longer than go test's default 10 minutes per package under -race.
CHOIR_TEST_STRICT=1 go test -race -count=1 -timeout 45m ./...

say "Swarm: a two-node swarm and a registry (testkit/swarmtest, issue 26)"
# Engines in a swarm beside a plain engine broke that engine's bridge here
# (FACTS.md), so the main engine stops first; the swarm-tagged tests need
# only the swarm.
stop_all
unset DOCKER_HOST
swarmdir=$work/swarm
stop_swarm() {
  testkit/swarmtest/swarm.sh stop "$swarmdir" >/dev/null 2>&1 || true
}
trap 'stop_swarm; stop_all' EXIT
swarmenv=$(testkit/swarmtest/swarm.sh start "$swarmdir")
for kv in $swarmenv; do export "$kv"; done
echo "$swarmenv"
CHOIR_TEST_STRICT=1 go test -race -count=1 -timeout 10m -tags swarm -run '^TestSwarm' ./internal/docker/ ./choird/swarm/ ./choirctl/
stop_swarm
trap stop_all EXIT

say "fuzzing ($fuzztime each)"
for target in \
  "./internal/config FuzzParse" \
  "./internal/config FuzzParseConfig" \
  "./internal/config FuzzParseSecrets" \
  "./internal/jsonlimit FuzzCheck" \
  "./internal/rpc FuzzDecodeRequest" \
  "./internal/rpc FuzzDecodeStrict" \
  "./internal/rpc FuzzEventStream" \
  "./internal/jsonschema FuzzValidate" \
  "./internal/jsonschema FuzzDecimal" \
  "./agent/skill FuzzParseSpec" \
  "./agent/tool FuzzParseManifest" \
  "./agent/tool FuzzParseResult" \
  "./internal/chain FuzzCanonical" \
  "./internal/telegram FuzzGetUpdates" \
  "./internal/openai FuzzChatAnswer" \
  "./internal/docker FuzzDemux" \
  "./internal/mcp FuzzSSE" \
  "./internal/mcp FuzzReceive" \
  "./internal/cron FuzzParse" \
  "./internal/netpolicy FuzzCheck" \
  "./choird/headless FuzzProject" \
  "./choird/headless FuzzProjectRules" \
  "./choird/headless FuzzParseDocTiers" \
  "./choird/headless FuzzNoteCheck" \
  "./agent/tool/email FuzzParseBody" \
  "./internal/smtp FuzzMessage" \
  "./internal/notion FuzzParseID" \
  "./internal/notion FuzzRender" \
  "./internal/brave FuzzParseError" \
  "./internal/elevenlabs FuzzParseError"; do
  set -- $target
  # a pattern that matches no target would pass without fuzzing anything
  go test -list="^$2\$" "$1" | grep -x "$2" >/dev/null || { echo "ci.sh: no fuzz target $2 in $1" >&2; exit 1; }
  go test -run='^$' -fuzz="^$2\$" -fuzztime="$fuzztime" -fuzzminimizetime=1s "$1"
done

say "all tests passed"
