#!/usr/bin/env python3
"""Tests of scripts/update_results.py on a made-up chapter (CTest: scripts.update_results).

    scripts/update_results_test.py [-v]

Each test lays out a repository with one chapter, 01_demo (lesson `demo`, lab `demo_lab`), whose
page has a results table per program and inline values in its prose, and a results folder with
one report per program; it runs the script on them and looks at the page and the exit status.
"""
import hashlib
import re
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent / "update_results.py"
HEADER = "chapter,variant,size_bytes,passed,median_ms,gbps,ratio_to_memcpy\n"
DEVICE = "# Demo GPU (compute capability 9.0)\n# iters=20\n"
LESSON_ROWS = ("demo,fast,1073741824,1,0.7512,2858.37,0.9876\n"
               "demo,slow,1073741824,1,1.5,1431.66,0.4946\n"
               "demo,cudaMemcpy_d2d,1073741824,1,0.7419,2894.2,1\n")
LAB_ROWS = ("demo_lab,fast_s1,1073741824,1,1.2,1789.6,0.6183\n"
            "demo_lab,cudaMemcpy_d2d,1073741824,1,0.7419,2894.2,1\n")
CMAKE = "# The lesson and the lab.\ncourse_add_chapter(\n  LESSONS   demo\n  LAB       demo_lab\n  MIN_ARCH  90)\n"


def page(prose):
    return ("# 01 demo\n\n<!-- results:begin -->\n<!-- results:end -->\n\n" + prose +
            "\n\n<!-- results:begin demo_lab -->\n<!-- results:end demo_lab -->\n")


class Fixture(unittest.TestCase):
    """A repository with the chapter 01_demo and a results folder with a report per program."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.root = Path(self.tmp.name) / "repo"
        self.results = Path(self.tmp.name) / "out"
        (self.root / "01_demo").mkdir(parents=True)
        self.results.mkdir()
        (self.root / "01_demo" / "CMakeLists.txt").write_text(CMAKE)
        (self.root / "CMakeLists.txt").write_text("project(async_copy_course LANGUAGES CXX)\n")
        (self.results / "bench_01_demo.csv").write_text(DEVICE + HEADER + LESSON_ROWS + "# status=passed\n")
        (self.results / "bench_01_demo.demo_lab.csv").write_text(DEVICE + HEADER + LAB_ROWS + "# status=passed\n")
        self.readme = self.root / "01_demo" / "README.md"

    def tearDown(self):
        self.tmp.cleanup()

    def run_script(self, *extra):
        return subprocess.run([sys.executable, str(SCRIPT), str(self.results), "--root", str(self.root), *extra],
                              capture_output=True, text=True)


class DeviceColumns(Fixture):
    """A page measured on one GPU keeps its numbers when another GPU's run is written beside them."""

    H100 = ("# NVIDIA H100 80GB HBM3 (compute capability 9.0, 132 SMs)\n# iters=20\n")
    H200 = ("# NVIDIA H200 (compute capability 9.0, 132 SMs)\n# iters=20\n")

    def write_reports(self, device, lesson_rows=LESSON_ROWS):
        (self.results / "bench_01_demo.csv").write_text(device + HEADER + lesson_rows + "# status=passed\n")
        (self.results / "bench_01_demo.demo_lab.csv").write_text(device + HEADER + LAB_ROWS + "# status=passed\n")

    def test_a_run_on_another_gpu_adds_its_columns_and_keeps_the_first_gpus_numbers(self):
        self.write_reports(self.H100)
        self.readme.write_text(page("On the H100 <!-- value:demo:fast:ratio -->0.50; on the H200 "
                                    "<!-- value:demo:fast:ratio:H200 -->0.50."))
        self.assertEqual(self.run_script().returncode, 0)
        h100_page = self.readme.read_text()
        self.assertIn("| `fast` | 2858.4 | 0.99 | 0.751 |", h100_page)  # one GPU: the one-device form
        self.assertIn("on the H200 <!-- value:demo:fast:ratio:H200 -->0.50.", h100_page)  # not from an H100 run
        faster = LESSON_ROWS.replace("0.7512,2858.37,0.9876", "0.5,4294.97,0.9712")
        self.write_reports(self.H200, faster)
        result = self.run_script()
        self.assertEqual(result.returncode, 0, result.stderr)
        text = self.readme.read_text()
        self.assertIn("| variant | H100 GB/s | H100 × cudaMemcpy | H200 GB/s | H200 × cudaMemcpy |", text)
        self.assertIn("| `fast` | 2858.4 | 0.99 | 4295.0 | 0.97 |", text)
        self.assertIn("**H100**: NVIDIA H100 80GB HBM3 (compute capability 9.0, 132 SMs), size 1 GiB, median of 20 runs. "
                      "**H200**: NVIDIA H200 (compute capability 9.0, 132 SMs), size 1 GiB, median of 20 runs. GB/s", text)
        self.assertIn("On the H100 <!-- value:demo:fast:ratio -->0.99;", text)  # the page's own GPU: kept
        self.assertIn("on the H200 <!-- value:demo:fast:ratio:H200 -->0.97.", text)
        chart = (self.root / "01_demo" / "figures" / "results_01_demo.svg").read_text()
        self.assertIn(">fast<", chart)
        self.assertIn(">fast [H100]<", chart)
        # The same H200 run again changes nothing; a new H200 run replaces only the H200 columns.
        self.assertEqual(self.run_script("--check").returncode, 0)
        self.write_reports(self.H200, LESSON_ROWS.replace("0.7512,2858.37,0.9876", "0.6,3579.14,0.9800"))
        self.assertEqual(self.run_script().returncode, 0)
        self.assertIn("| `fast` | 2858.4 | 0.99 | 3579.1 | 0.98 |", self.readme.read_text())

    def test_a_variant_the_new_run_no_longer_has_leaves_the_table(self):
        self.write_reports(self.H100)
        self.readme.write_text(page("Text."))
        self.assertEqual(self.run_script().returncode, 0)
        self.write_reports(self.H200, LESSON_ROWS.replace("demo,slow,1073741824,1,1.5,1431.66,0.4946\n", ""))
        self.assertEqual(self.run_script().returncode, 0)
        text = self.readme.read_text()
        self.assertNotIn("`slow`", text)
        self.assertIn("| cudaMemcpy D2D (baseline) | 2894.2 | 1.00 | 2894.2 | 1.00 |", text)


class UpdateResults(Fixture):
    def test_values_are_written_as_the_table_writes_them(self):
        self.readme.write_text(page(
            "The fast copy reaches <!-- value:demo:fast:ratio -->0.50 × `cudaMemcpy`\n"
            "(<!-- value:demo:fast:gbps -->1.0 GB/s, <!-- value:demo:fast:median_ms -->9.999 ms), the\n"
            "baseline <!-- value:demo:cudaMemcpy_d2d:gbps -->1.0 GB/s, one stage of the\n"
            "lab <!-- value:demo_lab:fast_s1:ratio -->0.01."))
        result = self.run_script()
        self.assertEqual(result.returncode, 0, result.stderr)
        text = self.readme.read_text()
        self.assertIn("reaches <!-- value:demo:fast:ratio -->0.99 × `cudaMemcpy`", text)
        self.assertIn("(<!-- value:demo:fast:gbps -->2858.4 GB/s, <!-- value:demo:fast:median_ms -->0.751 ms)", text)
        self.assertIn("baseline <!-- value:demo:cudaMemcpy_d2d:gbps -->2894.2 GB/s", text)
        self.assertIn("lab <!-- value:demo_lab:fast_s1:ratio -->0.62.", text)
        # The table of the same run prints the same numbers.
        self.assertIn("| `fast` | 2858.4 | 0.99 | 0.751 |", text)
        self.assertIn("| `fast_s1` | 1789.6 | 0.62 | 1.200 |", text)
        # Written once, the page is current: --check passes and a second run changes nothing.
        self.assertEqual(self.run_script("--check").returncode, 0)
        self.assertEqual(self.run_script().returncode, 0)
        self.assertEqual(self.readme.read_text(), text)

    def test_check_names_a_stale_value_and_writes_nothing(self):
        self.readme.write_text(page("Slow: <!-- value:demo:slow:ratio -->0.49."))
        self.assertEqual(self.run_script().returncode, 0)  # tables, value and charts current
        text = self.readme.read_text().replace("-->0.49.", "-->0.51.")
        self.readme.write_text(text)
        result = self.run_script("--check")
        self.assertEqual(result.returncode, 1)
        self.assertIn("<!-- value:demo:slow:ratio --> says 0.51, the run gives 0.49", result.stdout)
        self.assertEqual(self.readme.read_text(), text)

    def assert_refused(self, prose, *expected, line=6):
        self.readme.write_text(page(prose))
        before = self.readme.read_text()
        result = self.run_script()
        self.assertNotEqual(result.returncode, 0, result.stdout)
        self.assertIn(f"01_demo/README.md:{line}: ", result.stderr)  # the line of the marker
        for text in expected:
            self.assertIn(text, result.stderr)
        self.assertEqual(self.readme.read_text(), before, "a page with a bad marker must not be written")

    def test_an_unknown_variant_is_an_error(self):
        self.assert_refused("It reaches <!-- value:demo:fastest:ratio -->0.99 here.",
                            "<!-- value:demo:fastest:ratio -->", "no variant 'fastest'")

    def test_an_unknown_program_is_an_error(self):
        self.assert_refused("It reaches <!-- value:other_lab:fast:ratio -->0.99 here.",
                            "<!-- value:other_lab:fast:ratio -->", "'other_lab' is not a program of this chapter")

    def test_an_unknown_field_is_an_error(self):
        self.assert_refused("It reaches <!-- value:demo:fast:percent -->99 here.", "unknown field 'percent'")

    def test_a_marker_without_its_number_is_an_error(self):
        self.assert_refused("It reaches <!-- value:demo:fast:ratio --> 0.99 here.", "not directly followed by a number")

    def test_a_malformed_marker_is_an_error(self):
        self.assert_refused("It reaches <!-- value: demo:fast:ratio -->0.99 here.", "not a value marker")

    def test_a_marker_at_the_start_of_a_line_is_an_error(self):
        self.assert_refused("It reaches\n<!-- value:demo:fast:ratio -->0.99 here.", "starts with a value marker", line=7)

    def test_a_speedup_is_the_other_rows_time_over_this_rows(self):
        self.readme.write_text(page("fast runs <!-- value:demo:fast:speedup_over_slow -->9.99 times as fast as slow."))
        result = self.run_script()
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("speedup_over_slow -->2.00 times", self.readme.read_text())  # 1.5 ms / 0.7512 ms

    def test_a_speedup_over_an_unknown_row_is_an_error(self):
        self.readme.write_text(page("x <!-- value:demo:fast:speedup_over_nothing -->1.00"))
        result = self.run_script()
        self.assertEqual(result.returncode, 1)
        self.assertIn("no variant 'nothing' to compare with", result.stdout + result.stderr)

    def test_values_of_a_program_without_a_report_are_kept(self):
        (self.results / "bench_01_demo.demo_lab.csv").write_text(
            HEADER + "# status=skipped\n# reason=needs a demo GPU\n")
        self.readme.write_text(page("Lab: <!-- value:demo_lab:fast_s1:ratio -->0.01, lesson "
                                    "<!-- value:demo:fast:ratio -->0.50."))
        result = self.run_script()
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("Lab: <!-- value:demo_lab:fast_s1:ratio -->0.01, lesson <!-- value:demo:fast:ratio -->0.99.",
                      self.readme.read_text())

    def test_a_program_measured_on_another_device_is_marked_on_the_chart(self):
        (self.results / "bench_01_demo.demo_lab.csv").write_text(
            "# Other GPU (compute capability 9.0)\n# iters=20\n" + HEADER + LAB_ROWS + "# status=passed\n")
        self.readme.write_text(page("Text."))
        result = self.run_script()
        self.assertEqual(result.returncode, 0, result.stderr)
        chart = (self.root / "01_demo" / "figures" / "results_01_demo.svg").read_text()
        self.assertIn("fast_s1 [Other GPU]", chart)
        self.assertIn(">fast<", chart)  # the lesson's bars carry no mark: the chart's device is the lesson's
        self.assertIn("unmarked: Demo GPU; [..]: that GPU", chart)
        self.assertIn("Measured on Other GPU", self.readme.read_text())

    def test_one_device_marks_nothing(self):
        self.readme.write_text(page("Text."))
        self.assertEqual(self.run_script().returncode, 0)
        chart = (self.root / "01_demo" / "figures" / "results_01_demo.svg").read_text()
        self.assertNotIn("[", chart.replace("[..]", ""))
        self.assertIn("same run; Demo GPU (compute capability 9.0)", chart)


class ReferencePage(Fixture):
    """A chapter's reference page (REFERENCE.md) holds markers as its core page does."""

    def setUp(self):
        super().setUp()
        self.reference = self.root / "01_demo" / "REFERENCE.md"
        self.readme.write_text("# 01 demo\n\n<!-- results:begin -->\n<!-- results:end -->\n\n"
                               "Fast: <!-- value:demo:fast:ratio -->0.50.\n")
        self.reference.write_text("# 01 demo: reference\n\nThe lab reaches <!-- value:demo_lab:fast_s1:ratio -->0.01, "
                                  "the lesson <!-- value:demo:slow:gbps -->1.0.\n\n"
                                  "<!-- results:begin demo_lab -->\n<!-- results:end demo_lab -->\n")

    def test_tables_and_values_are_written_on_the_page_that_holds_their_markers(self):
        result = self.run_script()
        self.assertEqual(result.returncode, 0, result.stderr)
        core, reference = self.readme.read_text(), self.reference.read_text()
        self.assertIn("| `fast` | 2858.4 | 0.99 | 0.751 |", core)
        self.assertIn("Fast: <!-- value:demo:fast:ratio -->0.99.", core)
        self.assertNotIn("fast_s1", core)
        self.assertIn("| `fast_s1` | 1789.6 | 0.62 | 1.200 |", reference)
        self.assertIn("The lab reaches <!-- value:demo_lab:fast_s1:ratio -->0.62, the lesson "
                      "<!-- value:demo:slow:gbps -->1431.7.", reference)
        self.assertNotIn("| `fast` |", reference)
        self.assertEqual(self.run_script("--check").returncode, 0)

    def test_check_names_a_stale_value_of_the_reference_page(self):
        self.assertEqual(self.run_script().returncode, 0)
        stale = self.reference.read_text().replace("fast_s1:ratio -->0.62", "fast_s1:ratio -->0.61")
        self.reference.write_text(stale)
        result = self.run_script("--check")
        self.assertEqual(result.returncode, 1)
        self.assertIn("01_demo/REFERENCE.md:3: <!-- value:demo_lab:fast_s1:ratio --> says 0.61, the run gives 0.62",
                      result.stdout)
        self.assertIn("01_demo: REFERENCE.md would change", result.stdout)
        self.assertEqual(self.reference.read_text(), stale)

    def test_a_bad_marker_on_the_reference_page_writes_neither_page(self):
        self.reference.write_text(self.reference.read_text() + "\nBad <!-- value:demo:nothing:ratio -->1.00\n")
        before = (self.readme.read_text(), self.reference.read_text())
        result = self.run_script()
        self.assertEqual(result.returncode, 1)
        self.assertIn("01_demo/REFERENCE.md:8: <!-- value:demo:nothing:ratio -->", result.stderr)
        self.assertEqual((self.readme.read_text(), self.reference.read_text()), before)


class HostileInput(Fixture):
    """Bad reports, pages and options: one line naming the file and the field, exit 1, no file changed."""

    def setUp(self):
        super().setUp()
        self.readme.write_text(page("Fast: <!-- value:demo:fast:ratio -->0.50."))
        (self.root / "02_other").mkdir()
        (self.root / "02_other" / "CMakeLists.txt").write_text("course_add_chapter(LESSONS other MIN_ARCH 80)\n")
        (self.root / "02_other" / "README.md").write_text("# 02 other\n\n<!-- results:begin -->\n<!-- results:end -->\n")

    def snapshot(self):
        """Every file and folder under the repository and the results folder, with its checksum."""
        tree = {}
        for path in sorted(Path(self.tmp.name).rglob("*")):
            tree[str(path)] = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "folder"
        return tree

    def assert_refused(self, *expected, args=()):
        before = self.snapshot()
        result = self.run_script(*args) if args else self.run_script()
        self.assertEqual(result.returncode, 1, result.stdout + result.stderr)
        lines = result.stderr.splitlines()
        self.assertEqual(len(lines), 1, result.stderr)
        self.assertNotIn("Traceback", result.stderr)
        for text in expected:
            self.assertIn(text, lines[0])
        self.assertEqual(self.snapshot(), before, "a refused run must change no file")
        return lines[0]

    def other_report(self, rows):
        (self.results / "bench_02_other.csv").write_text(DEVICE + HEADER + rows + "# status=passed\n")

    def test_an_empty_ratio_in_a_second_chapter_writes_neither_chapter(self):
        self.other_report("other,a,1024,1,0.5,2.0,\nother,cudaMemcpy_d2d,1024,1,0.5,2.0,1\n")
        self.assert_refused("bench_02_other.csv", "variant a: field ratio_to_memcpy: '' is not a positive number")

    def test_a_value_that_is_not_a_number(self):
        self.other_report("other,a,1024,1,0.5,fast,0.9\nother,cudaMemcpy_d2d,1024,1,0.5,2.0,1\n")
        self.assert_refused("bench_02_other.csv", "field gbps: 'fast'")

    def test_a_size_that_is_not_a_number(self):
        self.other_report("other,a,big,1,0.5,2.0,0.9\nother,cudaMemcpy_d2d,1024,1,0.5,2.0,1\n")
        self.assert_refused("bench_02_other.csv", "field size_bytes: 'big'")

    def test_a_report_that_is_a_folder(self):
        (self.results / "bench_02_other.csv").mkdir()
        self.assert_refused("bench_02_other.csv: is a folder, not a file")

    def test_a_report_that_is_not_utf8(self):
        (self.results / "bench_02_other.csv").write_bytes(b"# \xff\xfe GPU\n" + HEADER.encode())
        self.assert_refused("bench_02_other.csv: not UTF-8 text (byte 2)")

    def test_a_report_of_a_chapter_that_does_not_exist(self):
        (self.results / "bench_99_nope.csv").write_text(DEVICE + HEADER + LESSON_ROWS)
        self.assert_refused("bench_99_nope.csv: '99_nope' is not a chapter of")
        self.assertFalse((self.root / "99_nope").exists())

    def test_a_report_of_a_program_the_chapter_lacks(self):
        (self.results / "bench_01_demo.nothing.csv").write_text(DEVICE + HEADER + LESSON_ROWS)
        self.assert_refused("bench_01_demo.nothing.csv: 'nothing' is not a program of 01_demo")

    def test_a_root_that_is_not_the_repository(self):
        missing = Path(self.tmp.name) / "nonexistent"
        self.assert_refused(f"--root {missing}: not the course's repository", args=("--root", str(missing)))
        self.assertFalse(missing.exists())

    def test_a_results_folder_that_does_not_exist(self):
        self.results = Path(self.tmp.name) / "missing"
        self.assert_refused("missing: not a folder of results")

    def test_a_bad_marker_in_one_chapter_writes_no_chapter(self):
        self.other_report("other,a,1024,1,0.5,2.0,0.9\nother,cudaMemcpy_d2d,1024,1,0.5,2.0,1\n")
        self.readme.write_text(page("Fast: <!-- value:demo:fastest:ratio -->0.50."))
        self.assert_refused("01_demo/README.md:6: <!-- value:demo:fastest:ratio -->", "no variant 'fastest'")
        self.assertFalse((self.root / "02_other" / "figures").exists())

    def test_a_missing_ncu_log(self):
        # One of two listed runs missing is refused; a run whose ncu step did not run at all is not.
        (self.root / "01_demo" / "ncu_metrics.txt").write_text(
            "--variant=fast|dram__bytes_read.sum\n--variant=slow|dram__bytes_read.sum\n")
        (self.results / "ncu_01_demo_1.log").write_text("  dram__bytes_read.sum  byte  1,024\n")
        self.assert_refused("ncu table:", "ncu_01_demo_2.log: missing")

    def test_a_run_without_the_ncu_step_leaves_the_ncu_table(self):
        (self.root / "01_demo" / "ncu_metrics.txt").write_text("--variant=fast|dram__bytes_read.sum\n")
        self.readme.write_text(page("Text.") + "\n<!-- ncu:begin -->\nold table\n<!-- ncu:end -->\n")
        result = self.run_script()
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("no ncu logs in this run", result.stdout)
        self.assertIn("old table", self.readme.read_text())

    def test_a_row_verified_but_not_timed_shows_dashes_and_refuses_a_value(self):
        (self.results / "bench_01_demo.csv").write_text(
            DEVICE + HEADER + "demo,tiny,1073741824,1,,,\n" + LESSON_ROWS + "# status=passed\n")
        self.readme.write_text(page("Text."))
        result = self.run_script()
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("| `tiny` | — | — | — |", self.readme.read_text())
        self.readme.write_text(page("Tiny: <!-- value:demo:tiny:ratio -->0.50."))
        self.assert_refused("verifies 'tiny' but does not time it")


class NcuUnits(unittest.TestCase):
    """Nsight Compute scales units per value; a column of the ncu table must still hold one unit."""

    def setUp(self):
        sys.path.insert(0, str(SCRIPT.parent))
        import update_results  # noqa: E402  (the script, imported for its functions)
        self.module = update_results

    def test_values_are_converted_to_the_columns_unit(self):
        self.assertEqual(self.module.in_unit(8.59, "Gbyte", "Mbyte", "bytes"), 8590.0)
        self.assertEqual(self.module.in_unit(1.35, "ms", "us", "time"), 1350.0)
        self.assertEqual(self.module.in_unit(2.5, "usecond", "nsecond", "time"), 2500.0)

    def test_a_row_in_another_unit_is_shown_in_the_first_rows_unit(self):
        logs = [{"t.sum": ("us", 372.0)}, {"t.sum": ("ms", 1.35)}]
        lines = self.module.ncu_block(["a", "b"], logs)
        self.assertIn("(us)", lines[0])
        self.assertIn("| `b` | 1,350 |", lines[3])

    def test_every_pair_of_units_of_one_kind_converts_both_ways_and_no_pair_across_kinds_does(self):
        units = self.module.NCU_SCALES
        for have, (kind_have, _) in units.items():
            for want, (kind_want, _) in units.items():
                if kind_have == kind_want:
                    there = self.module.in_unit(3.5, have, want, "m")
                    self.assertAlmostEqual(self.module.in_unit(there, want, have, "m"), 3.5, msg=f"{have} -> {want}")
                else:
                    with self.assertRaises(ValueError, msg=f"{have} -> {want}"):
                        self.module.in_unit(1.0, have, want, "m")
        self.assertEqual(self.module.in_unit(1.0, "Tbyte", "byte", "m"), 1e12)
        self.assertEqual(self.module.in_unit(1.0, "s", "ns", "m"), 1e9)
        with self.assertRaises(ValueError):
            self.module.in_unit(1.0, "furlong", "Mbyte", "m")  # a unit ncu never prints

    def test_units_of_different_kinds_are_refused(self):
        with self.assertRaises(ValueError):
            self.module.in_unit(1.0, "Mbyte", "us", "mixed")


class Charts(unittest.TestCase):
    """The charts scale to their column, show on a dark page, keep their text inside, and the course
    chart draws measurements of different kinds apart."""

    def setUp(self):
        sys.path.insert(0, str(SCRIPT.parent))
        import update_results
        self.module = update_results

    def check_svg(self, svg):
        head = svg.splitlines()[0]
        self.assertRegex(head, r'viewBox="0 0 720 \d+" width="100%"')
        self.assertNotRegex(head, r' height=')
        self.assertRegex(svg.splitlines()[1], r'^<rect width="720" height="\d+" fill="#ffffff"/>$')  # opaque, first
        for x in re.findall(r'<text x="(-?[\d.]+)"', svg):
            self.assertGreaterEqual(float(x), 0)
        for size in re.findall(r'font-size="([\d.]+)"', svg):
            self.assertGreaterEqual(float(size), 12)

    def test_a_chapter_chart_puts_each_label_above_its_bar(self):
        long = "tensor_map_options: interleave_16B_as_planar_with_a_long_name"
        svg = self.module.bar_chart("01_demo: bandwidth of every variant",
                                    [("fast", 0.99, "lesson"), (long, 0.5, "lab")], "x cudaMemcpy, same run")
        self.check_svg(svg)
        self.assertIn(f'<text x="8.0" y="47">{long}</text>', svg)
        self.assertIn(">1.0 = cudaMemcpy D2D<", svg)

    def test_the_course_chart_draws_copies_and_bytes_counted_where_they_land_apart(self):
        bars = [("01_demo (fast)", 0.99, "lesson"), ("02_demo (wide)", 1.06, "lab"),
                ("11_demo (gather)", 10.4, "lab"), ("12_demo (multicast)", 15.6, "lesson")]
        svg = self.module.course_chart(bars, "each chapter's best variant")
        self.check_svg(svg)
        copies = svg.index("Copies through DRAM, x cudaMemcpy")
        landed = svg.index("Bytes counted where they land, x cudaMemcpy")
        self.assertLess(copies, svg.index(">01_demo (fast)<"))
        self.assertLess(svg.index(">02_demo (wide)<"), landed)
        self.assertLess(landed, svg.index(">11_demo (gather)<"))
        # Each panel on its own scale: 1.06 and 15.6 are each the widest bar of their panel.
        widths = dict(re.findall(r'<text x="8.0" y="\d+">([^<]*)</text>\n<rect x="8" y="\d+" width="([\d.]+)"', svg))
        self.assertAlmostEqual(float(widths["02_demo (wide)"]), float(widths["12_demo (multicast)"]), delta=60)
        self.assertLess(float(widths["11_demo (gather)"]), float(widths["12_demo (multicast)"]))

    def test_without_rows_above_dram_the_course_chart_has_one_panel(self):
        svg = self.module.course_chart([("01_demo (fast)", 0.99, "lesson")], "note")
        self.check_svg(svg)
        self.assertNotIn("Bytes counted where they land", svg)


if __name__ == "__main__":
    unittest.main()
