#!/usr/bin/env python3
"""Tests of scripts/repeat_gpu_tests.py (CTest: scripts.repeat_gpu_tests).

    scripts/repeat_gpu_tests_test.py [-v]

The GPU tests are stood in for by a shell script that prints what a GoogleTest program prints
under --gtest_repeat, so the counting and the verdict are checked without a GPU.
"""
import importlib.util
import os
import stat
import sys
import tempfile
import unittest
from pathlib import Path

SPEC = importlib.util.spec_from_file_location("repeat_gpu_tests", Path(__file__).resolve().parent / "repeat_gpu_tests.py")
repeat = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(repeat)


def fake_program(folder, body):
    path = Path(folder) / "fake_test"
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return str(path)


ITERATION_OK = "[==========] 3 tests from 1 test suite ran. (5 ms total)\\n[  PASSED  ] 3 tests.\\n"


class WaitsOnPurpose(unittest.TestCase):
    def test_the_tests_that_wait_out_a_bound_are_left_out(self):
        for name in ["Sm90a_TmaMulticastDiagnosis.EmptyCountWithoutTheMinusOneIsDiagnosedNotHung",
                     "Sm80_BarrierBroken.OneArrivalTooManyIsDiagnosed",
                     "Sm80_WarpSpecializedDeathTest.WrongFullCountIsDiagnosedNotHung",
                     "Sm90_BoundedWait.WrongTransactionCountIsDiagnosed",
                     "Sm90_TileWindow.UnalignedColumnStartIsAnIllegalInstruction"]:
            self.assertTrue(repeat.WAITS_ON_PURPOSE.search(name), name)

    def test_every_other_gpu_test_is_repeated(self):
        for name in ["Lesson/Sm80_WarpSpecialized.OneBatch/mbarrier",
                     "Sm90_StasCluster.RingOfEight",
                     "Lab/Sm80_Pipeline.FullGridWithUnequalBlocks/diverged_commit_s1",
                     "Variants/Sm90_Tma2d.RepeatedRunsGiveTheSameBits/shifted",
                     "Sm90_BrokenRingIsNotATestName.ButThisSuiteIs"]:
            self.assertFalse(repeat.WAITS_ON_PURPOSE.search(name), name)


class Counting(unittest.TestCase):
    def test_passes_are_summed_over_repetitions(self):
        with tempfile.TemporaryDirectory() as folder:
            program = fake_program(folder, 'printf "%b%b" "' + ITERATION_OK + '" "' + ITERATION_OK + '"\n')
            _, failed, skipped, passed, _ = repeat.run_program(program, ["A.a", "A.b", "A.c"], 2)
            self.assertEqual((failed, skipped, passed), ([], 0, 6))

    def test_a_failure_in_any_repetition_is_reported(self):
        with tempfile.TemporaryDirectory() as folder:
            program = fake_program(folder, 'printf "%b[  FAILED  ] A.b (12 ms)\\n[  PASSED  ] 2 tests.\\n'
                                   '[  FAILED  ] 1 test, listed below:\\n[  FAILED  ] A.b\\n" "' + ITERATION_OK +
                                   '"\nexit 1\n')
            _, failed, _, passed, _ = repeat.run_program(program, ["A.a", "A.b", "A.c"], 2)
            self.assertEqual(failed, ["[  FAILED  ] A.b (12 ms)"])
            self.assertEqual(passed, 5)

    def test_a_crash_without_a_failed_line_is_a_failure(self):
        with tempfile.TemporaryDirectory() as folder:
            program = fake_program(folder, 'echo "Segmentation fault"\nexit 139\n')
            _, failed, _, _, _ = repeat.run_program(program, ["A.a"], 20)
            self.assertEqual(len(failed), 1)
            self.assertIn("status 139", failed[0])

    def test_skips_are_counted(self):
        with tempfile.TemporaryDirectory() as folder:
            program = fake_program(folder, 'printf "[  PASSED  ] 0 tests.\\n[  SKIPPED ] 3 tests.\\n"\n')
            _, failed, skipped, passed, _ = repeat.run_program(program, ["A.a", "A.b", "A.c"], 1)
            self.assertEqual((failed, skipped, passed), ([], 3, 0))


if __name__ == "__main__":
    unittest.main()
