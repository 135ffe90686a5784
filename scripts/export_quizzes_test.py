#!/usr/bin/env python3
"""Tests of export_quizzes.py on made-up chapter pages (CTest scripts.export_quizzes)."""
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent / "export_quizzes.py"

PAGE = """# 01 demo: a page

Text with a [link](REFERENCE.md#lab).

## Quiz

1. Why is `a::b` {braced}?
   <details><summary>Answer</summary>

   Because of [the rule](#rule): 50% = half.
   </details>

2. Second question,
   over two lines?
   <details><summary>Answer</summary>
   A short answer.
   </details>

## Exercises

1. Not a quiz item.
"""


class ExportQuizzes(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.root = Path(self.tmp.name)
        (self.root / "01_demo").mkdir()
        self.page = self.root / "01_demo" / "README.md"
        self.page.write_text(PAGE, encoding="utf-8")

    def tearDown(self):
        self.tmp.cleanup()

    def run_script(self, *args):
        return subprocess.run([sys.executable, str(SCRIPT), "--root", str(self.root), *args],
                              capture_output=True, text=True)

    def test_exports_questions_answers_and_gift(self):
        self.assertEqual(self.run_script().returncode, 0)
        student = (self.root / "docs/quizzes/01_demo.md").read_text()
        self.assertIn("1. Why is `a::b` {braced}?", student)
        self.assertIn("2. Second question,\n   over two lines?", student)
        self.assertNotIn("Because", student)  # no answers in the student copy
        self.assertNotIn("Not a quiz item", student)
        key = (self.root / "docs/quizzes/answers/01_demo.md").read_text()
        self.assertIn("Because of [the rule](../../../01_demo/README.md#rule)", key)
        gift = (self.root / "docs/quizzes/01_demo.gift").read_text()
        self.assertIn(r"::01_demo Q1::[markdown]Why is `a\:\:b` \{braced\}?{####[markdown]Because of the rule\: 50% \= half.}",
                      gift)
        self.assertIn("{####[markdown]A short answer.}", gift)

    def test_check_fails_when_stale_and_passes_when_fresh(self):
        self.assertEqual(self.run_script().returncode, 0)
        self.assertEqual(self.run_script("--check").returncode, 0)
        self.page.write_text(PAGE.replace("A short answer.", "A longer answer."), encoding="utf-8")
        result = self.run_script("--check")
        self.assertEqual(result.returncode, 1)
        self.assertIn("docs/quizzes/01_demo.gift: stale", result.stdout)
        self.assertIn("docs/quizzes/answers/01_demo.md: stale", result.stdout)

    def test_check_names_a_file_no_page_exports(self):
        self.assertEqual(self.run_script().returncode, 0)
        (self.root / "docs/quizzes/99_gone.md").write_text("old\n")
        result = self.run_script("--check")
        self.assertEqual(result.returncode, 1)
        self.assertIn("docs/quizzes/99_gone.md: not an export of any page", result.stdout)

    def test_a_question_without_an_answer_fold_is_refused(self):
        self.page.write_text(PAGE.replace("   <details><summary>Answer</summary>\n   A short", "   A short"),
                             encoding="utf-8")
        result = self.run_script()
        self.assertEqual(result.returncode, 1)
        self.assertIn("01_demo/README.md:", result.stderr)
        self.assertIn("quiz question 2 has no answer fold", result.stderr)
        self.assertFalse((self.root / "docs/quizzes").exists())  # nothing written

    def test_a_page_without_a_quiz_is_refused(self):
        self.page.write_text("# 01 demo\n\nNo quiz here.\n", encoding="utf-8")
        result = self.run_script()
        self.assertEqual(result.returncode, 1)
        self.assertIn("01_demo/README.md: no '## Quiz' section", result.stderr)


if __name__ == "__main__":
    unittest.main()
