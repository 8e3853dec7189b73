#!/bin/sh
# swarm.sh runs a two-node Docker Swarm and a registry on this one machine,
# for the tests of choir's Swarm runtime (issue 26):
#
#   swarm.sh start DIR   start two engines under DIR/m and DIR/w (through
#                        testkit/dockertest/engine.sh, which installs
#                        docker.io when missing), make the first the manager
#                        of a new swarm (advertising 127.0.0.1) and join the
#                        second as a worker (127.0.0.2), label the nodes
#                        choir.node=manager and choir.node=worker, start
#                        Debian's docker-registry (installed when missing)
#                        on a free 127.0.0.1 port with its storage under DIR,
#                        and print on stdout
#                          CHOIR_TEST_SWARM_MANAGER=unix://DIR/m/docker.sock
#                          CHOIR_TEST_SWARM_WORKER=unix://DIR/w/docker.sock
#                          CHOIR_TEST_SWARM_REGISTRY=127.0.0.1:PORT
#   swarm.sh env DIR     print those lines if the swarm under DIR answers
#   swarm.sh stop DIR    remove the services, leave the swarm, stop both
#                        engines and the registry, unmount what they left,
#                        delete the interfaces they made and remove DIR;
#                        safe when nothing runs
#
# so that a shell can do `export $(testkit/swarmtest/swarm.sh start DIR)`.
# Keep DIR short (unix socket paths are limited to 108 bytes).
#
# What this machine taught (see FACTS.md, "Docker Swarm and a registry on
# one machine"):
#   - An engine started with --bridge=none deletes the host's docker0 (moby's
#     removeDefaultBridgeInterface), breaking a plain engine that runs beside
#     it. So each swarm engine gets a bridge of its own (chsw-m, chsw-w, made
#     here, addresses in 10.213.0.0/16) instead, and docker0 is never touched.
#   - Swarm makes docker_gwbridge, which outlives the engines and would take
#     172.17.0.0/16 if it were free: the engines get their own
#     --default-address-pool, and stop deletes docker_gwbridge (unless it was
#     there before start).
#   - The swarm ports (2377, 7946, 4789) are the machine's: one harness at a
#     time. start waits for the lock /tmp/choir-swarmtest.lock, which the
#     engines and the registry hold (an inherited descriptor) until they stop.
set -eu

prog=swarm.sh
marker=.choir-swarm
lock=/tmp/choir-swarmtest.lock
here=$(cd "$(dirname "$0")" && pwd)
engine=$here/../dockertest/engine.sh

die() { echo "$prog: $*" >&2; exit 1; }
say() { echo "$prog: $*" >&2; }
usage() { echo "usage: $prog start|stop|env DIR" >&2; exit 2; }

[ $# -eq 2 ] || usage
cmd=$1
dir=$2
case $dir in
/*) ;;
*) dir=$(pwd)/$dir ;;
esac
dir=${dir%/}
[ -n "$dir" ] && [ "$dir" != / ] || die "refusing DIR '/'"
PATH=$PATH:/usr/sbin:/sbin

msock=$dir/m/docker.sock
wsock=$dir/w/docker.sock
reg=$dir/registry

# dk runs the docker CLI against the engine whose socket is $1.
dk() {
	s=$1
	shift
	docker -H "unix://$s" "$@"
}

# registryaddr prints 127.0.0.1:PORT of the running registry.
registryaddr() {
	[ -f "$reg/addr" ] || return 1
	cat "$reg/addr"
}

# registryup answers 0 when the registry answers GET /v2/.
registryup() {
	a=$(registryaddr) || return 1
	curl -fsS --max-time 2 "http://$a/v2/" >/dev/null 2>&1
}

# nodeid prints the swarm node id of the engine whose socket is $1.
nodeid() { dk "$1" info -f '{{.Swarm.NodeID}}' 2>/dev/null; }

envlines() {
	echo "CHOIR_TEST_SWARM_MANAGER=unix://$msock"
	echo "CHOIR_TEST_SWARM_WORKER=unix://$wsock"
	echo "CHOIR_TEST_SWARM_REGISTRY=$(registryaddr)"
}

# up answers 0 when both engines are in the swarm and the registry answers.
up() {
	[ -S "$msock" ] && [ -S "$wsock" ] || return 1
	[ "$(dk "$msock" info -f '{{.Swarm.LocalNodeState}} {{.Swarm.ControlAvailable}}' 2>/dev/null)" = "active true" ] || return 1
	[ "$(dk "$wsock" info -f '{{.Swarm.LocalNodeState}}' 2>/dev/null)" = active ] || return 1
	registryup
}

# pidof_file prints the pid in file $1 when that process runs command $2.
pidof_file() {
	[ -f "$1" ] || return 1
	p=$(cat "$1" 2>/dev/null) || return 1
	case $p in '' | *[!0-9]*) return 1 ;; esac
	[ "$(cat /proc/"$p"/comm 2>/dev/null)" = "$2" ] || return 1
	echo "$p"
}

# waitfor runs "$@" every 0.1 s until it succeeds, for at most $secs seconds.
waitfor() {
	i=0
	until "$@"; do
		[ "$i" -lt $((secs * 10)) ] || return 1
		sleep 0.1
		i=$((i + 1))
	done
}

# gone answers 0 when process $1 has exited (absent, or a zombie not yet
# reaped by init).
gone() {
	[ -r /proc/"$1"/stat ] || return 0
	[ "$(sed 's/^.*) //' /proc/"$1"/stat 2>/dev/null | cut -c1)" = Z ]
}

install() {
	command -v docker-registry >/dev/null 2>&1 && command -v docker >/dev/null 2>&1 && return 0
	[ "$(id -u)" = 0 ] || die "missing docker-registry and not root: apt-get install -y --no-install-recommends docker-registry"
	say "installing docker-registry"
	if ! DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends docker-registry docker.io >&2; then
		apt-get update >&2 || true
		DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends docker-registry docker.io >&2 ||
			die "apt-get install docker-registry failed"
	fi
	# Debian's package enables a system registry on :5000; this one is ours.
	systemctl disable --now docker-registry >/dev/null 2>&1 || true
}

# bridge makes the Linux bridge $1 with address $2 unless it exists.
bridge() {
	ip link show "$1" >/dev/null 2>&1 && return 0
	ip link add "$1" type bridge
	ip addr add "$2" dev "$1"
	ip link set "$1" up
}

# freeport prints a TCP port on 127.0.0.1 that nothing listens on.
freeport() {
	for p in $(seq 5000 5999); do
		ss -Htln "sport = :$p" 2>/dev/null | grep -q . || { echo "$p"; return 0; }
	done
	return 1
}

startregistry() {
	mkdir -p "$reg/data"
	port=$(freeport) || die "no free port for the registry"
	cat >"$reg/config.yml" <<EOF
version: 0.1
log:
  level: warn
storage:
  filesystem:
    rootdirectory: $reg/data
  delete:
    enabled: true
http:
  addr: 127.0.0.1:$port
EOF
	echo "127.0.0.1:$port" >"$reg/addr"
	setsid docker-registry serve "$reg/config.yml" </dev/null >"$reg/registry.log" 2>&1 &
	echo $! >"$reg/registry.pid"
	secs=15
	waitfor registryup || { tail -n 20 "$reg/registry.log" >&2; die "docker-registry did not answer on 127.0.0.1:$port; see $reg/registry.log"; }
}

start() {
	[ "$(id -u)" = 0 ] || die "starting the swarm engines needs root"
	install
	if up; then
		envlines
		return 0
	fi
	if [ -e "$dir" ]; then
		[ -f "$dir/$marker" ] || [ -z "$(ls -A "$dir")" ] ||
			die "$dir exists and was not made by $prog; choose another DIR"
		stop
	fi
	# One harness at a time on this machine (the swarm ports are global).
	exec 9>"$lock"
	if ! flock -n 9; then
		say "waiting for another swarm harness to stop (lock $lock)"
		flock -w 600 9 || die "another swarm harness held $lock for 10 minutes"
	fi
	mkdir -p "$dir"
	: >"$dir/$marker"
	ip link show docker_gwbridge >/dev/null 2>&1 && : >"$dir/gwbridge.before"
	trap 'say "start failed; cleaning up"; stop' EXIT

	bridge chsw-m 10.213.1.1/24
	bridge chsw-w 10.213.2.1/24
	CHOIR_DOCKERD_FLAGS="--bridge=chsw-m --default-address-pool base=10.214.0.0/16,size=24" \
		sh "$engine" start "$dir/m" >/dev/null
	CHOIR_DOCKERD_FLAGS="--bridge=chsw-w --default-address-pool base=10.215.0.0/16,size=24" \
		sh "$engine" start "$dir/w" >/dev/null

	say "swarm init on 127.0.0.1"
	dk "$msock" swarm init --advertise-addr 127.0.0.1 --listen-addr 127.0.0.1:2377 \
		--default-addr-pool 10.216.0.0/16 >/dev/null
	token=$(dk "$msock" swarm join-token -q worker)
	say "swarm join from 127.0.0.2"
	dk "$wsock" swarm join --token "$token" --advertise-addr 127.0.0.2 \
		--listen-addr 127.0.0.2:2377 --data-path-addr 127.0.0.2 127.0.0.1:2377 >/dev/null
	mid=$(nodeid "$msock")
	wid=$(nodeid "$wsock")
	[ -n "$mid" ] && [ -n "$wid" ] && [ "$mid" != "$wid" ] || die "node ids: manager '$mid', worker '$wid'"
	secs=30
	workerready() { [ "$(dk "$msock" node inspect -f '{{.Status.State}}' "$wid" 2>/dev/null)" = ready ]; }
	waitfor workerready || die "the worker node $wid is not ready after 30 s"
	dk "$msock" node update --label-add choir.node=manager "$mid" >/dev/null
	dk "$msock" node update --label-add choir.node=worker "$wid" >/dev/null

	startregistry
	trap - EXIT
	say "swarm ready: manager $mid, worker $wid, registry $(registryaddr)"
	envlines
}

stop() {
	# The interfaces are the machine's. Delete them only for a DIR this
	# script made, and only while this harness owns the machine: its engines
	# still hold the lock, or nobody does (then this stop holds it until it
	# ends). Another harness may have started after ours died.
	owner=
	if [ -f "$dir/$marker" ]; then
		exec 9>"$lock"
		if flock -n 9 || pidof_file "$dir/m/dockerd.pid" dockerd >/dev/null ||
			pidof_file "$dir/w/dockerd.pid" dockerd >/dev/null; then
			owner=yes
		fi
	fi
	if [ -S "$msock" ] && dk "$msock" info >/dev/null 2>&1; then
		svcs=$(dk "$msock" service ls -q 2>/dev/null || true)
		# shellcheck disable=SC2086 # a list of ids
		[ -z "$svcs" ] || dk "$msock" service rm $svcs >/dev/null 2>&1 || true
	fi
	# Both at once: the first node to leave (or to stop while in the swarm)
	# takes about 6 s here, whichever it is; together they take that once.
	for s in "$wsock" "$msock"; do
		[ ! -S "$s" ] || dk "$s" swarm leave --force >/dev/null 2>&1 &
	done
	wait
	# Before the engines stop: once they are gone, the lock they hold is
	# free and the next harness may make its own chsw-m.
	if [ -n "$owner" ]; then
		for l in chsw-m chsw-w; do
			ip link delete "$l" 2>/dev/null || true
		done
		[ -f "$dir/gwbridge.before" ] || ip link delete docker_gwbridge 2>/dev/null || true
	fi
	for e in "$dir/w" "$dir/m"; do
		[ ! -d "$e" ] || sh "$engine" stop "$e" &
	done
	wait
	if p=$(pidof_file "$reg/registry.pid" docker-registry); then
		kill -TERM "$p" 2>/dev/null || true
		secs=10
		waitfor gone "$p" || kill -KILL "$p" 2>/dev/null || true
	fi
	# What the engines mounted under DIR (engine.sh unmounts its own dirs).
	awk -v d="$dir/" 'index($5, d) == 1 { print $5 }' /proc/self/mountinfo |
		sort -r | while read -r m; do umount -l "$m" 2>/dev/null || say "could not unmount $m"; done
	if [ -d "$dir" ]; then
		if [ -f "$dir/$marker" ]; then
			rm -rf "$dir"
		else
			say "not removing $dir: it has no $marker file, so $prog did not make it"
		fi
	fi
}

case $cmd in
start) start ;;
stop) stop ;;
env)
	up || die "no swarm answers under $dir"
	envlines
	;;
*) usage ;;
esac
