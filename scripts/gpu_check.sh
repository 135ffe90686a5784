#!/usr/bin/env bash
# Checks the course on a GPU machine and writes the evidence to OUTDIR.
#
#   scripts/gpu_check.sh OUTDIR [--quick] [--chapters=LIST] [--steps=LIST] [--arch=LIST]
#
#   --quick          benches at --size=64M instead of each chapter's default
#   --chapters=LIST  comma-separated chapter folders (default: all); only these are built,
#                    tested, benched, sanitized and profiled
#   --steps=LIST     comma-separated subset of tests,bench,timelines,sanitizer,ncu,exercises,
#                    recordings (default: all); repeat alone (with --repeat=N) runs only the repetitions
#   --arch=LIST      COURSE_CUDA_ARCHITECTURES for the build, e.g. 90-real (default: the
#                    project's default list); a check run on one GPU needs only its own
#   --tools=LIST     comma-separated subset of memcheck,racecheck,synccheck,initcheck for the
#                    sanitizer step (default: all four)
#   --sanitizer-runs=N  runs each sanitizer N times per program (default 3); a program whose
#                    result differs between runs fails the step
#   --repeat=N       after the tests step, runs the GPU tests N times more inside their test programs
#                    (step "repeat", scripts/repeat_gpu_tests.py: --gtest_repeat=N, four programs at
#                    a time; the tests that wait out a bound on purpose run once, in the tests step);
#                    one failure in any repetition fails the step
#   --programs=LIST  comma-separated program keys (the chapter for its main lesson, chapter.program
#                    for the others, e.g. 07_tma_2d,07_tma_2d.tma_2d_lab): the bench and
#                    sanitizer steps run only these (default: every program of the chapters)
#   --prebuilt       neither configures nor builds: uses build-gpu/ as an earlier run left it (so
#                    that several checks, e.g. one per GPU with CUDA_VISIBLE_DEVICES and
#                    --chapters, can share one build); fails when build-gpu/ has no manifest
#
# Steps (each logged to OUTDIR/<step>.log; a failing step does not stop the others):
#   configure, build   Release build in build-gpu/ (Ninja when installed)
#   tests              every CTest test; JUnit in OUTDIR/tests.junit.xml
#   bench              every program (each chapter's lessons and lab) with --bench --format=csv
#                      -> bench_<chapter>.csv for the chapter's lesson, bench_<chapter>.<program>.csv
#                      for its other programs (default size, 1 GiB; --quick uses --size=64M)
#   timelines          every lab that offers --timeline (04, 05, 06, 10) records its ring at its
#                      timeline size -> timeline_<chapter>.csv (+ .log), drawn by
#                      scripts/draw_timelines.py -> timeline_<chapter>.svg; copy both into the
#                      chapters' figures/ with scripts/draw_timelines.py --from-results OUTDIR
#   sanitizer          compute-sanitizer memcheck, racecheck, synccheck, initcheck on every
#                      program at its default verify size -> sanitizer_<tool>_<key>.log
#   exercises          scripts/check_exercises.py: every exercise built from its starter must fail
#                      its test and from its solution pass it (build-exercises/, build-solutions/)
#   recordings         scripts/record_exercises.py: what scripts/exercise.py prints for each GPU
#                      exercise's untouched starter and its solution on this GPU
#                      -> recordings/NN_topic/exercises/recorded/NAME.txt; copy them into the tree
#                      with cp -r OUTDIR/recordings/. . (then scripts/recordings_fresh.py --write-pending)
#   ncu                for chapters with ncu_metrics.txt (lines "<args>|<metric,metric>" run the
#                      lesson; "@<program> <args>|..." runs another program of the chapter, e.g. its lab)
# OUTDIR/summary.md collects it all and is printed last. Exit status 0 only if no step failed;
# a chapter or test that skips (exit 77: the GPU lacks a feature, or a tool is missing) is
# listed but is not a failure.
set -uo pipefail

usage() { echo "usage: $0 OUTDIR [--quick] [--chapters=LIST] [--steps=LIST] [--arch=LIST] [--tools=LIST] [--sanitizer-runs=N] [--repeat=N] [--programs=LIST] [--prebuilt]" >&2; exit 2; }
outdir="" quick=0 prebuilt=0 only_programs="" only_chapters="" only_steps="tests,bench,timelines,sanitizer,ncu,exercises,recordings" arch="" sanitizer_runs=3 repeat=0
only_tools="memcheck,racecheck,synccheck,initcheck"
for arg in "$@"; do
  case "$arg" in
    --quick) quick=1 ;;
    --prebuilt) prebuilt=1 ;;
    --programs=*) only_programs=${arg#--programs=} ;;
    --chapters=*) only_chapters=${arg#--chapters=} ;;
    --steps=*) only_steps=${arg#--steps=} ;;
    --arch=*) arch=${arg#--arch=} ;;
    --tools=*) only_tools=${arg#--tools=}
      for t in ${only_tools//,/ }; do
        [[ $t =~ ^(memcheck|racecheck|synccheck|initcheck)$ ]] || { echo "--tools: '$t' is not one of memcheck, racecheck, synccheck, initcheck" >&2; exit 2; }
      done ;;
    --sanitizer-runs=*) sanitizer_runs=${arg#--sanitizer-runs=}
      [[ $sanitizer_runs =~ ^[1-9][0-9]?$ ]] || { echo "--sanitizer-runs takes a whole number from 1 to 99" >&2; exit 2; } ;;
    --repeat=*) repeat=${arg#--repeat=}
      [[ $repeat =~ ^[1-9][0-9]{0,2}$ ]] || { echo "--repeat takes a whole number from 1 to 999" >&2; exit 2; } ;;
    -*) usage ;;
    *) if [[ -z $outdir ]]; then outdir=$arg; else usage; fi ;;
  esac
done
[[ -n $outdir ]] || usage
# Everything is checked before anything is written or moved: a refused command leaves OUTDIR as it was.
for step in ${only_steps//,/ }; do
  [[ $step =~ ^(tests|bench|timelines|sanitizer|ncu|exercises|recordings|repeat)$ ]] || { echo "--steps: '$step' is not one of tests, bench, timelines, sanitizer, ncu, exercises, recordings, repeat" >&2; exit 2; }
done
if [[ ,$only_steps, == *,repeat,* ]] && ((repeat == 0)); then echo "--steps=repeat needs --repeat=N" >&2; exit 2; fi
for a in ${arch//,/ }; do
  [[ $a =~ ^[1-9][0-9]{1,2}a?(-real|-virtual)?$ ]] || { echo "--arch: '$a' is not a compute capability such as 90, 90a, 90-real or 90-virtual" >&2; exit 2; }
done
[[ -z $arch || -n ${arch//,/} ]] || { echo "--arch: no architecture given" >&2; exit 2; }
if [[ -e $outdir && ! -d $outdir ]]; then echo "OUTDIR '$outdir' exists and is not a folder" >&2; exit 2; fi
parent=$outdir
while [[ ! -e $parent ]]; do parent=$(dirname "$parent"); done
[[ -d $parent && -w $parent ]] || { echo "OUTDIR '$outdir' cannot be written (no write permission in '$parent')" >&2; exit 2; }
wanted() { [[ ,$only_steps, == *,$1,* ]]; }  # wanted STEP
outdir_arg=$outdir
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build="build-gpu"
case $outdir in /*) ;; *) outdir=$PWD/$outdir ;; esac
cd "$root" || exit 2
run_timeout=600                  # seconds, per program run
tool_wait_ms=120000              # bounded device waits under compute-sanitizer and ncu (course/wait_limit.hpp)
read -r -a tools <<<"${only_tools//,/ }"

steps=()
declare -A status note
record() {  # record STEP pass|fail|skip [note]
  steps+=("$1"); status[$1]=$2; note[$1]=${3:-}
  echo "==> $1: $2${3:+ ($3)}"
}
combine() {  # status of a step from its parts: fail if any failed, skip if all skipped
  local s all_skip=1
  for s in "$@"; do
    [[ $s == fail ]] && { echo fail; return; }
    [[ $s == skip ]] || all_skip=0
  done
  ((all_skip)) && echo skip || echo pass
}
join() {  # join ITEM... with "; "
  local out="" item
  for item in "$@"; do out+="${out:+; }$item"; done
  echo "$out"
}
tool_dirs=(/usr/local/cuda/bin)  # where CUDA tools are looked for after PATH
find_tool() {
  local dir
  command -v "$1" 2>/dev/null && return 0
  for dir in "${tool_dirs[@]}"; do
    [[ -x $dir/$1 ]] && { echo "$dir/$1"; return 0; }
  done
  return 1
}

# The chapters asked for: folders NN_topic with a CMakeLists.txt (default: all of them).
for ch in ${only_chapters//,/ }; do
  [[ -f $ch/CMakeLists.txt && $ch =~ ^[0-9][0-9]_ ]] || { echo "--chapters: '$ch' is not a chapter folder (NN_topic with a CMakeLists.txt)" >&2; exit 2; }
done
[[ -z $only_chapters || -n ${only_chapters//,/} ]] || { echo "--chapters: no chapter given" >&2; exit 2; }
chapters=()
for dir in [0-9][0-9]_*/; do
  ch=${dir%/}
  [[ $ch =~ ^[0-9][0-9]_ && -f $ch/CMakeLists.txt ]] || continue
  [[ -z $only_chapters || ,$only_chapters, == *,$ch,* ]] || continue
  chapters+=("$ch")
done
# A program key (chapter, or chapter.program) must name a program of those chapters' CMakeLists.txt.
for key in ${only_programs//,/ }; do
  key_ch=${key%%.*} key_prog=""
  [[ $key == *.* ]] && key_prog=${key#*.}
  known=$(python3 -c 'import sys; sys.path.insert(0, sys.argv[1]); from update_results import chapter_programs; from pathlib import Path; print(" ".join(chapter_programs(Path(sys.argv[2]))))' "$root/scripts" "$key_ch" 2>/dev/null)
  if [[ " ${chapters[*]} " != *" $key_ch "* || -z $known || ( -n $key_prog && " $known " != *" $key_prog "* ) ]]; then
    echo "--programs: '$key' is not a program of the chapters asked for (a chapter, or chapter.program of its CMakeLists.txt)" >&2; exit 2
  fi
done
if ((prebuilt)) && [[ ! -f $build/course_programs.txt ]]; then
  echo "--prebuilt, but $build has no course_programs.txt: run once without --prebuilt" >&2; exit 2
fi
# Checked: now the run starts. An earlier run's results are moved aside, never deleted.
mkdir -p "$outdir" || { echo "OUTDIR '$outdir_arg' cannot be created" >&2; exit 2; }
outdir=$(cd "$outdir" && pwd) || exit 2
shopt -s nullglob
earlier=("$outdir"/bench_* "$outdir"/sanitizer_* "$outdir"/ncu_* "$outdir"/timeline_* "$outdir"/recordings)
shopt -u nullglob
if ((${#earlier[@]})); then
  aside="$outdir/earlier/$(date +%Y%m%d-%H%M%S)"
  mkdir -p "$aside" && mv "${earlier[@]}" "$aside/" && echo "==> the earlier run's ${#earlier[@]} result file(s) moved to $aside"
fi
echo "==> chapters: ${chapters[*]:-none}"

# a. configure and build
generator=()
[[ ! -f $build/CMakeCache.txt ]] && command -v ninja >/dev/null && generator=(-G Ninja)
arch_args=()
[[ -n $arch ]] && arch_args=("-DCOURSE_CUDA_ARCHITECTURES=${arch//,/;}")
# With --chapters only those chapters are configured (COURSE_ONLY_CHAPTERS); otherwise all.
arch_args+=("-DCOURSE_ONLY_CHAPTERS=$(IFS=';'; echo "${only_chapters:+${chapters[*]}}")")
if ((prebuilt)); then
  if [[ -f $build/course_programs.txt ]]; then
    record configure skip "--prebuilt: $build as it is"
  else
    record configure fail "--prebuilt, but $build has no course_programs.txt: run once without --prebuilt"
  fi
elif cmake -S . -B "$build" ${generator[@]+"${generator[@]}"} ${arch_args[@]+"${arch_args[@]}"} -DCMAKE_BUILD_TYPE=Release >"$outdir/configure.log" 2>&1; then
  record configure pass
else
  record configure fail "see configure.log"
fi
nvcc_path=$(sed -n 's/^CMAKE_CUDA_COMPILER:[A-Z]*=//p' "$build/CMakeCache.txt" 2>/dev/null)
[[ -n $nvcc_path && $(dirname "$nvcc_path") != /usr/local/cuda/bin ]] && tool_dirs=("$(dirname "$nvcc_path")" "${tool_dirs[@]}")
# The programs of those chapters, from the manifest the configure step wrote (lines
# "<chapter> <lesson|lab|test> <name> <target> <executable>", each chapter's main lesson first).
# A program's key names its logs: the chapter for the main lesson, chapter.name for the others.
programs=()            # keys of the lessons and labs, in order
declare -A program     # key -> executable
declare -A lab_of      # chapter -> key of its lab
target_args=()         # with --chapters, only those chapters' programs and test executables
declare -A seen_lesson
chapters_csv=,$(IFS=,; echo "${chapters[*]}"),
while read -r m_ch m_kind m_name m_target m_path; do
  [[ $chapters_csv == *,$m_ch,* ]] || continue
  [[ -n $only_chapters ]] && target_args+=(--target "$m_target")
  [[ $m_kind == test ]] && continue
  if [[ $m_kind == lesson && -z ${seen_lesson[$m_ch]:-} ]]; then key=$m_ch; seen_lesson[$m_ch]=1; else key=$m_ch.$m_name; fi
  programs+=("$key"); program[$key]=$m_path
  [[ $m_kind == lab ]] && lab_of[$m_ch]=$key
done <"$build/course_programs.txt" 2>/dev/null
if [[ -n $only_programs ]]; then
  for key in ${only_programs//,/ }; do
    [[ -n ${program[$key]:-} ]] || { echo "--programs: '$key' is not a program of the chapters asked for (keys: ${programs[*]:-none})" >&2; exit 2; }
  done
  kept=()
  for key in "${programs[@]}"; do [[ ,$only_programs, == *,$key,* ]] && kept+=("$key"); done
  programs=("${kept[@]}")
fi
echo "==> programs: ${programs[*]:-none}"
if ((prebuilt)); then
  record build skip "--prebuilt"
elif cmake --build "$build" -j "$(nproc)" ${target_args[@]+"${target_args[@]}"} >"$outdir/build.log" 2>&1; then
  record build pass
else
  record build fail "see build.log"
fi

# b. tests
if wanted tests; then
  label_args=()
  [[ -n $only_chapters ]] && label_args=(-L "^($(IFS='|'; echo "${chapters[*]}"))\$")
  ctest --test-dir "$build" --output-on-failure -j4 --no-tests=error ${label_args[@]+"${label_args[@]}"} \
    --output-junit "$outdir/tests.junit.xml" >"$outdir/tests.log" 2>&1
  tests_rc=$?
  # CTest 3.x: "100% tests passed, 0 tests failed out of 103"; CTest 4.x omits a zero failure count.
  total=$(sed -n 's/.*tests passed.* out of \([0-9]\{1,\}\).*/\1/p' "$outdir/tests.log" | tail -n1)
  failed=$(sed -n 's/.*tests passed, \([0-9]\{1,\}\) tests\{0,1\} failed out of.*/\1/p' "$outdir/tests.log" | tail -n1)
  [[ -n $total && -z $failed ]] && grep -q 'tests passed out of' "$outdir/tests.log" && failed=0
  skipped=$(grep -c '^[[:space:]]*[0-9]\{1,\} - .* (Skipped)$' "$outdir/tests.log")
  if [[ -n $total && -n $failed ]]; then
    tests_line="$((total - failed - skipped)) passed, $failed failed, $skipped skipped (of $total)"
else
  tests_line="no test summary in tests.log"
fi
# The machine-code (SASS) tests read the executables with cuobjdump; where the toolkit has it, a
# skipped one is a failure of the check, not a missing tool (CI's toolkit has none: they skip there).
# (A skip for want of machine code for an architecture the build did not include is no failure.)
sass_skipped=0
if find_tool cuobjdump >/dev/null; then
  sass_skipped=$(python3 - "$outdir/tests.junit.xml" <<'PY' 2>/dev/null || echo 0
import sys, xml.etree.ElementTree as ET
cases = ET.parse(sys.argv[1]).getroot().iter("testcase")
print(sum(1 for c in cases if "MachineCode" in c.get("name", "") and c.find("skipped") is not None
          and "cuobjdump is not installed" in "".join(n.text or "" for n in c.iter("system-out"))))
PY
)
  ((sass_skipped > 0)) && tests_rc=1 && tests_line+="; $sass_skipped machine-code test(s) skipped for want of cuobjdump although it is installed"
fi
record tests "$([[ $tests_rc == 0 ]] && echo pass || echo fail)" "$tests_line"
# shellcheck disable=SC2016  # the backquotes are markdown
failed_tests=$(sed -n '/^The following tests FAILED:/,/^$/s/^[[:space:]]*[0-9]\{1,\} - \(.*\) (\(.*\))$/- `\1` (\2)/p' \
  "$outdir/tests.log" | sed 's/ *# GetParam[^`]*`/`/')
# Skipped tests grouped by the reason they printed (gtest's "Skipped" line, or "SKIPPED: ...").
skip_reasons=$(awk '
  /<testcase / { match($0, /name="[^"]*"/); name = substr($0, RSTART + 6, RLENGTH - 7)
                 sub(/ +# GetParam.*/, "", name); skipped = 0; reason = ""; take = 0 }
  /<skipped message="SKIP_/ { skipped = 1 }  # a skip code or message, not a missing executable
  skipped && take { reason = $0; take = 0 }
  skipped && /: Skipped$/ { take = 1 }
  skipped && /SKIPPED: / && reason == "" { reason = $0; sub(/.*SKIPPED: /, "", reason) }
  /<\/testcase>/ && skipped { if (reason == "") reason = "no reason printed"
                              if (!(reason in names)) order[++n] = reason
                              if (++count[reason] <= 8) names[reason] = names[reason] (count[reason] > 1 ? ", " : "") "`" name "`" }
  END { for (i = 1; i <= n; i++) { r = order[i]; more = count[r] > 8 ? sprintf(" and %d more", count[r] - 8) : ""
                                   printf "- %s (%d): %s%s\n", r, count[r], names[r], more } }
' "$outdir/tests.junit.xml" 2>/dev/null)

else
  tests_line="not run" failed_tests="" skip_reasons=""
  record tests skip "not asked for"
fi

# b2. repetitions of the GPU tests
if ((repeat > 0)); then
  label_args=()
  [[ -n $only_chapters ]] && label_args=(--label "^($(IFS='|'; echo "${chapters[*]}"))\$")
  python3 scripts/repeat_gpu_tests.py "$build" "$repeat" --jobs=4 ${label_args[@]+"${label_args[@]}"} \
    --log="$outdir/repeat.log" >"$outdir/repeat.out" 2>&1
  repeat_rc=$?
  repeat_line=$(grep -E '^repeat: ' "$outdir/repeat.out" | tail -n1)
  record repeat "$([[ $repeat_rc == 0 ]] && echo pass || echo fail)" "${repeat_line:-no summary: see repeat.out}"
fi

# b3. the exercises, both ways (starters fail, solutions pass)
if wanted exercises; then
  ex_args=("--jobs=$(nproc)" "--configure-arg=-DCOURSE_ONLY_CHAPTERS=$(IFS=';'; echo "${only_chapters:+${chapters[*]}}")")
  [[ -n $arch ]] && ex_args+=("--configure-arg=-DCOURSE_CUDA_ARCHITECTURES=${arch//,/;}")
  python3 scripts/check_exercises.py "${ex_args[@]}" >"$outdir/exercises.log" 2>&1
  exercises_rc=$?
  exercises_line=$(grep -E '^[0-9]+ exercises; graded here' "$outdir/exercises.log" | tail -n1)
  record exercises "$([[ $exercises_rc == 0 ]] && echo pass || echo fail)" "${exercises_line:-no summary: see exercises.log}"
fi

# b4. recordings: what exercise.py prints for each GPU exercise's starter and solution, on this GPU
if wanted recordings; then
  rec_args=("--out=$outdir/recordings" "--jobs=$(nproc)")
  [[ -n $only_chapters ]] && rec_args+=("--chapters=$(IFS=,; echo "${chapters[*]}")")
  [[ -n $arch ]] && rec_args+=("--configure-arg=-DCOURSE_CUDA_ARCHITECTURES=${arch//,/;}")
  python3 scripts/record_exercises.py "${rec_args[@]}" >"$outdir/recordings.log" 2>&1
  recordings_rc=$?
  recordings_line=$(sed -n 's/^record_exercises: //p' "$outdir/recordings.log" | tail -n1)
  case $recordings_rc in
    0) record recordings pass "${recordings_line:-see recordings.log}" ;;
    77) record recordings skip "${recordings_line:-see recordings.log}" ;;
    *) record recordings fail "${recordings_line:-no summary}; see recordings.log" ;;
  esac
fi

# c. benches
if wanted bench; then
  size_args=()
  ((quick)) && size_args=(--size=64M)
  bench_parts=() bench_notes=()
  for ch in "${programs[@]}"; do
    csv=$outdir/bench_$ch.csv log=$outdir/bench_$ch.log
    if [[ ! -x ${program[$ch]} ]]; then
      echo "not built: ${program[$ch]}" >"$log"; : >"$csv"; bench_parts+=(fail); bench_notes+=("$ch not built"); continue
    fi
    timeout "$run_timeout" "${program[$ch]}" --bench --format=csv ${size_args[@]+"${size_args[@]}"} >"$csv" 2>"$log"
    case $? in
      0) bench_parts+=(pass) ;;
      77) bench_parts+=(skip); bench_notes+=("$ch skipped: $(grep -h -m1 '^SKIPPED:' "$csv" "$log" | sed 's/^SKIPPED: //')") ;;
      *) bench_parts+=(fail); bench_notes+=("$ch failed (see bench_$ch.log)") ;;
    esac
  done
  record bench "$(combine ${bench_parts[@]+"${bench_parts[@]}"})" "$(join ${bench_notes[@]+"${bench_notes[@]}"})"

else
  record bench skip "not asked for"
fi

# c2. timelines: each lab that offers --timeline records the events of its ring, then they are drawn
if wanted timelines; then
  timeline_parts=() timeline_notes=()
  for ch in "${chapters[@]}"; do
    key=${lab_of[$ch]:-}
    [[ -n $key ]] || continue
    exe=${program[$key]}
    log=$outdir/timeline_$ch.log csv=$outdir/timeline_$ch.csv
    if [[ ! -x $exe ]]; then
      [[ $ch =~ ^(04|05|06|10)_ ]] && { timeline_parts+=(fail); timeline_notes+=("$ch: lab not built"); }
      continue
    fi
    # The variant the lab records, as its --help states it ("--timeline=FILE: after verifying, runs NAME once more").
    variant=$("$exe" --help 2>/dev/null | sed -n 's/^--timeline=FILE: after verifying, runs \([A-Za-z0-9_]*\) once more.*/\1/p')
    if [[ -z $variant ]]; then
      [[ $ch =~ ^(04|05|06|10)_ ]] && { timeline_parts+=(fail); timeline_notes+=("$ch: its lab offers no --timeline"); }
      continue
    fi
    # --variant only where the recorded kernel is one of the lab's own rows (10's lab records the
    # lesson's stas_ring, which is not a lab row; then every row is verified first, at verify size).
    only=()
    "$exe" --variant="$variant" --help >/dev/null 2>&1 && only=(--variant="$variant")
    timeout "$run_timeout" "$exe" "${only[@]}" --timeline="$csv" >"$log" 2>&1
    case $? in
      0) if python3 scripts/draw_timelines.py "$csv" "${csv%.csv}.svg" >>"$log" 2>&1; then
           timeline_parts+=(pass); timeline_notes+=("$ch: timeline_$ch.svg ($variant)")
         else
           timeline_parts+=(fail); timeline_notes+=("$ch: drawing failed (see timeline_$ch.log)")
         fi ;;
      77) timeline_parts+=(skip); timeline_notes+=("$ch skipped: $(grep -h -m1 '^SKIPPED:' "$log" | sed 's/^SKIPPED: //')") ;;
      *) timeline_parts+=(fail); timeline_notes+=("$ch failed (see timeline_$ch.log)") ;;
    esac
  done
  if ((${#timeline_parts[@]} == 0)); then
    record timelines skip "no chapter asked for has a lab that records a timeline"
  else
    record timelines "$(combine "${timeline_parts[@]}")" "$(join "${timeline_notes[@]}")"
  fi
else
  record timelines skip "not asked for"
fi

# d. compute-sanitizer
declare -A sanitizer
sanitizer_parts=() sanitizer_notes=() sanitizer_known=()
if wanted sanitizer; then
  # A chapter may list reports a tool makes on correct code (NN_topic/sanitizer_known.txt, lines
  # "tool variant message | reason"). For such a tool the chapter runs one variant at a time: a
  # listed variant passes only if every error the tool prints is the listed message; every
  # other variant must be clean. Known reports appear in the summary.

  sanitize() {  # sanitize TOOL CHAPTER LOG [ARGS...] -> sets rc, errors
    # Runs the tool sanitizer_runs times; a run whose verdict differs from the first makes the
    # result "differs" (rc 3): a verdict that changes from run to run is a failure. The verdict is
    # the exit code and the kinds of report (the tools' "... error detected" headlines); how many
    # reports a tool makes before it stops a kernel depends on timing, so counts are not compared.
    local tool=$1 ch=$2 log=$3 run first_rc="" first_errors="" first_kinds="" kinds; shift 3
    : >"$log"
    for ((run = 1; run <= sanitizer_runs; run++)); do
      echo "##### run $run of $sanitizer_runs" >>"$log"
      COURSE_WAIT_LIMIT_MS=$tool_wait_ms timeout "$run_timeout" "$sanitizer_bin" --tool "$tool" --error-exitcode 1 \
        "${program[$ch]}" "$@" >"$log.run" 2>&1
      rc=$?
      cat "$log.run" >>"$log"
      errors=$(sed -n '/were not printed/d; s/.*ERROR SUMMARY: \([0-9]\{1,\}\) error.*/\1/p; s/.*RACECHECK SUMMARY: .*(\([0-9]\{1,\}\) error.*/\1/p' "$log.run" | tail -n1)
      kinds=$(grep -E '^========= [A-Z][^:]* (error|hazard)s? detected|^========= (Error|Warning): Race reported' "$log.run" \
        | sed 's/+0x[0-9a-f]*//g' | sort -u | tr '\n' '|')
      if [[ -z $first_rc ]]; then
        first_rc=$rc first_errors=$errors first_kinds=$kinds
      elif [[ $rc != "$first_rc" || $kinds != "$first_kinds" ]]; then
        echo "##### run $run differs from run 1: exit $rc and reports [${kinds:-none}], against exit $first_rc and [${first_kinds:-none}]" >>"$log"
        rc=3 errors="differs between runs"
        break
      fi
    done
    errors=${first_errors:-$errors}
    rm -f "$log.run"
  }
  cell_of() {  # cell_of RC ERRORS -> sets cell, part
    case $1 in
      0) cell=clean; part=pass ;;
      77) cell=skip; part=skip ;;
      124) cell="timeout (${run_timeout} s)"; part=fail ;;
      3) cell="differs between runs"; part=fail ;;
      *) if [[ -n $2 && $2 != 0 ]]; then cell="$2 errors"; else cell="program failed (exit $1)"; fi; part=fail ;;
    esac
  }
  if sanitizer_bin=$(find_tool compute-sanitizer); then
    for tool in "${tools[@]}"; do
      for ch in "${programs[@]}"; do
        log=$outdir/sanitizer_${tool}_$ch.log
        if [[ ! -x ${program[$ch]} ]]; then
          sanitizer[$tool,$ch]="not built"; sanitizer_parts+=(fail); sanitizer_notes+=("$ch not built"); echo "not built" >"$log"; continue
        fi
        known_file=$root/${ch%%.*}/sanitizer_known.txt
        if [[ ! -f $known_file ]] || ! grep -q "^$tool " "$known_file"; then
          sanitize "$tool" "$ch" "$log"
          cell_of "$rc" "$errors"
          sanitizer[$tool,$ch]=$cell; sanitizer_parts+=("$part")
          [[ $part == fail ]] && sanitizer_notes+=("$tool $ch: $cell")
          continue
        fi
        : >"$log"
        worst=pass cell=clean known_count=0
        for variant in $("${program[$ch]}" --help | awk '/^variants/{v=1; next} v && /^  [a-z0-9_]+ /{print $1} /^$/{if (v) exit}'); do
          vlog=$outdir/sanitizer_${tool}_${ch}_$variant.tmp
          sanitize "$tool" "$ch" "$vlog" --variant="$variant"
          entry=$(awk -v t="$tool" -v v="$variant" '$1 == t && $2 == v {sub(/^[^ ]+ [^ ]+ /, ""); print; exit}' "$known_file")
          { echo "##### --variant=$variant (exit $rc)"; cat "$vlog"; } >>"$log"
          if [[ -n $entry && $rc == 1 ]]; then
            message=${entry%% | *} reason=${entry#* | }
            # racecheck names each hazard "Error: Race reported between <access> at <kernel>+<offset>"
            headlines=$(grep -E '^========= ([A-Z][^:]* (error|hazard)s? detected|(Error|Warning): Race reported between)' "$vlog" | sort -u)
            # synccheck stops the kernel at its first report, so the program cannot verify under
            # it; the other tools run the same variant to completion and check its results.
            if [[ -n $headlines ]] && ! grep -qvF "$message" <<<"$headlines"; then
              known_count=$((known_count + 1))
              sanitizer_known+=("$tool $ch --variant=$variant: \"$message\" ($errors reports): $reason")
              rm -f "$vlog"; continue
            fi
          fi
          rm -f "$vlog"
          cell_of "$rc" "$errors"
          if [[ $part == fail ]]; then worst=fail; sanitizer_notes+=("$tool $ch --variant=$variant: $cell"); fi
          [[ $part == skip && $worst == pass ]] && worst=skip
        done
        case $worst in pass) cell=clean ;; skip) cell=skip ;; fail) cell="errors (see log)" ;; esac
        (( known_count > 0 )) && cell+=" ($known_count known)"
        sanitizer[$tool,$ch]=$cell; sanitizer_parts+=("$worst")
      done
    done
    record sanitizer "$(combine ${sanitizer_parts[@]+"${sanitizer_parts[@]}"})" \
      "$(join ${sanitizer_notes[@]+"${sanitizer_notes[@]}"})"
else
  for tool in "${tools[@]}"; do for ch in "${programs[@]}"; do sanitizer[$tool,$ch]="not installed"; done; done
  record sanitizer fail "compute-sanitizer is not installed: not on PATH nor in $(join "${tool_dirs[@]}")"
fi

else
  for tool in "${tools[@]}"; do for ch in "${programs[@]}"; do sanitizer[$tool,$ch]="not run"; done; done
  record sanitizer skip "not asked for"
fi

# e. ncu, for chapters that ask for it
if wanted ncu; then
  ncu_parts=() ncu_notes=()
  for ch in "${chapters[@]}"; do
    [[ -f $ch/ncu_metrics.txt ]] || continue
    if ! ncu_bin=$(find_tool ncu); then ncu_parts+=(skip); ncu_notes+=("$ch: ncu not installed"); continue; fi
    n=0
    while IFS='|' read -r args metrics; do
      [[ -z ${metrics:-} || $args == \#* ]] && continue  # blank lines and comments
      n=$((n + 1)); log=$outdir/ncu_${ch}_$n.log
      key=$ch
      if [[ $args == @* ]]; then  # "@name args": the chapter's program `name` (its lab, say), not its lesson
        key=$ch.${args%% *}; key=${key/@/}; args=${args#* }
      fi
      read -ra argv <<<"$args"
      COURSE_WAIT_LIMIT_MS=$tool_wait_ms timeout "$run_timeout" "$ncu_bin" --metrics "$metrics" "${program[$key]:-/nonexistent/$key}" ${argv[@]+"${argv[@]}"} >"$log" 2>&1
      case $? in
        0) ncu_parts+=(pass); ncu_notes+=("$ch: ncu_${ch}_$n.log") ;;
        77) ncu_parts+=(skip); ncu_notes+=("$ch: skipped (ncu_${ch}_$n.log)") ;;
        *) ncu_parts+=(fail); ncu_notes+=("$ch: failed (ncu_${ch}_$n.log)") ;;
      esac
    done <"$ch/ncu_metrics.txt"
  done
  if ((${#ncu_parts[@]} == 0)); then
    record ncu skip "no chapter has ncu_metrics.txt"
else
  record ncu "$(combine "${ncu_parts[@]}")" "$(join "${ncu_notes[@]}")"
fi

else
  record ncu skip "not asked for"
fi

# f. summary
overall=pass
for s in "${steps[@]}"; do [[ ${status[$s]} == fail ]] && overall=fail; done
summary=$outdir/summary.md
{
  echo "# GPU check: $( [[ $overall == pass ]] && echo PASSED || echo FAILED )"
  echo
  if commit=$(git rev-parse --short HEAD 2>/dev/null); then
    git diff --quiet HEAD 2>/dev/null || commit+=" (with uncommitted changes)"
  else
    commit="unknown (not a git checkout)"
  fi
  echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC'); commit: $commit"
  if smi=$(nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem --format=csv,noheader 2>/dev/null); then
    while IFS=',' read -r gpu driver sm sm_max mem; do
      echo "- GPU: $gpu, driver${driver}, SM clock${sm} (max${sm_max}), memory clock${mem}"
    done <<<"$smi"
  else
    echo "- GPU: nvidia-smi not available or no GPU visible"
  fi
  nvcc_bin=$(find_tool nvcc) && echo "- nvcc: $("$nvcc_bin" --version | grep -m1 -i 'release')" || echo "- nvcc: not found"
  echo "- cmake: $(cmake --version | head -n1)"
  device_line=$(sed -n 's/^# //p' "$outdir"/bench_*.csv 2>/dev/null | head -n1)
  [[ -n $device_line ]] && echo "- device as the programs see it: $device_line"
  ((quick)) && echo "- quick run: benches at --size=64M"
  echo
  echo "| step | status | note |"
  echo "| --- | --- | --- |"
  for s in "${steps[@]}"; do echo "| $s | ${status[$s]} | ${note[$s]} |"; done
  echo
  echo "Tests: $tests_line (tests.log, tests.junit.xml)"
  [[ -n $failed_tests ]] && { echo; echo "Failed tests:"; echo; echo "$failed_tests"; }
  [[ -n $skip_reasons ]] && { echo; echo "Skipped tests, by reason:"; echo; echo "$skip_reasons"; }
  if [[ -f $outdir/exercises.log ]] && wanted exercises; then
    echo
    echo "## Exercises (starters untouched, then solutions)"
    echo
    echo '```'
    sed -n '/^exercise  /,$p' "$outdir/exercises.log"
    echo '```'
  fi
  if [[ -d $outdir/recordings ]] && wanted recordings; then
    echo
    echo "Recordings of the GPU exercises: $(find "$outdir/recordings" -name '*.txt' | wc -l) in recordings/ (recordings.log);" \
      "\`cp -r $outdir/recordings/. .\` copies them into the tree, then \`scripts/recordings_fresh.py --write-pending\`."
  fi
  echo
  echo "## compute-sanitizer"
  echo
  echo "Each cell: $sanitizer_runs run(s) of the tool on the program at its verify size; a result that differs between runs is a failure."
  echo
  header="| program |" rule="| --- |"
  for tool in "${tools[@]}"; do header+=" $tool |"; rule+=" --- |"; done
  echo "$header"; echo "$rule"
  for ch in "${programs[@]}"; do
    row="| $ch |"
    for tool in "${tools[@]}"; do row+=" ${sanitizer[$tool,$ch]} |"; done
    echo "$row"
  done
  echo
  if (( ${#sanitizer_known[@]} > 0 )); then
    echo "Known reports on correct code (listed in the chapter's sanitizer_known.txt; every other variant is clean):"
    for k in "${sanitizer_known[@]}"; do echo "- $k"; done
    echo
  fi
  echo "## Bandwidth (GB/s counts bytes read plus bytes written)"
  echo
  echo "| program | variant | size | median ms | GB/s | × cudaMemcpy |"
  echo "| --- | --- | --- | ---: | ---: | ---: |"
  rows=$(for ch in "${programs[@]}"; do
    awk -F, -v ch="$ch" '
      function human(b) { return b >= 2^30 ? sprintf("%g GiB", b / 2^30) : b >= 2^20 ? sprintf("%g MiB", b / 2^20) : sprintf("%g KiB", b / 2^10) }
      NF == 7 && $1 != "chapter" && $0 !~ /^#/ {
        timed = $6 != ""
        printf "| %s | %s | %s | %s | %s | %s |\n", ch, ($2 == "cudaMemcpy_d2d" ? "cudaMemcpy D2D (baseline)" : $2), human($3),
          (timed ? sprintf("%.3f", $5) : "-"), (timed ? sprintf("%.1f", $6) : "-"),
          (timed ? sprintf("%.3f", $7) : ($4 == 1 ? "-" : "FAILED"))
      }' "$outdir/bench_$ch.csv" 2>/dev/null
  done)
  echo "${rows:-| (no chapter was timed) | | | | | |}"
  echo
  echo "Chapter pages: \`scripts/update_results.py $outdir\` writes these tables into each README.md."
  if ls "$outdir"/timeline_*.svg >/dev/null 2>&1; then
    echo
    echo "Timelines: $(cd "$outdir" && echo timeline_*.svg); \`scripts/draw_timelines.py --from-results $outdir\` copies them (CSV and SVG) into the chapters' figures folders."
  fi
  echo
  echo "Logs: $outdir"
} >"$summary"
cat "$summary"
[[ $overall == pass ]]
