#!/bin/bash
# down.sh STATE_DIR: stop the single-node Slurm cluster that up.sh started
# with the same STATE_DIR: cancel its jobs, then stop slurmd, slurmctld and
# (when up.sh started it) munged, each by the PID it recorded. Daemons that
# run with this STATE_DIR's slurm.conf but lost their PID file are found by
# their command line. Stopping a cluster that is not running is not an error.
# The state directory and its logs are kept.
set -uo pipefail

[ $# -eq 1 ] || { echo "usage: down.sh STATE_DIR" >&2; exit 2; }
[ -d "$1" ] || exit 0
STATE=$(cd "$1" && pwd)
CONF=$STATE/slurm.conf
export PATH=$PATH:/usr/sbin:/sbin

# stop PID NAME: send SIGTERM to PID if it is a NAME process, wait up to
# 10 s for it to exit, then SIGKILL it.
stop() {
	local pid=$1 name=$2
	[ -r "/proc/$pid/comm" ] && [ "$(cat "/proc/$pid/comm")" = "$name" ] || return 0
	kill -TERM "$pid" 2>/dev/null || return 0
	for _ in $(seq 100); do
		[ -e "/proc/$pid" ] || { echo "down.sh: stopped $name ($pid)"; return 0; }
		sleep 0.1
	done
	kill -KILL "$pid" 2>/dev/null
	echo "down.sh: killed $name ($pid)"
}

if [ -f "$CONF" ] && command -v squeue >/dev/null 2>&1; then
	jobs=$(SLURM_CONF=$CONF timeout 5 squeue -h -o %i 2>/dev/null)
	if [ -n "$jobs" ]; then
		# shellcheck disable=SC2086 # one argument per job id
		SLURM_CONF=$CONF timeout 5 scancel $jobs 2>/dev/null
		sleep 1
	fi
fi

for name in slurmd slurmctld; do
	pids=""
	[ -s "$STATE/$name.pid" ] && pids=$(cat "$STATE/$name.pid")
	# Daemons of this cluster whose PID file is gone.
	pids="$pids $(pgrep -x "$name" 2>/dev/null | while read -r p; do
		tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null | grep -qF -- "-f $CONF " && echo "$p"
	done)"
	for pid in $pids; do
		stop "$pid" "$name"
	done
	rm -f "$STATE/$name.pid"
done

if [ -s "$STATE/munged.pid" ]; then
	stop "$(cat "$STATE/munged.pid")" munged
	rm -f "$STATE/munged.pid"
fi
exit 0
