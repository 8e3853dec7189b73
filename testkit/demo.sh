#!/usr/bin/env bash
# make demo: the main job on embedded defaults. At this stage of choir it
# creates a throwaway home, starts choird, shows `choirctl status`, and stops
# choird cleanly. Set CHOIR_DEMO_HOME to keep the home somewhere you choose.
set -euo pipefail
cd "$(dirname "$0")/.."

home="${CHOIR_DEMO_HOME:-}"
throwaway=""
if [ -z "$home" ]; then
  throwaway="$(mktemp -d /tmp/choir-demo.XXXXXX)"
  home="$throwaway/.choir.d"
fi
pid=""
cleanup() {
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then kill -TERM "$pid"; wait "$pid" || true; fi
  if [ -n "$throwaway" ]; then rm -rf "$throwaway"; fi
}
trap cleanup EXIT

ctl() { bin/choirctl --home "$home" "$@"; }

echo "== choirctl init ($home)"
if [ ! -f "$home/config.json" ]; then ctl init >/dev/null; fi
# The skeleton expects Postgres credentials in a secret; choird does not
# connect to Postgres yet at this stage, so a placeholder satisfies it.
if ! ctl secret list | grep -qx postgres; then printf 'choir:demo' | ctl secret set postgres >/dev/null; fi

echo "== choird --check"
bin/choird --home "$home" --check

echo "== starting choird"
bin/choird --home "$home" 2>"$home/../choird.stderr" &
pid=$!
for _ in $(seq 1 100); do
  if ctl status >/dev/null 2>&1; then break; fi
  if ! kill -0 "$pid" 2>/dev/null; then cat "$home/../choird.stderr"; echo "choird exited early"; exit 1; fi
  sleep 0.1
done

echo "== choirctl status"
ctl status

echo "== stopping choird"
kill -TERM "$pid"
wait "$pid"
pid=""
echo "choird stopped cleanly."
