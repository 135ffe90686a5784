#!/usr/bin/env python3
"""Tests of scripts/page_limits.py on a made-up chapter with planted faults (CTest: scripts.page_limits).

    scripts/page_limits_test.py [-v]

Each test lays out a repository with one chapter, 01_demo (lesson `demo`), whose core page meets
every limit, plants one fault, and checks that the script names it (file, rule) and fails, or, with
the chapter listed as pending, reports it and passes.
"""
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent / "page_limits.py"
REMEMBER = "## What to remember\n\n- one\n- two\n- three\n- four\n\n## Quiz\n\n1. A question?\n"
CMAKE = "# The lesson.\ncourse_add_chapter(\n  LESSONS   demo\n  LAB       demo_lab\n  MIN_ARCH  80)\n"


def page(body="", remember=REMEMBER, top="See the [reference page](REFERENCE.md).\n"):
    return ("# 01 demo\n\n" + top + "\n![The ring](figures/ring.svg)\n\nSome prose.\n\n"
            "```cpp\nint code_is_not_prose = 0;\n```\n\n" + body + remember)


class PageLimits(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.root = Path(self.tmp.name)
        self.chapter = self.root / "01_demo"
        (self.chapter / "figures").mkdir(parents=True)
        (self.chapter / "figures" / "ring.svg").write_text("<svg/>\n")
        (self.chapter / "CMakeLists.txt").write_text(CMAKE)
        (self.chapter / "demo.cu").write_text("int main() { return 0; }\n")
        (self.chapter / "demo_lab.cu").write_text("// " + "x" * 150 + "\n")  # the lab has no width limit
        (self.chapter / "REFERENCE.md").write_text("# 01 demo: reference\n")
        (self.root / "scripts").mkdir()
        self.pending = self.root / "scripts" / "page_limits_pending.txt"
        self.pending.write_text("# none\n")
        self.readme = self.chapter / "README.md"
        self.readme.write_text(page())

    def tearDown(self):
        self.tmp.cleanup()

    def run_script(self, *extra):
        return subprocess.run([sys.executable, str(SCRIPT), "--root", str(self.root), *extra],
                              capture_output=True, text=True)

    def assert_fault(self, *expected):
        result = self.run_script()
        self.assertEqual(result.returncode, 1, result.stdout + result.stderr)
        for text in expected:
            self.assertIn(text, result.stderr)
        # Listed as pending, the same fault is reported and does not fail the check.
        self.pending.write_text("01_demo  # being reshaped\n")
        result = self.run_script()
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        self.assertIn("01_demo: pending, ", result.stdout)
        for text in expected:
            self.assertIn(f"pending: {text}", result.stdout)

    def test_a_page_within_the_limits_passes(self):
        result = self.run_script()
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("01_demo: meets the limits", result.stdout)

    def test_a_pending_chapter_that_meets_the_limits_is_told_to_leave_the_list(self):
        self.pending.write_text("01_demo\n")
        result = self.run_script()
        self.assertEqual(result.returncode, 0)
        self.assertIn("01_demo: pending, meets the limits: remove it from page_limits_pending.txt", result.stdout)

    def test_too_many_lines(self):
        self.readme.write_text(page(body="\n" * 450))
        self.assert_fault("01_demo/README.md: 472 lines, more than 450")

    def test_too_many_words_of_prose(self):
        self.readme.write_text(page(body="word " * 3473 + "\n"))
        self.assert_fault("01_demo/README.md: 3501 words of prose")

    def test_code_blocks_and_comments_are_not_prose(self):
        self.readme.write_text(page(body="```\n" + "code " * 4000 + "\n```\n<!-- " + "hidden " * 4000 +
                                    "\n -->\n~~~\n" + "more " * 100 + "\n~~~\n"))
        result = self.run_script()
        self.assertEqual(result.returncode, 0, result.stderr)

    def test_no_what_to_remember(self):
        self.readme.write_text(page(remember="## Quiz\n\n1. A question?\n"))
        self.assert_fault("01_demo/README.md: no heading \"What to remember\"")

    def test_too_few_bullets(self):
        self.readme.write_text(page(remember="## What to remember\n\n- one\n- two\n- three\n\n## Quiz\n"))
        self.assert_fault("01_demo/README.md:13: \"What to remember\" has 3 bullets, not 4 to 6")

    def test_too_many_bullets_and_nested_ones_do_not_count(self):
        bullets = "".join(f"- {n}\n  - detail\n" for n in range(7))
        self.readme.write_text(page(remember="## What to remember\n\n" + bullets + "\n## Quiz\n"))
        self.assert_fault("01_demo/README.md:13: \"What to remember\" has 7 bullets, not 4 to 6")

    def test_no_link_to_the_reference_page(self):
        self.readme.write_text(page(top="No link here (REFERENCE.md is only named).\n"))
        self.assert_fault("01_demo/README.md: no link to REFERENCE.md")

    def test_no_link_needed_without_a_reference_page(self):
        (self.chapter / "REFERENCE.md").unlink()
        self.readme.write_text(page(top=""))
        self.assertEqual(self.run_script().returncode, 0)

    def test_no_figure(self):
        self.readme.write_text(page().replace("![The ring](figures/ring.svg)", "A ring, not drawn."))
        self.assert_fault("01_demo/README.md: no figure")

    def test_a_figure_that_does_not_exist(self):
        self.readme.write_text(page().replace("ring.svg", "rings.svg"))
        self.assert_fault("01_demo/README.md:5: figure figures/rings.svg does not exist")

    def test_a_figure_in_a_comment_does_not_count(self):
        self.readme.write_text(page().replace("![The ring](figures/ring.svg)", "<!-- ![x](figures/ring.svg) -->"))
        self.assert_fault("01_demo/README.md: no figure")

    def test_a_long_lesson_line(self):
        (self.chapter / "demo.cu").write_text("int a;\n" + "// " + "y" * 98 + "\nint b;\n// " + "z" * 97 + "\n")
        self.assert_fault("01_demo/demo.cu: 1 line(s) longer than 100 characters (wrap them): line 2")

    def test_a_missing_lesson(self):
        (self.chapter / "demo.cu").unlink()
        self.assert_fault("01_demo/demo.cu: listed in LESSONS but missing")

    def test_a_pending_entry_that_is_not_a_chapter_is_a_bad_file(self):
        self.pending.write_text("01_demo\n01_dmeo\n")
        result = self.run_script()
        self.assertEqual(result.returncode, 2)
        self.assertEqual(result.stderr.strip(), f"{self.pending}:2: '01_dmeo' is not a chapter folder")


if __name__ == "__main__":
    unittest.main()
