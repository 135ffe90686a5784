#!/usr/bin/env python3
"""Tests that scripts/gpu_check.sh refuses a bad command before it touches anything (CTest: scripts.gpu_check).

    scripts/gpu_check_test.py [-v]

Each test gives the script an output folder holding an earlier run's results and a command with one
mistake; the script must exit 2 with one line naming the mistake, and leave the folder (and the
repository's build-gpu/) exactly as it was. No GPU, compiler or build is needed: nothing runs.
"""
import hashlib
import subprocess
import tempfile
import unittest
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent / "gpu_check.sh"
ROOT = SCRIPT.parent.parent


class RefusedBeforeAnything(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.out = Path(self.tmp.name) / "out"
        self.out.mkdir()
        for name in ("bench_01_sync_copy.csv", "sanitizer_memcheck_01_sync_copy.log", "ncu_06_tma_1d_1.log",
                     "timeline_06_tma_1d.csv", "summary.md"):
            (self.out / name).write_text(f"an earlier run's {name}\n")

    def tearDown(self):
        self.tmp.cleanup()

    def snapshot(self):
        # build-gpu/Testing/ is left out: it holds CTest's own logs, which the CTest run that runs this
        # test (from build-gpu/, with other tests beside it) writes while the test runs.
        tree = {}
        for base in (Path(self.tmp.name), ROOT / "build-gpu"):
            for path in sorted(base.rglob("*")) if base.is_dir() else []:
                if base.name == "build-gpu" and path.relative_to(base).parts[0] == "Testing":
                    continue
                tree[str(path)] = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "folder"
        return tree

    def assert_refused(self, *args, expected, out=None):
        before = self.snapshot()
        result = subprocess.run(["bash", str(SCRIPT), str(out or self.out), *args], capture_output=True,
                                text=True, timeout=60, cwd=self.tmp.name)
        self.assertEqual(result.returncode, 2, result.stdout + result.stderr)
        self.assertEqual(result.stdout, "")
        lines = result.stderr.splitlines()
        self.assertEqual(len(lines), 1, result.stderr)
        self.assertIn(expected, lines[0])
        self.assertEqual(self.snapshot(), before, "a refused command must not write, move or delete a file")

    def test_a_misspelt_chapter(self):
        self.assert_refused("--chapters=01_sync_cpy", expected="--chapters: '01_sync_cpy' is not a chapter folder")

    def test_an_empty_chapter_list(self):
        self.assert_refused("--chapters=,", expected="--chapters: no chapter given")

    def test_a_program_the_chapter_lacks(self):
        self.assert_refused("--chapters=01_sync_copy", "--programs=01_sync_copy.sync_copy_lob",
                            expected="--programs: '01_sync_copy.sync_copy_lob' is not a program")

    def test_a_program_of_a_chapter_not_asked_for(self):
        self.assert_refused("--chapters=01_sync_copy", "--programs=02_memcpy_async",
                            expected="--programs: '02_memcpy_async' is not a program")

    def test_an_unknown_step(self):
        self.assert_refused("--steps=tests,benchh", expected="--steps: 'benchh' is not one of")

    def test_a_bad_architecture(self):
        self.assert_refused("--arch=sm_90", expected="--arch: 'sm_90' is not a compute capability")

    def test_a_bad_tool(self):
        self.assert_refused("--tools=memcheck,leakcheck", expected="--tools: 'leakcheck' is not one of")

    def test_a_bad_repeat(self):
        self.assert_refused("--repeat=0", expected="--repeat takes a whole number")

    def test_an_unknown_option(self):
        self.assert_refused("--chapter=01_sync_copy", expected="usage:")

    def test_an_output_folder_that_is_a_file(self):
        self.assert_refused(out=self.out / "summary.md", expected="exists and is not a folder")

    def test_an_output_folder_that_cannot_be_created(self):
        self.assert_refused(out=self.out / "summary.md" / "sub", expected="cannot be written")


if __name__ == "__main__":
    unittest.main()
