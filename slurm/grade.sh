#!/usr/bin/env bash
# Grades a student's copy of the course: builds the exercises from the student's starters and runs
# their tests, one exercise or all of them, and writes a one-line-per-exercise summary.
#
#   slurm/grade.sh TREE OUT [EXERCISE]
#
#   TREE      the student's tree (a clone, or scripts/student_tree.py's copy, with their work in it)
#   OUT       folder for the results: summary.txt (one line per exercise: passed, failed, or
#             not graded here: the GPU lacks what it needs), junit.xml, build.log, tests.log
#   EXERCISE  one exercise by name (e.g. batch_count); default: every exercise of the tree
#
# Environment: COURSE_GRADE_CHAPTERS (e.g. "03_barrier;04_pipeline": only these chapters' exercises,
# a week's work), COURSE_GRADE_ARCH (COURSE_CUDA_ARCHITECTURES, default: the GPU's own, e.g. 90-real,
# where a GPU is visible, else 90-real), COURSE_GRADE_JOBS (build jobs, default: the job's CPUs).
# The bounded device waits of the tests (4 s each) are the hang guard: a kernel that never
# completes fails its test with a diagnosis; the job's time limit is only the last resort.
# Exit status: 0 when grading ran (whatever the student's result), 2 for a bad command line,
# 1 when the tree could not be graded at all (no such tree, or no such exercise).
set -uo pipefail
[[ $# -eq 2 || $# -eq 3 ]] || { echo "usage: $0 TREE OUT [EXERCISE]" >&2; exit 2; }
tree=$1 out=$2 exercise=${3:-}
[[ -f $tree/CMakeLists.txt && -d $tree/common/course ]] || { echo "grade: '$tree' is not a copy of the course (no CMakeLists.txt and common/course)" >&2; exit 1; }
tree=$(cd "$tree" && pwd)
if [[ -n $exercise ]]; then
  [[ $exercise =~ ^[a-z0-9_]+$ ]] || { echo "grade: exercise names are lower-case words joined by '_'; got '$exercise'" >&2; exit 2; }
  tests=("$tree"/[0-9][0-9]_*/exercises/"$exercise"_test.*)
  [[ -f ${tests[0]} ]] || { echo "grade: no exercise '$exercise' in $tree (no NN_topic/exercises/${exercise}_test.*)" >&2; exit 1; }
  chapter=$(basename "$(dirname "$(dirname "${tests[0]}")")")
fi
mkdir -p "$out" && out=$(cd "$out" && pwd) || { echo "grade: cannot create the results folder '$out'" >&2; exit 2; }
build=${TMPDIR:-/tmp}/course-grade-${SLURM_JOB_ID:-$$}${SLURM_ARRAY_TASK_ID:+-$SLURM_ARRAY_TASK_ID}
jobs=${COURSE_GRADE_JOBS:-${SLURM_CPUS_PER_TASK:-$(nproc)}}
if [[ -n ${COURSE_GRADE_ARCH:-} ]]; then arch=$COURSE_GRADE_ARCH
elif cc=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -n1) \
     && [[ $cc =~ ^([0-9]+)\.([0-9])$ ]]; then arch="${BASH_REMATCH[1]}${BASH_REMATCH[2]}-real"
else arch=90-real; fi
start=$(date +%s)
configure=(-DCMAKE_BUILD_TYPE=Release -DCOURSE_EXERCISES=ON -DCOURSE_EXERCISE_SOLUTIONS=OFF
           "-DCOURSE_CUDA_ARCHITECTURES=$arch")
target=exercises
if [[ -n ${COURSE_GRADE_CHAPTERS:-} && -z $exercise ]]; then
  for ch in ${COURSE_GRADE_CHAPTERS//;/ }; do
    [[ -d $tree/$ch/exercises ]] || { echo "grade: COURSE_GRADE_CHAPTERS names '$ch', which has no exercises/ in $tree" >&2; exit 1; }
  done
  configure+=("-DCOURSE_ONLY_CHAPTERS=$COURSE_GRADE_CHAPTERS")
fi
if [[ -n $exercise ]]; then
  configure+=("-DCOURSE_ONLY_CHAPTERS=$chapter")
  target=${chapter}_exercise_$exercise
fi
: >"$out/tests.log"
if ! cmake -S "$tree" -B "$build" "${configure[@]}" >"$out/build.log" 2>&1 ||
   ! cmake --build "$build" -j "$jobs" --target "$target" >>"$out/build.log" 2>&1; then
  echo "${exercise:-all}: failed: the tree does not build (see build.log)" >"$out/summary.txt"
else
  filter=(-L '^exercise$')
  [[ -n $exercise ]] && filter+=(-R "^${chapter}\\.exercises\\.${exercise}\\.")
  ctest --test-dir "$build" "${filter[@]}" -j 4 --output-junit "$out/junit.xml" >"$out/tests.log" 2>&1
  python3 "$(dirname "${BASH_SOURCE[0]}")/collect.py" --summary "$out/junit.xml" >"$out/summary.txt" ||
    echo "${exercise:-all}: failed: no test results (see tests.log)" >"$out/summary.txt"
fi
echo "graded in $(( $(date +%s) - start )) s on $(hostname -s)${CUDA_VISIBLE_DEVICES:+, GPU $CUDA_VISIBLE_DEVICES}" >>"$out/summary.txt"
rm -rf "$build"
cat "$out/summary.txt"
exit 0
