#!/usr/bin/env python3
"""Tests of student_tree.py (CTest scripts.student_tree): the course's own tree without its answers,
and planted faults on made-up pages. With --build it also grades one CPU exercise in the copy
(slurm/grade.sh): the untouched starter must fail, the solution copied in must pass."""
import re
import shutil
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "student_tree.py"
BUILD = "--build" in sys.argv


def write_copy(out, root=ROOT):
    return subprocess.run([sys.executable, str(SCRIPT), str(out), "--root", str(root)],
                          capture_output=True, text=True)


class StudentTreeOfTheCourse(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.out = Path(cls.tmp.name) / "student"
        cls.result = write_copy(cls.out)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_written(self):
        self.assertEqual(self.result.returncode, 0, self.result.stderr)
        self.assertTrue((self.out / "CMakeLists.txt").is_file())

    def test_no_solutions_and_every_starter(self):
        self.assertEqual(list(self.out.rglob("solutions")), [])
        starters = list(ROOT.glob("[0-9][0-9]_*/exercises/*_test.*"))
        self.assertGreater(len(starters), 0)
        for test in starters:
            self.assertTrue((self.out / test.relative_to(ROOT)).is_file(), test)

    def test_no_quiz_answers(self):
        for page in self.out.rglob("*.md"):
            self.assertNotRegex(page.read_text(encoding="utf-8"), r"<summary>\s*Answer", page)
        self.assertEqual(list(self.out.glob("docs/quizzes/answers/*")), [])
        self.assertEqual(list(self.out.glob("docs/quizzes/*.gift")), [])
        for page in ROOT.glob("[0-9][0-9]_*/README.md"):  # the quiz questions stay
            quiz = re.search(r"^## Quiz\n(.*?)\n1\. (.{20})", page.read_text(encoding="utf-8"), re.S | re.M)
            if quiz:
                copy = (self.out / page.relative_to(ROOT)).read_text(encoding="utf-8")
                self.assertIn("1. " + quiz.group(2), copy, page)

    def test_no_solutions_preset(self):
        presets = (self.out / "CMakePresets.json").read_text()
        self.assertNotIn('"solutions"', presets)
        self.assertIn('"exercises"', presets)

    @unittest.skipUnless(BUILD, "grading the copy builds an exercise: run with --build")
    def test_the_copy_grades_a_starter_as_failed_and_its_solution_as_passed(self):
        grade = ROOT / "slurm" / "grade.sh"
        first = subprocess.run([str(grade), str(self.out), str(Path(self.tmp.name) / "r1"), "batch_count"],
                               capture_output=True, text=True)
        self.assertEqual(first.returncode, 0, first.stderr)
        self.assertIn("01_sync_copy/batch_count: failed", first.stdout)
        shutil.copy(ROOT / "01_sync_copy/exercises/solutions/batch_count.hpp",
                    self.out / "01_sync_copy/exercises/batch_count.hpp")
        second = subprocess.run([str(grade), str(self.out), str(Path(self.tmp.name) / "r2"), "batch_count"],
                                capture_output=True, text=True)
        self.assertIn("01_sync_copy/batch_count: passed", second.stdout)


class PlantedFaults(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.root = Path(self.tmp.name) / "course"
        (self.root / "common" / "course").mkdir(parents=True)
        (self.root / "01_demo" / "exercises" / "solutions").mkdir(parents=True)
        (self.root / "CMakeLists.txt").write_text("project(demo)\n")
        (self.root / "01_demo" / "exercises" / "count.hpp").write_text("// TODO\n")
        (self.root / "01_demo" / "exercises" / "solutions" / "count.hpp").write_text("answer\n")
        self.page = self.root / "01_demo" / "README.md"

    def tearDown(self):
        self.tmp.cleanup()

    def test_a_marked_passage_is_replaced_by_one_line(self):
        self.page.write_text("# demo\n\nbefore\n<!-- answer:begin count -->\nthe count is 4\n"
                             "<!-- answer:end -->\nafter\n")
        out = Path(self.tmp.name) / "out"
        result = write_copy(out, self.root)
        self.assertEqual(result.returncode, 0, result.stderr)
        copy = (out / "01_demo" / "README.md").read_text()
        self.assertNotIn("the count is 4", copy)
        self.assertIn("answers the exercise `count`", copy)
        self.assertIn("before", copy)
        self.assertIn("after", copy)
        self.assertFalse((out / "01_demo" / "exercises" / "solutions").exists())
        self.assertTrue((out / "01_demo" / "exercises" / "count.hpp").is_file())

    def test_an_unclosed_passage_is_refused_and_nothing_is_written(self):
        self.page.write_text("# demo\n<!-- answer:begin count -->\nthe count is 4\n")
        out = Path(self.tmp.name) / "out"
        result = write_copy(out, self.root)
        self.assertEqual(result.returncode, 1)
        self.assertIn("01_demo/README.md:2: answer passage 'count' has no '<!-- answer:end -->'", result.stderr)
        self.assertFalse(out.exists())

    def test_a_folder_that_is_not_empty_is_refused(self):
        out = Path(self.tmp.name) / "out"
        out.mkdir()
        (out / "keep.txt").write_text("mine\n")
        result = write_copy(out, self.root)
        self.assertEqual(result.returncode, 2)
        self.assertEqual((out / "keep.txt").read_text(), "mine\n")


if __name__ == "__main__":
    unittest.main(argv=[arg for arg in sys.argv if arg != "--build"])
