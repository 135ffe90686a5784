#!/usr/bin/env bash
# Measures how long a student waits on a GPU machine, for the instructor's tables
# (docs/grading.md, docs/cluster.md through scripts/course_plan.py):
#
#   scripts/course_times.sh BUILD OUTDIR [--programs[=KEYS]] [--weeks=LIST]
#
#   --programs     runs every lesson and lab of BUILD (a configured and built tree: its
#                  course_programs.txt) with --bench --format=csv, as gpu_check.sh's bench step does,
#                  into OUTDIR/bench_<key>.csv, and records each run's seconds; =KEYS (comma-separated
#                  program keys, e.g. 01_sync_copy,01_sync_copy.sync_copy_lab) runs only those
#   --weeks=LIST   grades the students' copy (scripts/student_tree.py: untouched starters) one week
#                  of the six-week plan at a time with slurm/grade.sh, e.g. --weeks=1,2,3, and
#                  records each week's seconds (build included)
# Writes OUTDIR/lab_times.csv (program,seconds,gpu), the format scripts/course_plan.py reads from
# docs/lab_times.csv. The GPU is the first one visible (CUDA_VISIBLE_DEVICES).
set -uo pipefail
usage() { echo "usage: $0 BUILD OUTDIR [--programs[=KEYS]] [--weeks=LIST]" >&2; exit 2; }
[[ $# -ge 3 ]] || usage
build=$1 out=$2; shift 2
programs=0 weeks="" only=""
for arg in "$@"; do
  case "$arg" in
    --programs) programs=1 ;;
    --programs=*) programs=1 only=${arg#--programs=} ;;
    --weeks=*) weeks=${arg#--weeks=}
      [[ $weeks =~ ^[1-6](,[1-6])*$ ]] || { echo "--weeks takes week numbers 1 to 6, comma-separated; got '$weeks'" >&2; exit 2; } ;;
    *) usage ;;
  esac
done
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
[[ $programs == 1 && ! -f $build/course_programs.txt ]] && { echo "course_times: $build has no course_programs.txt: configure and build it first" >&2; exit 2; }
mkdir -p "$out" || exit 2
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n1)
[[ -n $gpu ]] || { echo "course_times: no GPU visible (nvidia-smi lists none)" >&2; exit 1; }
times="$out/lab_times.csv"
[[ -f $times ]] || echo "program,seconds,gpu" >"$times"
seconds_since() { python3 -c "import sys,time; print(f'{time.time() - float(sys.argv[1]):.1f}')" "$1"; }

if ((programs)); then
  declare -A seen
  while read -r chapter kind name target path; do
    [[ $kind == lesson || $kind == lab ]] || continue
    if [[ $kind == lesson && -z ${seen[$chapter]:-} ]]; then key=$chapter; seen[$chapter]=1; else key=$chapter.$name; fi
    [[ -z $only || ,$only, == *,$key,* ]] || continue
    start=$(date +%s.%N)
    "$path" --bench --format=csv >"$out/bench_$key.csv" 2>"$out/bench_$key.log"
    rc=$?
    echo "$key,$(seconds_since "$start"),$gpu" >>"$times"
    echo "$key: exit $rc, $(tail -n1 "$times" | cut -d, -f2) s"
  done <"$build/course_programs.txt"
fi

if [[ -n $weeks ]]; then
  weeks_of=("" "01_sync_copy;02_memcpy_async" "03_barrier;04_pipeline" "05_warp_specialized;11_carveout"
            "06_tma_1d;07_tma_2d" "08_swizzle;09_device_tensormap" "10_stas_cluster;12_tma_multicast")
  tree=$(mktemp -d)/student
  python3 "$root/scripts/student_tree.py" "$tree" >/dev/null || exit 1
  for week in ${weeks//,/ }; do
    start=$(date +%s.%N)
    COURSE_GRADE_CHAPTERS=${weeks_of[$week]} COURSE_GRADE_JOBS=8 "$root/slurm/grade.sh" "$tree" "$out/grade_week$week" >/dev/null
    echo "grade.week$week,$(seconds_since "$start"),$gpu" >>"$times"
    echo "week $week (${weeks_of[$week]}): $(tail -n1 "$times" | cut -d, -f2) s; $(grep -c ': passed' "$out/grade_week$week/summary.txt") passed, $(grep -c ': failed' "$out/grade_week$week/summary.txt") failed"
  done
fi
