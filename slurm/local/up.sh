#!/bin/bash
# up.sh STATE_DIR: bring up a single-node Slurm cluster on this machine for
# testing xmc's sbatch scripts (munged, slurmctld and slurmd, all local).
#
# Everything Slurm writes (slurm.conf, state, spool, logs, PID files) lives
# in STATE_DIR; munged uses the system's /etc/munge/munge.key and socket.
# Clients find the cluster through SLURM_CONF:
#
#   slurm/local/up.sh /tmp/xmc-slurm
#   export SLURM_CONF=/tmp/xmc-slurm/slurm.conf     (or: . /tmp/xmc-slurm/env.sh)
#   sbatch --wait job.sbatch
#   slurm/local/down.sh /tmp/xmc-slurm
#
# The script is idempotent: run again, it leaves a healthy cluster with the
# same configuration alone and restarts anything else, including daemons
# left over from an earlier run in the same STATE_DIR. Debian's slurmctld,
# slurmd, slurm-client and munge packages are installed when missing
# (as root, with apt-get); the daemons need root.
#
# Environment: XMC_SLURM_CPUS sets the CPUs the node offers (default: the
# machine's, at least 2, so that 2-task jobs fit on a 2-core machine).
set -euo pipefail

die() { echo "up.sh: $*" >&2; exit 1; }

[ $# -eq 1 ] || die "usage: up.sh STATE_DIR"
mkdir -p "$1"
STATE=$(cd "$1" && pwd)
CONF=$STATE/slurm.conf
PACKAGES="slurmctld slurmd slurm-client munge"

# --- packages -------------------------------------------------------------
export PATH=$PATH:/usr/sbin:/sbin # the daemons, for users without sbin in PATH
missing=()
for cmd in slurmctld slurmd sbatch sinfo munged munge; do
	command -v "$cmd" >/dev/null 2>&1 || missing+=("$cmd")
done
if [ ${#missing[@]} -gt 0 ]; then
	if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
		die "missing ${missing[*]}; install Slurm and munge: sudo apt-get install -y --no-install-recommends $PACKAGES"
	fi
	echo "up.sh: installing $PACKAGES" >&2
	apt_install() { DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $PACKAGES >/dev/null; }
	apt_install || { apt-get update -qq && apt_install; } || die "apt-get install $PACKAGES failed"
fi
[ "$(id -u)" = 0 ] || die "slurmd and slurmctld must run as root here (SlurmUser=root); run up.sh as root"
# srun --mpi=pmix needs the PMIx library; Debian ships it in libpmix-dev
# (installed with OpenMPI's development packages).
if ! ls /usr/lib/*/libpmix.so >/dev/null 2>&1 && ! ls /usr/lib/*/pmix2/lib/libpmix.so >/dev/null 2>&1; then
	echo "up.sh: warning: libpmix.so not found, srun --mpi=pmix will fail; install libpmix-dev" >&2
fi

# --- configuration --------------------------------------------------------
HOST=$(hostname -s)
CPUS=${XMC_SLURM_CPUS:-$(nproc)}
[ "$CPUS" -ge 2 ] || CPUS=2
MEM_MB=$(awk '/^MemTotal:/ { print int($2 / 1024) }' /proc/meminfo)
# Offer less memory than the machine has, or slurmd drains the node for
# "Low RealMemory".
REAL_MB=$((MEM_MB * 9 / 10))

mkdir -p "$STATE/ctld" "$STATE/spool" "$STATE/log"
new_conf=$(cat <<EOF
# Single-node Slurm for xmc tests, written by slurm/local/up.sh.
ClusterName=xmc-local
SlurmctldHost=$HOST(127.0.0.1)
SlurmctldPort=6817
SlurmdPort=6818
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
# A requeued job runs again once its credential has expired: 10 s rather
# than 120, for the test of a job requeued to resume.
AuthInfo=cred_expire=10
CredType=cred/munge
StateSaveLocation=$STATE/ctld
SlurmdSpoolDir=$STATE/spool
SlurmctldPidFile=$STATE/slurmctld.pid
SlurmdPidFile=$STATE/slurmd.pid
SlurmctldLogFile=$STATE/log/slurmctld.log
SlurmdLogFile=$STATE/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
# No cgroups and no systemd here: track processes by parent PID, bind nothing.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SwitchType=switch/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
# Start batch jobs at once and reject jobs that could never run instead of
# leaving them pending. sbatch --wait polls every 2 s only while 2 s is
# under MinJobAge/2, else after 8 and 32 s: keep finished jobs 4 s.
SchedulerParameters=batch_sched_delay=0
EnforcePartLimits=ALL
MinJobAge=4
ReturnToService=2
KillWait=5
# Trust the CPUs and memory below even where the hardware reports others.
SlurmdParameters=config_overrides
NodeName=$HOST NodeAddr=127.0.0.1 CPUs=$CPUS RealMemory=$REAL_MB State=UNKNOWN
PartitionName=debug Nodes=$HOST Default=YES MaxTime=INFINITE State=UP
EOF
)
cat >"$STATE/env.sh" <<EOF
# Source this file to use the local Slurm cluster of $STATE.
export SLURM_CONF=$CONF
EOF
export SLURM_CONF=$CONF

# alive PIDFILE NAME: print the PID recorded in PIDFILE if that process is
# still running and is NAME.
alive() {
	local pid
	[ -s "$1" ] || return 1
	pid=$(cat "$1")
	[ -r "/proc/$pid/comm" ] && [ "$(cat "/proc/$pid/comm")" = "$2" ] && echo "$pid"
}

node_state() { timeout 5 sinfo -h -n "$HOST" -o %T 2>/dev/null | head -1; }

if [ -f "$CONF" ] && [ "$(cat "$CONF")" = "$new_conf" ] &&
	alive "$STATE/slurmctld.pid" slurmctld >/dev/null && alive "$STATE/slurmd.pid" slurmd >/dev/null &&
	timeout 5 munge -n </dev/null 2>/dev/null | timeout 5 unmunge >/dev/null 2>&1; then
	case $(node_state) in
	idle | mixed | allocated)
		echo "up.sh: Slurm already up ($STATE); export SLURM_CONF=$CONF"
		exit 0
		;;
	esac
fi

# Stop what an earlier run left behind, then start afresh.
"$(dirname "$0")/down.sh" "$STATE" >/dev/null
printf '%s\n' "$new_conf" >"$CONF"
rm -rf "${STATE:?}/ctld" "${STATE:?}/spool"
mkdir -p "$STATE/ctld" "$STATE/spool"

# --- munge ----------------------------------------------------------------
KEY=/etc/munge/munge.key
if [ ! -s "$KEY" ]; then
	echo "up.sh: creating $KEY" >&2
	mkdir -p /etc/munge
	if command -v mungekey >/dev/null 2>&1; then
		mungekey --create --keyfile="$KEY"
	else
		dd if=/dev/urandom of="$KEY" bs=1024 count=1 status=none
	fi
fi
chown munge:munge "$KEY" && chmod 0400 "$KEY"
if timeout 5 munge -n </dev/null 2>/dev/null | timeout 5 unmunge >/dev/null 2>&1; then
	: # a munged is already serving the default socket (e.g. the system's); use it
else
	# Without systemd nobody creates the runtime directory; munged runs as
	# the munge user, and --force removes a stale socket of a dead daemon.
	install -d -o munge -g munge -m 0755 /run/munge
	install -d -o munge -g munge -m 0700 /var/lib/munge /var/log/munge
	runuser -u munge -- munged --force || die "munged failed to start; see /var/log/munge/munged.log"
	for _ in $(seq 50); do
		timeout 5 munge -n </dev/null 2>/dev/null | timeout 5 unmunge >/dev/null 2>&1 && break
		sleep 0.1
	done
	cp /run/munge/munged.pid "$STATE/munged.pid"
fi

# --- slurmctld and slurmd -------------------------------------------------
tail_logs() {
	for f in "$STATE"/log/*.log; do
		[ -f "$f" ] && { echo "--- $f" >&2; tail -n 15 "$f" >&2; }
	done
	return 0
}
slurmctld -f "$CONF" || { tail_logs; die "slurmctld failed to start"; }
slurmd -f "$CONF" -N "$HOST" || { tail_logs; die "slurmd failed to start"; }

# Wait until the node accepts jobs.
for _ in $(seq 300); do
	case $(node_state) in
	idle)
		echo "up.sh: Slurm up on $HOST with $CPUS CPUs ($STATE); export SLURM_CONF=$CONF"
		exit 0
		;;
	drain* | down* | fail*)
		tail_logs
		die "node $HOST is $(node_state): $(sinfo -h -R -o %E 2>/dev/null)"
		;;
	esac
	sleep 0.1
done
tail_logs
die "node $HOST not idle after 30 s (state: $(node_state))"
