#!/bin/sh
# pglite.sh start|stop DIR: run one PGlite server (Postgres 17 + pgvector, in
# WebAssembly under node) for a whole test run, as make test does:
#
#   env=$(testkit/pgtest/pglite.sh start .cache/pglite) && export "$env"
#   CHOIR_TEST_STRICT=1 go test ./...
#   testkit/pgtest/pglite.sh stop .cache/pglite
#
# start installs the pinned npm packages if node_modules is missing, starts
# the server on a free loopback port with its pid, port, url and log in DIR,
# waits until it answers a Postgres startup (deadline PGLITE_START_TIMEOUT
# seconds, 120 by default), and prints one line on stdout:
#   CHOIR_TEST_DATABASE_URL=postgres://postgres:postgres@127.0.0.1:PORT/postgres?sslmode=disable
# If a server started from DIR still runs, start prints its line again.
# The server is pglite-socket's own script as npm ships it, with pgvector and
# one connection at a time (-e vector -m 1): the server users run, unpatched.
# Connections to it share one backend session and a connection that ends
# with a reset keeps its slot: pgtest's relay copes with that for tests.
# The database lives in memory unless PGLITE_PERSIST=1, which keeps it in
# DIR/data across runs (slower; tests use fresh namespaces either way).
# stop stops that server; it is safe when nothing runs.
set -eu

usage() { echo "usage: $0 start|stop DIR" >&2; exit 2; }
[ $# -eq 2 ] || usage
cmd=$1
dir=$2
here=$(cd "$(dirname "$0")" && pwd)
installed=node_modules/@electric-sql/pglite-socket/package.json
script=node_modules/@electric-sql/pglite-socket/dist/scripts/server.js

# is the server whose pid DIR holds still running? (and not a reused pid:
# the process is node running pglite-socket's server script, or, for the
# instant before its exec, the subshell of this script that starts it)
running() {
	[ -f "$dir/pid" ] || return 1
	pid=$(cat "$dir/pid")
	kill -0 "$pid" 2>/dev/null || return 1
	# (an empty or unreadable cmdline: a process in the middle of its exec)
	cmd=$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null) || return 0
	case "$cmd" in
	"" | *pglite-socket* | *pglite.sh*) return 0 ;;
	*) return 1 ;;
	esac
}

# answers DIR's port with a Postgres startup? (expects an 'R' message back)
answers() {
	port=$1
	node -e '
		const net = require("net");
		const s = net.connect(Number(process.argv[1]), "127.0.0.1");
		const done = (ok) => { s.destroy(); process.exit(ok ? 0 : 1); };
		s.setTimeout(5000, () => done(false));
		s.on("error", () => done(false));
		s.on("connect", () => {
			const p = Buffer.from("user\0postgres\0database\0postgres\0\0");
			const h = Buffer.alloc(8);
			h.writeInt32BE(8 + p.length, 0);
			h.writeInt32BE(196608, 4);
			s.write(Buffer.concat([h, p]));
		});
		s.once("data", (d) => done(d[0] === 0x52));
	' "$port"
}

stop() {
	if ! running; then
		rm -f "$dir/pid"
		return 0
	fi
	pid=$(cat "$dir/pid")
	kill -TERM "$pid" 2>/dev/null || true
	i=0
	while kill -0 "$pid" 2>/dev/null; do
		i=$((i + 1))
		if [ $i -gt 100 ]; then
			echo "pglite.sh: server $pid ignored SIGTERM for 10 s; killing it" >&2
			kill -KILL "$pid" 2>/dev/null || true
			break
		fi
		sleep 0.1
	done
	rm -f "$dir/pid" "$dir/url"
}

case $cmd in
start)
	mkdir -p "$dir"
	dir=$(cd "$dir" && pwd)
	if running && [ -f "$dir/url" ]; then
		echo "CHOIR_TEST_DATABASE_URL=$(cat "$dir/url")"
		exit 0
	fi
	stop
	command -v node >/dev/null || { echo "pglite.sh: node is not on PATH: install Node.js 20+" >&2; exit 1; }
	if [ ! -f "$here/$installed" ]; then
		echo "pglite.sh: installing PGlite (npm ci --prefix $here)" >&2
		npm ci --prefix "$here" --no-audit --no-fund >&2
	fi
	db=memory://
	if [ "${PGLITE_PERSIST:-0}" = 1 ]; then
		db=$dir/data
	fi
	rm -f "$dir/log"
	(cd "$here" && exec node "$script" --host=127.0.0.1 --port=0 "--db=$db" --extensions=vector --max-connections=1) >"$dir/log" 2>&1 </dev/null &
	echo $! >"$dir/pid"
	deadline=$(($(date +%s) + ${PGLITE_START_TIMEOUT:-120}))
	port=
	while :; do
		if ! running; then
			echo "pglite.sh: PGlite exited during start; its log ($dir/log):" >&2
			cat "$dir/log" >&2
			rm -f "$dir/pid"
			exit 1
		fi
		if [ -z "$port" ]; then
			port=$(sed -n 's/^PGLiteSocketServer listening on {"port":\([0-9]*\).*/\1/p' "$dir/log")
		fi
		if [ -n "$port" ] && answers "$port"; then
			break
		fi
		if [ "$(date +%s)" -ge "$deadline" ]; then
			echo "pglite.sh: PGlite did not answer a Postgres startup within ${PGLITE_START_TIMEOUT:-120} s; its log ($dir/log):" >&2
			cat "$dir/log" >&2
			stop
			exit 1
		fi
		sleep 0.2
	done
	url="postgres://postgres:postgres@127.0.0.1:$port/postgres?sslmode=disable"
	echo "$url" >"$dir/url"
	echo "CHOIR_TEST_DATABASE_URL=$url"
	;;
stop)
	[ -d "$dir" ] || exit 0
	stop
	;;
*)
	usage
	;;
esac
