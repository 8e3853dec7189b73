#!/usr/bin/env bash
# make demo: the main job on embedded defaults. At this stage of choir it
# creates a throwaway home, finds or starts a Docker engine and a Postgres
# with pgvector (CHOIR_DATABASE_URL, else an embedded PGlite), starts choird,
# shows `choirctl status` and `choirctl agent list`, and stops everything it
# started. Set CHOIR_DEMO_HOME to keep the home somewhere you choose.
set -euo pipefail
cd "$(dirname "$0")/.."

home="${CHOIR_DEMO_HOME:-}"
throwaway=""
if [ -z "$home" ]; then
  throwaway="$(mktemp -d /tmp/choir-demo.XXXXXX)"
  home="$throwaway/.choir.d"
fi
pid=""
work=$(mktemp -d /tmp/choir-demo-run.XXXXXX)
started_engine=""
started_pg=""
cleanup() {
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then kill -TERM "$pid"; wait "$pid" || true; fi
  if [ -n "$started_pg" ]; then testkit/pgtest/pglite.sh stop "$work/pg" >/dev/null 2>&1 || true; fi
  if [ -n "$started_engine" ]; then testkit/dockertest/engine.sh stop "$work/engine" >/dev/null 2>&1 || true; fi
  rm -rf "$work"
  if [ -n "$throwaway" ]; then rm -rf "$throwaway"; fi
}
trap cleanup EXIT

# A Docker engine: the one DOCKER_HOST or /var/run/docker.sock names, else our own.
if [ -z "${DOCKER_HOST:-}" ] && ! curl -fsS --max-time 2 --unix-socket /var/run/docker.sock http://docker/_ping >/dev/null 2>&1; then
  echo "== starting a private Docker engine"
  export "$(testkit/dockertest/engine.sh start "$work/engine")"
  started_engine=1
fi

# Postgres with pgvector: CHOIR_DATABASE_URL, else the embedded PGlite.
db="${CHOIR_DATABASE_URL:-}"
if [ -z "$db" ]; then
  echo "== starting PGlite (Postgres 17 + pgvector)"
  line=$(testkit/pgtest/pglite.sh start "$work/pg")
  db=${line#*=}
  started_pg=1
fi

ctl() { bin/choirctl --home "$home" "$@"; }

echo "== choirctl init ($home)"
if [ ! -f "$home/config.json" ]; then ctl init >/dev/null; fi
# Point the skeleton at the database: host, port and name in config.json,
# user:password in the postgres secret.
eval "$(python3 - "$db" "$home/config.json" <<'PY'
import json, sys, urllib.parse
u = urllib.parse.urlparse(sys.argv[1])
path = sys.argv[2]
cfg = json.load(open(path))
q = urllib.parse.parse_qs(u.query)
cfg["postgres"].update(host=u.hostname, port=u.port or 5432, database=u.path.lstrip("/") or "postgres",
                       sslmode=q.get("sslmode", ["prefer"])[0], pool_size=1)
json.dump(cfg, open(path, "w"), indent=2)
print("pguser=%s pgpass=%s" % (u.username or "postgres", u.password or ""))
PY
)"
printf '%s:%s' "$pguser" "$pgpass" | ctl secret set postgres >/dev/null

echo "== choird --check"
bin/choird --home "$home" --check

echo "== starting choird"
bin/choird --home "$home" 2>"$home/../choird.stderr" &
pid=$!
for _ in $(seq 1 300); do
  if ctl status >/dev/null 2>&1; then break; fi
  if ! kill -0 "$pid" 2>/dev/null; then cat "$home/../choird.stderr"; echo "choird exited early"; exit 1; fi
  sleep 0.1
done

echo "== choirctl status"
ctl status
echo "== choirctl agent list"
ctl agent list

echo "== stopping choird"
kill -TERM "$pid"
wait "$pid"
pid=""
echo "choird stopped cleanly."
