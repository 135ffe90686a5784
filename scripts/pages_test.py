#!/usr/bin/env python3
"""Tests of scripts/pages.py on made-up chapters with core and reference pages (CTest: scripts.pages).

    scripts/pages_test.py [-v]
"""
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent / "pages.py"
SOURCE = "int before;\n/// [kernel]\n  __global__ void k() {}\n/// [kernel]\n"


class Pages(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.root = Path(self.tmp.name)
        for chapter in ("01_demo", "02_next"):
            (self.root / chapter).mkdir()
            (self.root / chapter / "demo.cu").write_text(SOURCE)
        self.core = self.root / "01_demo" / "README.md"
        self.reference = self.root / "01_demo" / "REFERENCE.md"
        self.core.write_text("# 01 demo\n\n## Results {#ch01_results}\n\nSee @ref ch01_lab \"the lab\".\n")
        self.reference.write_text("# 01 demo: reference\n\n## The lab {#ch01_lab}\n\n"
                                  "<!-- snippet: demo.cu kernel -->\n<!-- /snippet -->\n"
                                  "Back to @ref ch01_results \"the results\" and @ref ch01_demo \"the page\"; "
                                  "on to @ref ch02_more \"02's rows\" and @ref ch02_next_reference \"its reference\".\n")
        (self.root / "02_next" / "README.md").write_text("# 02 next\n\nSee @ref ch01_demo_reference.\n")
        (self.root / "02_next" / "REFERENCE.md").write_text("# 02 next: reference\n\n<a name=\"ch02_more\"></a>\n## More\n")

    def tearDown(self):
        self.tmp.cleanup()

    def run_script(self, *extra):
        return subprocess.run([sys.executable, str(SCRIPT), "--root", str(self.root), *extra],
                              capture_output=True, text=True)

    def test_reference_pages_get_snippets_and_links_in_both_directions(self):
        result = self.run_script()
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("4 pages, 1 code blocks", result.stdout)
        core, reference = self.core.read_text(), self.reference.read_text()
        self.assertIn("See [the lab](REFERENCE.md#ch01_lab).", core)
        self.assertIn('<a name="ch01_lab"></a>\n## The lab\n', reference)
        self.assertIn("From [`demo.cu`](demo.cu):\n```cpp\n__global__ void k() {}\n```", reference)
        self.assertIn("Back to [the results](README.md#ch01_results) and [the page](README.md); on to "
                      "[02's rows](../02_next/REFERENCE.md#ch02_more) and "
                      "[its reference](../02_next/REFERENCE.md).", reference)
        self.assertIn("See [01 demo: reference](../01_demo/REFERENCE.md).",
                      (self.root / "02_next" / "README.md").read_text())
        self.assertEqual(self.run_script("--check").returncode, 0)

    def test_check_names_a_stale_reference_page_and_writes_nothing(self):
        self.assertEqual(self.run_script().returncode, 0)
        stale = self.reference.read_text().replace("__global__ void k() {}", "__global__ void old() {}")
        self.reference.write_text(stale)
        result = self.run_script("--check")
        self.assertEqual(result.returncode, 1)
        self.assertIn("01_demo/REFERENCE.md: its code blocks differ from the sources", result.stderr)
        self.assertEqual(self.reference.read_text(), stale)

    def test_a_label_defined_on_both_pages_is_an_error(self):
        self.reference.write_text(self.reference.read_text() + "\n## Again {#ch01_results}\n")
        result = self.run_script("--check")
        self.assertEqual(result.returncode, 1)
        self.assertIn("label 'ch01_results' is also defined at", result.stderr)


if __name__ == "__main__":
    unittest.main()
