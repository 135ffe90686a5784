#!/usr/bin/env python3
"""Tests scripts/recordings_fresh.py on a made-up tree with planted faults (CTest: scripts.recordings_fresh).

    scripts/recordings_fresh_test.py [-v]

The made-up chapter 01_copy has three GPU exercises (alpha, beta, gamma: .cu tests with an Sm80_
suite; alpha's starter includes a chapter header) and a CPU one (count: a .cpp test). In the sound
tree alpha has a recording, written by scripts/record_exercises.py's own writer, and beta and gamma
are pending: the check passes. Each test plants one fault (a stale recording, through the chapter
header or the test; a missing one; a pending exercise with a recording; a recording of a
non-exercise, of a CPU exercise, edited by hand, of a starter that passed; a pending line naming no
GPU exercise or giving no reason) and expects exit 1 with exactly one problem line that names it. A
students' copy (no solutions/) stays fresh when the student has edited a starter, and is still
checked otherwise; --write-pending lists the GPU exercises without a recording and keeps the
reasons already given. No GPU, compiler or build is needed.
"""
import shutil
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

SCRIPTS = Path(__file__).resolve().parent
sys.path.insert(0, str(SCRIPTS))
from record_exercises import recording_text  # noqa: E402
from recordings_fresh import DEFAULT_REASON, source_lines  # noqa: E402

GPU_TEST = """#include COURSE_EXERCISE
#include <gtest/gtest.h>
#include "course/exercise.hpp"
class Sm80_Exercise{cls} : public course::GpuTest {{}};
TEST_F(Sm80_Exercise{cls}, Runs) {{}}
"""
STARTER_RUN = (1, ["alpha: to do: 1 of 1 checks fail (01_copy/exercises/alpha.cu)",
                   "  the block computed before the batch had landed in shared memory"])
SOLUTION_RUN = (0, ["alpha: done: all 1 checks pass"])


class RecordingsFresh(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="recordings_fresh_test_")
        self.root = Path(self.tmp.name)
        (self.root / "scripts").mkdir()
        ex = self.root / "01_copy" / "exercises"
        (ex / "solutions").mkdir(parents=True)
        (self.root / "01_copy" / "CMakeLists.txt").write_text("course_add_chapter(01_copy)\n")
        (self.root / "01_copy" / "copy_model.hpp").write_text("constexpr int kBatch = 4;\n")
        for name in ("alpha", "beta", "gamma"):
            include = '#include "copy_model.hpp"\n' if name == "alpha" else ""
            (ex / f"{name}.cu").write_text(include + f"// TODO: {name}\n")
            (ex / "solutions" / f"{name}.cu").write_text(include + f"// done: {name}\n")
            (ex / f"{name}_test.cu").write_text(GPU_TEST.format(cls=name.capitalize()))
        (ex / "count.hpp").write_text("int count() { return 0; }  // TODO\n")
        (ex / "solutions" / "count.hpp").write_text("int count() { return 4; }\n")
        (ex / "count_test.cpp").write_text('#include COURSE_EXERCISE\nTEST(HostCount, Four) {}\n')
        self.write_recording("alpha")
        self.pending("beta  # not recorded yet\ngamma  # not recorded yet\n")

    def tearDown(self):
        self.tmp.cleanup()

    def write_recording(self, name, runs=None, into=None):
        ex = self.root / "01_copy" / "exercises"
        text = recording_text(name, "01_copy", "NVIDIA H200", 90, "570.86.15", "CUDA 13.0 (nvcc V13.0.88)",
                              "abc1234", source_lines(self.root, next(ex.glob(f"{name}_test.c*"))),
                              runs or {"starter": STARTER_RUN, "solution": SOLUTION_RUN})
        path = ex / "recorded" / (into or f"{name}.txt")
        path.parent.mkdir(exist_ok=True)
        path.write_text(text)
        return path

    def pending(self, text):
        (self.root / "scripts" / "recordings_pending.txt").write_text("# made-up pending list\n" + text)

    def run_check(self, *args):
        result = subprocess.run([sys.executable, str(SCRIPTS / "recordings_fresh.py"), "--root", str(self.root),
                                 *args], capture_output=True, text=True, timeout=60)
        return result.returncode, result.stdout.splitlines()

    def assert_one_problem(self, *expected):
        code, lines = self.run_check()
        self.assertEqual(code, 1, "\n".join(lines))
        problems = lines[:-1]  # the last line is the summary
        self.assertEqual(len(problems), 1, "\n".join(lines))
        for part in expected:
            self.assertIn(part, problems[0])
        self.assertIn("1 problem(s)", lines[-1])

    def test_the_sound_tree_passes(self):
        code, lines = self.run_check()
        self.assertEqual(code, 0, "\n".join(lines))
        self.assertEqual(lines, ["recordings: 1 of 3 GPU exercises recorded, 2 pending; all fresh"])

    def test_a_stale_recording_through_a_chapter_header(self):
        (self.root / "01_copy" / "copy_model.hpp").write_text("constexpr int kBatch = 8;\n")
        self.assert_one_problem("01_copy/exercises/recorded/alpha.txt: stale", "01_copy/copy_model.hpp changed",
                                "record_exercises.py alpha")

    def test_a_stale_recording_through_the_test(self):
        with open(self.root / "01_copy" / "exercises" / "alpha_test.cu", "a") as test:
            test.write("TEST_F(Sm80_ExerciseAlpha, RunsTwice) {}\n")
        self.assert_one_problem("alpha.txt: stale", "01_copy/exercises/alpha_test.cu changed")

    def test_a_stale_recording_through_a_new_include(self):
        with open(self.root / "01_copy" / "exercises" / "solutions" / "alpha.cu", "a") as solution:
            solution.write('#include "extra.cuh"\n')
        (self.root / "01_copy" / "exercises" / "extra.cuh").write_text("// more\n")
        self.assert_one_problem("alpha.txt: stale", "solutions/alpha.cu changed",
                                "01_copy/exercises/extra.cuh is new")

    def test_a_missing_recording(self):
        self.pending("beta  # not recorded yet\n")
        self.assert_one_problem("01_copy/exercises/recorded/gamma.txt: missing", "'gamma'", "recordings_pending.txt")

    def test_a_pending_exercise_with_a_recording(self):
        self.write_recording("beta")
        self.assert_one_problem("'beta' has a recording: remove its line")

    def test_a_recording_of_a_non_exercise(self):
        self.write_recording("alpha", into="delta.txt")
        self.assert_one_problem("recorded/delta.txt", "'delta' is not an exercise of 01_copy")

    def test_a_recording_of_a_cpu_exercise(self):
        self.write_recording("count")
        self.assert_one_problem("recorded/count.txt", "CPU exercise")

    def test_a_recording_edited_by_hand(self):
        path = self.root / "01_copy" / "exercises" / "recorded" / "alpha.txt"
        lines = path.read_text().splitlines()
        at = next(i for i, line in enumerate(lines) if line.startswith("source: "))
        lines[at] = "source: " + "0" * 64 + " " + lines[at].split(" ", 2)[2]  # a hash made up to look fresh
        path.write_text("\n".join(lines) + "\n")
        self.assert_one_problem("alpha.txt: cannot be read", "'sources:' hash")

    def test_a_recording_cut_short(self):
        path = self.root / "01_copy" / "exercises" / "recorded" / "alpha.txt"
        path.write_text("\n".join(path.read_text().splitlines()[:-1]) + "\n")
        self.assert_one_problem("alpha.txt: cannot be read", "1 output lines announced, only 0 follow")

    def test_a_recording_of_a_starter_that_passed(self):
        self.write_recording("alpha", runs={"starter": (0, ["alpha: done"]), "solution": SOLUTION_RUN})
        self.assert_one_problem("alpha.txt: the untouched starter exited 0, not 1")

    def test_a_pending_line_naming_no_gpu_exercise(self):
        self.pending("beta  # not recorded yet\ngamma  # not recorded yet\nnarrow_box  # removed since\n")
        self.assert_one_problem("'narrow_box' is not a GPU exercise of the course: remove its line")

    def test_a_pending_line_without_a_reason(self):
        self.pending("beta  # not recorded yet\ngamma\n")
        self.assert_one_problem("recordings_pending.txt:3", "'gamma' has no reason")

    def test_a_students_copy_stays_fresh(self):
        shutil.rmtree(self.root / "01_copy" / "exercises" / "solutions")
        with open(self.root / "01_copy" / "exercises" / "alpha.cu", "a") as starter:  # the student's work
            starter.write("// done by the student\n")
        code, lines = self.run_check()
        self.assertEqual(code, 0, "\n".join(lines))
        (self.root / "01_copy" / "copy_model.hpp").write_text("constexpr int kBatch = 8;\n")  # still checked
        self.assert_one_problem("alpha.txt: stale", "01_copy/copy_model.hpp changed")

    def test_write_pending(self):
        self.pending("gamma  # its kernel is being rewritten\nnarrow_box  # removed since\n")
        code, lines = self.run_check("--write-pending")
        self.assertEqual(code, 0, "\n".join(lines))
        listed = [line for line in (self.root / "scripts" / "recordings_pending.txt").read_text().splitlines()
                  if line and not line.startswith("#")]
        self.assertEqual(listed, ["beta   # " + DEFAULT_REASON, "gamma  # its kernel is being rewritten"])


if __name__ == "__main__":
    unittest.main()
