#!/usr/bin/env python3
"""Tests scripts/exercise.py on a copy of the course (CTest: scripts.exercise).

In a temporary copy of the tree (the files git tracks or would track), on the CPU exercise
03_barrier/exercises/ring_cursor: the untouched starter fails in at most 30 lines that carry the
checks' sentences and none of GoogleTest's expressions; with the solution copied over the starter
it passes without any other command; with the starter put back it fails again (the exercise is
rebuilt, never graded from a stale program); with a typo in it, the compiler's error is shown in
a few lines. A name that is no exercise exits 2 naming near ones.
The exercises preset's summary (exercise.py --summary) on a made-up run of 12 chapters' exercises:
one line per chapter's verdicts, the skip reasons grouped, the JUnit file removed once read.
"""
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
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


def main():
    problems = []
    with tempfile.TemporaryDirectory(prefix="exercise_test_") as scratch:
        tree = Path(scratch) / "tree"
        problems += check_summary(Path(scratch))
        copy_tree(tree)

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
    for problem in problems:
        print("FAILED: " + problem)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
