#!/usr/bin/env bash
# Runs the class grading job on a single-node Slurm started on this machine (CI: no GPU, so the
# job grades a CPU exercise), for two students: one hands in the untouched starter, one the
# solution. Passes when Slurm ran both array tasks and the class table says failed and passed.
#
#   slurm/ci_check.sh [WORKDIR]     (needs root, Debian's slurm-wlm and munge)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
work=${1:-$(mktemp -d)}
mkdir -p "$work"
exercise=batch_count chapter=01_sync_copy
eval "export $("$root/slurm/local_cluster.sh" start "$work/cluster" | tail -n1)"
trap '"$root/slurm/local_cluster.sh" stop "$work/cluster"' EXIT
rm -rf "$work/alice" "$work/bob" "$work/results"
python3 "$root/scripts/student_tree.py" "$work/alice"
python3 "$root/scripts/student_tree.py" "$work/bob"
cp "$root/$chapter/exercises/solutions/$exercise.hpp" "$work/bob/$chapter/exercises/$exercise.hpp"
printf '# student tree\nalice %s\nbob %s\n' "$work/alice" "$work/bob" >"$work/roster.txt"
cd "$root"
# --gres=none: this node has no GPU; %1: one task at a time on a 2-core machine
COURSE_GRADE_JOBS=$(nproc) sbatch --wait --array=1-2%1 --gres=none --cpus-per-task="$(nproc)" --mem=2G \
  --output="$work/class-%A_%a.out" slurm/grade_class.sbatch "$work/roster.txt" "$work/results" "$exercise"
python3 slurm/collect.py "$work/results"
cat "$work/results/class.csv"
grep -qx "alice,$chapter/$exercise,failed" "$work/results/class.csv" || { echo "ci_check: the untouched starter did not fail" >&2; exit 1; }
grep -qx "bob,$chapter/$exercise,passed" "$work/results/class.csv" || { echo "ci_check: the solution did not pass" >&2; exit 1; }
echo "ci_check: Slurm graded the class: the starter failed, the solution passed"
