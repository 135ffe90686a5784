#!/usr/bin/env bash
# A single-node Slurm cluster on this machine, for testing the course's grading jobs without a
# real cluster (CI does this: no GPU, so the jobs grade the CPU exercises).
#
#   slurm/local_cluster.sh start DIR   writes DIR/slurm.conf, starts munged, slurmctld and slurmd;
#                                      prints the line to export: SLURM_CONF=DIR/slurm.conf
#   slurm/local_cluster.sh stop DIR    stops them
#
# Needs Debian's slurm-wlm (slurmctld, slurmd, sbatch) and munge, and root (slurmd runs jobs as
# their submitter). One node, named after this host, with this machine's cores and memory, in one
# partition "course" (the default), no GPU resources.
set -euo pipefail
usage() { echo "usage: $0 start|stop DIR" >&2; exit 2; }
[[ $# -eq 2 ]] || usage
action=$1
dir=$(mkdir -p "$2" && cd "$2" && pwd) || { echo "local_cluster: cannot create the folder '$2'" >&2; exit 2; }
for tool in slurmctld slurmd munged sbatch; do
  command -v "$tool" >/dev/null 2>&1 || [[ -x /usr/sbin/$tool ]] || { echo "local_cluster: $tool is not installed (Debian: apt-get install slurm-wlm munge)" >&2; exit 1; }
done
export PATH="/usr/sbin:$PATH"

case "$action" in
  start)
    [[ $(id -u) -eq 0 ]] || { echo "local_cluster: start needs root (slurmd runs jobs as their submitter)" >&2; exit 1; }
    host=$(hostname -s)
    cpus=$(nproc)
    memory_mb=$(( $(awk '/MemTotal/ {print $2}' /proc/meminfo) / 1024 - 512 ))
    mkdir -p "$dir/state" "$dir/spool" "$dir/log" "$dir/munge"
    cat >"$dir/slurm.conf" <<CONF
ClusterName=course
SlurmctldHost=$host
AuthType=auth/munge
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
NodeName=$host CPUs=$cpus RealMemory=$memory_mb State=UNKNOWN
PartitionName=course Nodes=$host Default=YES MaxTime=120 State=UP
CONF
    # munge: a key of this cluster's own, and a daemon with its socket in DIR
    if [[ ! -s $dir/munge/munge.key ]]; then
      dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 status=none
      chmod 400 "$dir/munge/munge.key"
    fi
    socket=/run/munge/munge.socket.2
    mkdir -p /run/munge
    if ! pgrep -x munged >/dev/null; then
      munged --force --key-file="$dir/munge/munge.key" --socket="$socket" \
        --pid-file="$dir/munge/munged.pid" --log-file="$dir/log/munged.log" --seed-file="$dir/munge/seed"
    fi
    SLURM_CONF="$dir/slurm.conf" slurmctld
    SLURM_CONF="$dir/slurm.conf" slurmd
    # wait (at most 30 s) for the node to be idle
    for _ in $(seq 60); do
      state=$(SLURM_CONF="$dir/slurm.conf" sinfo -h -o %t 2>/dev/null | head -n1 || true)
      [[ $state == idle ]] && break
      sleep 0.5
    done
    if [[ ${state:-} != idle ]]; then
      echo "local_cluster: the node did not become idle (state '${state:-none}'); see $dir/log/" >&2
      exit 1
    fi
    echo "SLURM_CONF=$dir/slurm.conf"
    ;;
  stop)
    for pid in "$dir/slurmd.pid" "$dir/slurmctld.pid" "$dir/munge/munged.pid"; do
      [[ -s $pid ]] && kill "$(cat "$pid")" 2>/dev/null || true
    done
    ;;
  *) usage ;;
esac
