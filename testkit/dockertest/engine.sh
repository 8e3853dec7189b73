#!/bin/sh
# engine.sh runs ONE private Docker engine shared by every test package of a
# `make test` run, so that parallel test binaries do not each start a dockerd
# (they would fight over the docker0 bridge and hand out the same addresses).
#
#   engine.sh start DIR   start dockerd under DIR (installing docker.io,
#                         busybox-static and curl with apt-get when missing),
#                         wait until it answers /_ping and print
#                         DOCKER_HOST=unix://DIR/docker.sock on stdout
#   engine.sh env DIR     print that line if the engine under DIR answers
#   engine.sh stop DIR    stop it, unmount what it left under DIR and remove
#                         DIR; safe when nothing runs
#
# Keep DIR short (e.g. /tmp/choir-engine): unix socket paths are limited to
# 108 bytes. CHOIR_DOCKERD_FLAGS, when set, is added to dockerd's flags (the
# Swarm harness, testkit/swarmtest/swarm.sh, gives its engines their own
# bridge and address pools that way). Progress and errors go to stderr; only the DOCKER_HOST line goes
# to stdout, so a shell can do
#   export $(testkit/dockertest/engine.sh start /tmp/choir-engine)
set -eu

prog=engine.sh
marker=.choir-engine

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
sock=$dir/docker.sock
pidfile=$dir/dockerd.pid
log=$dir/dockerd.log

# ping answers 0 when the engine under $dir says OK to GET /_ping.
ping() {
	[ -S "$sock" ] || return 1
	out=$(curl -fsS --max-time 2 --unix-socket "$sock" http://docker/_ping 2>/dev/null) || return 1
	[ "$out" = OK ]
}

# ourpid prints the pid in $pidfile when that process is a dockerd.
ourpid() {
	[ -f "$pidfile" ] || return 1
	pid=$(cat "$pidfile" 2>/dev/null) || return 1
	case $pid in '' | *[!0-9]*) return 1 ;; esac
	[ "$(cat /proc/"$pid"/comm 2>/dev/null)" = dockerd ] || return 1
	echo "$pid"
}

# alive answers 0 while process $1 exists and is not a zombie.
alive() {
	[ -r /proc/"$1"/stat ] || return 1
	state=$(sed 's/^.*) //' /proc/"$1"/stat 2>/dev/null | cut -c1)
	[ -n "$state" ] && [ "$state" != Z ]
}

# waitgone waits up to $2 seconds for process $1 to exit.
waitgone() {
	i=0
	while alive "$1"; do
		[ "$i" -lt $(($2 * 10)) ] || return 1
		sleep 0.1
		i=$((i + 1))
	done
}

# stray prints pids of containerd processes (the daemon and its shims) whose
# command line names $dir/exec/: children a killed dockerd left behind.
stray() {
	for p in /proc/[0-9]*; do
		case $(cat "$p/comm" 2>/dev/null) in containerd*) ;; *) continue ;; esac
		if tr '\0' ' ' <"$p/cmdline" 2>/dev/null | grep -q -F -- "$dir/exec/"; then
			echo "${p#/proc/}"
		fi
	done
}

# children prints the pids whose parent is $1.
children() {
	for st in /proc/[0-9]*/stat; do
		ppid=$(sed 's/^.*) //' "$st" 2>/dev/null | cut -d' ' -f2)
		[ "$ppid" = "$1" ] || continue
		st=${st#/proc/}
		echo "${st%/stat}"
	done
}

# unmountall detaches every mount point under $dir, deepest first.
unmountall() {
	awk -v d="$dir/" 'index($5, d) == 1 { print $5 }' /proc/self/mountinfo |
		sort -r | while read -r m; do
		umount -l "$m" 2>/dev/null || say "could not unmount $m"
	done
}

# otherdockerd answers 0 when a dockerd other than ours is running.
otherdockerd() {
	mine=$(ourpid || true)
	for c in /proc/[0-9]*/comm; do
		[ "$(cat "$c" 2>/dev/null)" = dockerd ] || continue
		p=${c#/proc/}
		p=${p%/comm}
		[ "$p" = "$mine" ] || ! alive "$p" || return 0
	done
	return 1
}

stop() {
	if pid=$(ourpid); then
		say "stopping dockerd (pid $pid)"
		kill -TERM "$pid" 2>/dev/null || true
		if ! waitgone "$pid" 30; then
			say "dockerd did not stop within 30 s; killing it"
			kill -KILL "$pid" 2>/dev/null || true
			waitgone "$pid" 10 || die "dockerd (pid $pid) survived SIGKILL"
		fi
	fi
	# After a SIGKILLed dockerd, its shims and the containers under them
	# live on: kill each container's first process (which ends its PID
	# namespace), then the shim, then containerd.
	for p in $(stray); do
		cid=$(tr '\0' '\n' <"/proc/$p/cmdline" 2>/dev/null | awk 'prev == "-id" { print; exit } { prev = $0 }')
		case $cid in *[!0-9a-f]*) cid= ;; esac
		for c in $(children "$p"); do
			say "killing leftover container process $c ($(cat /proc/"$c"/comm 2>/dev/null))"
			kill -KILL "$c" 2>/dev/null || true
			waitgone "$c" 10 || true
		done
		say "killing leftover process $p ($(cat /proc/"$p"/comm 2>/dev/null))"
		kill -KILL "$p" 2>/dev/null || true
		waitgone "$p" 10 || true
		# The killed container's cgroups are left empty: remove them.
		if [ -n "$cid" ]; then
			for cg in /sys/fs/cgroup/*/docker/"$cid" /sys/fs/cgroup/docker/"$cid"; do
				[ -d "$cg" ] && rmdir "$cg" 2>/dev/null || true
			done
		fi
	done
	unmountall
	if [ -d "$dir" ]; then
		if [ -f "$dir/$marker" ]; then
			rm -rf "$dir"
		else
			say "not removing $dir: it has no $marker file, so engine.sh did not make it"
		fi
	fi
}

# staticbusybox answers 0 when /bin/busybox is the static one that test
# images are built from (package busybox-static, not busybox).
staticbusybox() {
	[ -x /bin/busybox ] || return 1
	if command -v dpkg-query >/dev/null 2>&1; then
		dpkg-query -W -f='${Status}' busybox-static 2>/dev/null | grep -q 'ok installed'
	fi
}

install() {
	need=
	command -v dockerd >/dev/null 2>&1 || need="$need docker.io"
	command -v curl >/dev/null 2>&1 || need="$need curl"
	staticbusybox || need="$need busybox-static"
	[ -n "$need" ] || return 0
	[ "$(id -u)" = 0 ] || die "missing$need and not root: apt-get install -y --no-install-recommends$need"
	command -v apt-get >/dev/null 2>&1 || die "missing$need and there is no apt-get"
	say "installing$need"
	# shellcheck disable=SC2086 # $need is a list of package names
	if ! DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $need >&2; then
		apt-get update >&2 || true
		DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $need >&2 ||
			die "apt-get install$need failed"
	fi
}

start() {
	PATH=$PATH:/usr/sbin:/sbin
	install
	[ "$(id -u)" = 0 ] || die "starting dockerd needs root"
	if ping; then
		echo "DOCKER_HOST=unix://$sock"
		return 0
	fi
	# Leftovers of an earlier run under $dir: a hung dockerd, its children,
	# mounts, a stale pid file or socket.
	if [ -e "$dir" ]; then
		[ -f "$dir/$marker" ] || [ -z "$(ls -A "$dir")" ] ||
			die "$dir exists and was not made by $prog; choose another DIR"
		stop
	fi
	# A docker0 bridge left by a dockerd that is gone: let ours create it anew.
	if ip link show docker0 >/dev/null 2>&1 && ! otherdockerd; then
		say "deleting stale docker0 bridge"
		ip link delete docker0 2>/dev/null || true
	fi
	mkdir -p "$dir/data" "$dir/exec"
	: >"$dir/$marker"
	say "starting dockerd under $dir (log: $log)"
	# shellcheck disable=SC2086 # CHOIR_DOCKERD_FLAGS is a list of flags
	setsid dockerd --iptables=false --ip6tables=false --storage-driver=overlay2 \
		--data-root="$dir/data" --exec-root="$dir/exec" --pidfile="$pidfile" \
		-H "unix://$sock" ${CHOIR_DOCKERD_FLAGS:-} </dev/null >"$log" 2>&1 &
	pid=$!
	i=0
	until ping; do
		if ! alive "$pid"; then
			tail -n 20 "$log" >&2 || true
			die "dockerd exited during startup; see $log"
		fi
		if [ "$i" -ge 300 ]; then
			tail -n 20 "$log" >&2 || true
			die "dockerd did not answer /_ping on $sock within 30 s; see $log"
		fi
		sleep 0.1
		i=$((i + 1))
	done
	say "dockerd ready (pid $pid)"
	echo "DOCKER_HOST=unix://$sock"
}

case $cmd in
start) start ;;
stop) stop ;;
env)
	ping || die "no engine answers on $sock"
	echo "DOCKER_HOST=unix://$sock"
	;;
*) usage ;;
esac
