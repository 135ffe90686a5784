#!/usr/bin/env python3
"""Tests scripts/exercise.py on a copy of the course (CTest: scripts.exercise).

In a temporary copy of the tree (the files git tracks or would track), on the CPU exercise
03_barrier/exercises/ring_cursor: the untouched starter fails in at most 30 lines that carry the
checks' sentences and none of GoogleTest's expressions; with the solution copied over the starter
it passes without any other command; with the starter put back it fails again (the exercise is
rebuilt, never graded from a stale program); with a typo in it, the compiler's error is shown in
a few lines; with the build folder's build file gone (a configure that stopped half-way), it is
configured again. A name that is no exercise exits 2 naming near ones.
The exercises preset's summary (exercise.py --summary) on a made-up run of 12 chapters' exercises:
one line per chapter's verdicts, the skip reasons grouped, the JUnit file removed once read.
A recording shown beside "not graded here": a made-up exercise of 03_barrier whose GPU check always
skips (so it is not graded on any machine) and a made-up recording of it, its starter's output
longer than the screen: exercise.py exits 77 within 30 lines, naming the GPU and the date, the
starter's first lines and how many more there are, and the solution's lines; once the student has
edited the starter it is still fresh, and once the test has changed it says stale, naming the test.
"""
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
from record_exercises import recording_text  # noqa: E402  (the recordings' own writer)
from recordings_fresh import source_lines  # noqa: E402
EXERCISE = "ring_cursor"
STARTER = Path("03_barrier/exercises/ring_cursor.hpp")
SOLUTION = Path("03_barrier/exercises/solutions/ring_cursor.hpp")
LEAKS = ("Which is:", "Expected equality", "Value of:", "Actual:", "Expected:", "-byte object <")


def copy_tree(to):
    listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT,
                            stdout=subprocess.PIPE, check=True).stdout.decode().split("\0")
    for name in filter(None, listed):
        source = ROOT / name
        if source.is_file():
            (to / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, to / name)


def check(tree, name, want_code):
    result = subprocess.run([sys.executable, str(tree / "scripts" / "exercise.py"), name], cwd=tree,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines = result.stdout.splitlines()
    print(f"--- exercise.py {name}: exit {result.returncode}, {len(lines)} lines")
    print(result.stdout, end="")
    problems = []
    if result.returncode != want_code:
        problems.append(f"exercise.py {name} exited {result.returncode}, expected {want_code}")
    if len(lines) > 30:
        problems.append(f"exercise.py {name} printed {len(lines)} lines, more than 30")
    for leak in LEAKS:
        if leak in result.stdout:
            problems.append(f"exercise.py {name} printed GoogleTest's '{leak}'")
    return result.stdout, problems


def case(name, status, output=""):
    return f'<testcase name="{name}" status="{status}"><system-out>{output}</system-out></testcase>'


def check_summary(scratch):
    lacks = "no CUDA device present"
    cases = [case("01_copy.exercises.sum.HostSum.Small", "run"),
             case("01_copy.exercises.sum.HostSum.Large", "fail"),
             case("01_copy.exercises.fill.HostFill.All", "run"),
             case("01_copy.exercises.kernel.Sm80_Kernel.One", "notrun",
                  f"x.hpp:3: Skipped&#10;needs a GPU of compute capability 8.0 or newer for mbarrier; {lacks}")]
    cases += [case(f"{10 + i // 3}_topic.exercises.tma{i}.Sm90_Tma.One", "notrun",
                   f"x.hpp:3: Skipped&#10;needs a GPU of compute capability 9.0 or newer for TMA; {lacks}")
              for i in range(33)]  # 11 more chapters of 3 exercises: the course's 12 chapters
    junit = scratch / "course_run.xml"
    junit.write_text("<testsuite>" + "".join(cases) + "</testsuite>")
    result = subprocess.run([sys.executable, str(ROOT / "scripts" / "exercise.py"), "--summary", str(junit)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    print("--- exercise.py --summary on a made-up run")
    print(result.stdout, end="")
    lines = result.stdout.strip().splitlines()
    problems = []
    want = [
        "==== Exercises: 1 of 36 done, 1 to do, 34 not graded here ====",
        "  01_copy   done: fill; to do: sum; not graded here: kernel",
        "  10_topic  not graded here: tma0, tma1, tma2",
        f"  34 exercises: {lacks}; they need compute capability 8.0, 9.0",
    ]
    for line in want:
        if line not in lines:
            problems.append(f"the summary lacks the line '{line}'")
    if len(lines) > 40:
        problems.append(f"the summary has {len(lines)} lines, more than 40")
    if junit.exists():
        problems.append("the summary left the run's JUnit file behind (a later run would print it again)")
    return problems


MADE_UP = Path("03_barrier/exercises")
MADE_UP_SKIP = "needs a GPU of compute capability 9.0 or newer for TMA; made up for this test"
MADE_UP_TEST = f"""#include COURSE_EXERCISE
#include <gtest/gtest.h>
TEST(HostExerciseMadeUp, Builds) {{ EXPECT_EQ(exercise::made_up(), 0); }}
TEST(Sm90_ExerciseMadeUp, NeedsAGpu) {{ GTEST_SKIP() << "{MADE_UP_SKIP}"; }}
"""


def add_made_up_exercise(tree):
    """A made-up exercise whose GPU check skips on every machine, and a made-up recording of it."""
    folder = tree / MADE_UP
    (folder / "made_up.hpp").write_text("#pragma once\nnamespace exercise {\ninline int made_up() { return 0; }  "
                                        "// TODO\n}  // namespace exercise\n")
    (folder / "solutions" / "made_up.hpp").write_text("#pragma once\nnamespace exercise {\ninline int made_up() "
                                                      "{ return 0; }\n}  // namespace exercise\n")
    (folder / "made_up_test.cpp").write_text(MADE_UP_TEST)
    starter = [f"made_up: to do: 1 of 2 checks fail ({MADE_UP}/made_up.hpp)"]
    starter += [f"  made-up sentence {i} of the bounded wait's diagnosis" for i in range(2, 41)]
    starter[5] += " and then a very long tail" * 20  # longer than a line should be shown
    solution = ["made_up: done: all 2 checks pass",
                "  speed (Sm90_ExerciseMadeUp.NeedsAGpu): 0.93 of cudaMemcpy device-to-device, passed"]
    text = recording_text("made_up", "03_barrier", "NVIDIA H200", 90, "570.86.15", "CUDA 13.0 (nvcc V13.0.88)",
                          "abc1234", source_lines(tree, folder / "made_up_test.cpp"),
                          {"starter": (1, starter), "solution": (0, solution)})
    (folder / "recorded").mkdir(exist_ok=True)
    (folder / "recorded" / "made_up.txt").write_text(text)


def check_recording_shown(tree):
    problems = []
    out, found = check(tree, "made_up", 77)
    problems += found
    lines = out.splitlines()
    for want in ("made_up: not graded here:", "Recorded on NVIDIA H200, ", f"({MADE_UP}/recorded/made_up.txt):",
                 "  the untouched starter printed (exit 1):",
                 f"    made_up: to do: 1 of 2 checks fail ({MADE_UP}/made_up.hpp)",
                 "  the solution printed (exit 0):", "    made_up: done: all 2 checks pass",
                 "    speed (Sm90_ExerciseMadeUp.NeedsAGpu): 0.93 of cudaMemcpy device-to-device, passed"):
        if not any(line.startswith(want) or want in line for line in lines):
            problems.append(f"the recording shown lacks '{want}'")
    if not any(line.startswith("    ... ") and line.endswith(f"more lines in {MADE_UP}/recorded/made_up.txt")
               for line in lines):
        problems.append("the recording's long starter output is not cut with a line saying how many more there are")
    if any(len(line) > 220 for line in lines):
        problems.append("a recorded line longer than 200 characters is shown whole")
    if "stale" in out:
        problems.append("a fresh recording is called stale")

    with open(tree / MADE_UP / "made_up.hpp", "a") as starter:  # the student's work: no staleness
        starter.write("// the student's edit\n")
    with open(tree / MADE_UP / "made_up_test.cpp", "a") as test:  # the exercise changed: stale
        test.write("// a changed test\n")
    out, found = check(tree, "made_up", 77)
    problems += found
    stale = [line for line in out.splitlines() if "stale" in line]
    if len(stale) != 1 or f"{MADE_UP}/made_up_test.cpp changed" not in stale[0] or "made_up.hpp" in stale[0]:
        problems.append("a recording whose test changed is not called stale in one line naming the test "
                        "(and only it)")
    return problems


def main():
    problems = []
    with tempfile.TemporaryDirectory(prefix="exercise_test_") as scratch:
        tree = Path(scratch) / "tree"
        problems += check_summary(Path(scratch))
        copy_tree(tree)
        add_made_up_exercise(tree)

        out, found = check(tree, "ring_cursr", 2)
        problems += found
        if "near names: ring_cursor" not in out:
            problems.append("a misspelt name does not list the exercise it is near")

        out, found = check(tree, EXERCISE, 1)  # the untouched starter
        problems += found
        if "ring of" not in out:
            problems.append("the failing starter's output carries none of its checks' sentences")

        shutil.copy(tree / SOLUTION, tree / STARTER)  # as an edit: a new time stamp
        problems += check(tree, EXERCISE, 0)[1]

        shutil.copy(ROOT / STARTER, tree / STARTER)  # put back: must be rebuilt and fail again
        problems += check(tree, EXERCISE, 1)[1]

        with open(tree / STARTER, "a") as starter:  # a typo: the compiler's error, in a few lines
            starter.write("\nint broken_line_of_the_student = ;\n")
        out, found = check(tree, EXERCISE, 1)
        problems += found
        if "does not compile" not in out or "error" not in out:
            problems.append("a starter that does not compile is not reported with the compiler's error")

        # A configure that stopped half-way: the cache is there, the build file is not. The
        # folder is configured again, not reported as a compile error with nothing to show.
        shutil.copy(ROOT / STARTER, tree / STARTER)
        for build_file in ("Makefile", "build.ninja"):
            (tree / "build-exercises" / build_file).unlink(missing_ok=True)
        out, found = check(tree, EXERCISE, 1)
        problems += found
        if "configuring build-exercises/" not in out or "does not compile" in out:
            problems.append("a build folder without its build file is not configured again")

        problems += check_recording_shown(tree)
    for problem in problems:
        print("FAILED: " + problem)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
