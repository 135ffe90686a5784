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


class SiteCopy(unittest.TestCase):
    """pages.py --site: the copies Doxygen reads, with the site's labels, links and navigation, and
    without what Doxygen 1.9.4 renders wrongly."""

    CORE = """# 01 demo: the first chapter

<a name="ch01_start"></a>
## Start with `__grid_constant__` and **bold** and *it*

A code span with quotes, `wait on 'full', stage 0`, and one without, `x`. The option --size=1M
in prose and `--size=1M` in code. An *emphasis* and **bold with `code`: here**. See chapter 02, chapters
01 and 02, [chapter 02](../02_next/README.md), `chapter 02` and "a *quoted* phrase".
The year
124. is not a list item.

![A caption over
two lines](figures/demo.svg)

1. A question?
   <details><summary>Answer</summary>

   The answer, with `code`.
   </details>

```cpp
void** p = nullptr;  // **not bold**, --not-an-option, chapter 02
```

Back to [the start](#ch01_start), on to the [docs page](../docs/guide.md#guide_part).
Run [the tool](../scripts/tool.py) on [`demo.cu`](demo.cu).
"""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.root = Path(self.tmp.name)
        for chapter in ("01_demo", "02_next"):
            (self.root / chapter).mkdir()
            (self.root / chapter / "demo.cu").write_text(SOURCE)
        (self.root / "01_demo" / "README.md").write_text(self.CORE)
        (self.root / "01_demo" / "REFERENCE.md").write_text("# 01 demo: reference\n\nMore.\n")
        (self.root / "02_next" / "README.md").write_text("# 02 next\n\nBack to chapter 01.\n")
        (self.root / "docs").mkdir()
        (self.root / "docs" / "async_model.md").write_text("# Before the mechanisms\n\nRead it first.\n")
        (self.root / "docs" / "guide.md").write_text(
            "# A guide\n\n<a name=\"guide_part\"></a>\n## Part\n\nSee [the model](async_model.md) and "
            "[01](../01_demo/README.md#ch01_start).\n\n## Two\n\n## Three\n")
        (self.root / "docs" / "topics.dox").write_text("/**\n@page topics Topics\n\nAll.\n*/\n/**\n@page topic_a A\n\nOne.\n*/\n")
        self.main = self.root / "mainpage.md"
        self.main.write_text("# The course {#mainpage}\n\nWelcome.\n")
        self.out = self.root / "site"
        result = subprocess.run([sys.executable, str(SCRIPT), "--root", str(self.root), "--site", str(self.out),
                                 "--mainpage", str(self.main)], capture_output=True, text=True)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.core = (self.out / "ch01_demo.md").read_text()

    def tearDown(self):
        self.tmp.cleanup()

    def test_an_answer_fold_keeps_its_answer(self):
        self.assertIn("<details><summary>Answer</summary>\n   The answer, with `code`.\n   </details>", self.core)

    def test_text_fixes_outside_code_only(self):
        self.assertIn("`` wait on 'full', stage 0 ``", self.core)       # not read as a quotation
        self.assertIn("`x`", self.core)
        self.assertIn(r"The option \--size=1M", self.core)               # not an en dash
        self.assertIn("`--size=1M` in code", self.core)
        self.assertIn("An <em>emphasis</em> and <b>bold with `code`: here</b>", self.core)
        self.assertIn("\u201ca <em>quoted</em> phrase\u201d", self.core)
        self.assertIn("The year\n124\\. is not a list item.", self.core)
        self.assertIn("![A caption over two lines](figures/demo.svg)", self.core)
        # A code block is the code.
        self.assertIn("void** p = nullptr;  // **not bold**, --not-an-option, chapter 02\n", self.core)

    def test_a_heading_keeps_only_its_words_and_label(self):
        self.assertIn(r"## Start with \_\_grid\_constant\_\_ and bold and it {#ch01_start}", self.core)

    def test_chapter_mentions_and_links_become_references(self):
        self.assertIn('See @ref ch02_next "chapter 02", chapters\n01 and @ref ch02_next "02", '
                      '@ref ch02_next "chapter 02", `chapter 02`', self.core)
        self.assertIn('Back to @ref ch01_start "the start", on to the @ref guide_part "docs page".', self.core)
        self.assertIn("Back to @ref ch01_demo \"chapter 01\".", (self.out / "ch02_next.md").read_text())
        # A chapter's file links its listing; any other file of the checkout keeps only its text.
        self.assertIn("Run the tool on [`demo.cu`](demo_8cu-example.html).", self.core)
        guide = (self.out / "guide.md").read_text()
        self.assertIn('## Part {#guide_part}', guide)
        self.assertIn('See @ref async_model "the model" and @ref ch01_start "01".', guide)
        self.assertTrue(guide.startswith("# A guide {#guide}\n"))
        self.assertIn("[TOC]", guide)                                   # three sections or more

    def test_every_page_links_its_neighbours_in_reading_order(self):
        inputs = (self.out / "inputs.doxyfile").read_text()
        order = [Path(p).stem for p in inputs.replace("\\", " ").split('"')[1::2]]
        self.assertEqual(order, ["mainpage", "async_model", "chapters", "ch01_demo", "ch01_demo_reference",
                                 "ch02_next", "topics", "guide", "examples_by_chapter", "examples"])
        main = (self.out / "mainpage.md").read_text()
        self.assertIn('<span class="course-nav">Next: @ref async_model "Before the mechanisms" &rarr;</span>', main)
        self.assertNotIn("Previous", main)
        self.assertIn('&larr; Previous: @ref chapters "The chapters" &nbsp;&middot;&nbsp; '
                      'Next: @ref ch01_demo_reference "01 demo: reference" &rarr;', self.core)
        topics = (self.out / "topics.dox").read_text()
        self.assertIn('@page topic_a A\n\n<span class="course-nav">&larr; Previous: @ref topics "Topics" '
                      '&nbsp;&middot;&nbsp; Next: @ref guide "A guide" &rarr;</span>', topics)

    def test_the_examples_page_lists_the_files_by_chapter(self):
        examples = (self.out / "examples_by_chapter.dox").read_text()
        self.assertIn("@section examples_01_demo 01_demo", examples)
        self.assertLess(examples.index("examples_01_demo"), examples.index("examples_02_next"))
        self.assertIn("- [demo.cu](demo_8cu-example.html): A lesson, in full.", examples)
        self.assertIn('@example demo.cu\nA lesson of chapter @ref ch01_demo "01_demo", in full.',
                      (self.out / "examples.dox").read_text())


class DocsPages(unittest.TestCase):
    def test_check_names_a_docs_page_whose_quoted_test_is_stale(self):
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            (root / "01_demo").mkdir()
            (root / "01_demo" / "README.md").write_text("# 01 demo\n")
            (root / "common" / "tests" / "model").mkdir(parents=True)
            (root / "common" / "tests" / "model" / "model_test.cu").write_text(SOURCE)
            (root / "docs").mkdir()
            page = root / "docs" / "guide.md"
            page.write_text("# A guide {#guide}\n\n@snippet model_test.cu kernel\n")
            run = lambda *extra: subprocess.run([sys.executable, str(SCRIPT), "--root", str(root), *extra],
                                                capture_output=True, text=True)
            self.assertEqual(run().returncode, 0)
            text = page.read_text()
            self.assertTrue(text.startswith("# A guide {#guide}\n"))  # labels stay without --docs
            self.assertIn("From [`model_test.cu`](../common/tests/model/model_test.cu):\n```cpp\n"
                          "__global__ void k() {}\n```", text)
            self.assertEqual(run("--check").returncode, 0)
            page.write_text(text.replace("void k()", "void old()"))
            result = run("--check")
            self.assertEqual(result.returncode, 1)
            self.assertIn("docs/guide.md: its code blocks differ from the sources", result.stderr)

    def test_docs_turns_a_docs_page_into_plain_markdown_and_leaves_code_spans(self):
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            (root / "01_demo").mkdir()
            (root / "01_demo" / "README.md").write_text("# 01 demo\n\n## Results {#ch01_results}\n")
            (root / "docs").mkdir()
            page = root / "docs" / "guide.md"
            page.write_text("# A guide {#guide}\n\n## Part {#guide_part}\n\nSee @ref ch01_results \"the results\", "
                            "@ref guide_part, and `@ref ch01_demo` as written.\n")
            result = subprocess.run([sys.executable, str(SCRIPT), "--root", str(root), "--docs"],
                                    capture_output=True, text=True)
            self.assertEqual(result.returncode, 0, result.stderr)
            self.assertEqual(page.read_text(), "# A guide\n\n<a name=\"guide_part\"></a>\n## Part\n\n"
                             "See [the results](../01_demo/README.md#ch01_results), [Part](#guide_part), and "
                             "`@ref ch01_demo` as written.\n")


if __name__ == "__main__":
    unittest.main()
