#!/usr/bin/env python3
"""Runs the GPU tests of a build N times over, inside each test program (--gtest_repeat).

    scripts/repeat_gpu_tests.py BUILD N [--jobs=J] [--label=REGEX] [--log=FILE]

CTest starts one process per test, so repeating through `ctest --repeat` spends most of its time
creating CUDA contexts. This asks CTest for the GPU tests (label gpu, and every --label given),
groups them by test program and runs each program once with --gtest_filter naming its tests and
--gtest_repeat=N, J programs at a time. Tests that wait out a bounded wait or trap on purpose
(suites named *Diagnosis, *Broken, *DeathTest, *BoundedWait, and tests named *IllegalInstruction)
are left out: each costs seconds of waiting by design and runs once in the tests step.

Prints one line per program and a summary line
    repeat: T GPU tests x N repetitions in P programs: K passed, F failed (S skipped per repetition; ...)
and exits 0 only if no repetition of any test failed and at least one test ran (a machine on which
every GPU test skips has repeated nothing).
"""

import argparse
import collections
import concurrent.futures
import json
import re
import subprocess
import sys

WAITS_ON_PURPOSE = re.compile(r"^(.*/)?[^./]*(Diagnosis|Broken|DeathTest|BoundedWait)\.|IllegalInstruction")


def gpu_tests(build, labels):
    """{program path: [gtest names]} for the GPU tests CTest lists, without the waits on purpose."""
    cmd = ["ctest", "--test-dir", build, "--show-only=json-v1", "-L", "gpu"]
    for label in labels:
        cmd += ["-L", label]
    listing = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
    programs = collections.OrderedDict()
    left_out = 0
    for test in listing.get("tests", []):
        command = test.get("command") or []
        names = [a[len("--gtest_filter="):] for a in command[1:] if a.startswith("--gtest_filter=")]
        if not command or len(names) != 1:
            continue
        if WAITS_ON_PURPOSE.search(names[0]):
            left_out += 1
            continue
        programs.setdefault(command[0], []).append(names[0])
    return programs, left_out


def run_program(program, names, repeat):
    """Runs one program's tests `repeat` times; returns (program, failures, skipped, passed, tail)."""
    cmd = [program, "--gtest_filter=" + ":".join(names), "--gtest_repeat=%d" % repeat, "--gtest_brief=1"]
    proc = subprocess.run(cmd, capture_output=True, text=True, errors="replace")
    out = proc.stdout + proc.stderr
    failed = [line for line in out.splitlines() if line.startswith("[  FAILED  ]") and " ms)" in line]
    passed = sum(int(m) for m in re.findall(r"^\[  PASSED  \] (\d+) tests?\.", out, re.M))
    skipped = [int(m) for m in re.findall(r"^\[  SKIPPED \] (\d+) tests?[.,]", out, re.M)]
    if proc.returncode != 0 and not failed:
        failed = ["%s exited with status %d" % (program, proc.returncode)]
    return program, failed, (skipped[-1] if skipped else 0), passed, out[-4000:]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("build")
    parser.add_argument("repeat", type=int)
    parser.add_argument("--jobs", type=int, default=4)
    parser.add_argument("--label", action="append", default=[])
    parser.add_argument("--log")
    args = parser.parse_args()
    if not 1 <= args.repeat <= 999:
        sys.exit("repeat: N must be a whole number from 1 to 999")
    programs, left_out = gpu_tests(args.build, args.label)
    if not programs:
        sys.exit("repeat: CTest lists no GPU tests in %s" % args.build)
    log = open(args.log, "w") if args.log else None
    total = sum(len(n) for n in programs.values())
    failures, skipped_total, passed_total = [], 0, 0
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        jobs = [pool.submit(run_program, p, n, args.repeat) for p, n in programs.items()]
        for job in concurrent.futures.as_completed(jobs):
            program, failed, skipped, passed, tail = job.result()
            skipped_total += skipped
            passed_total += passed
            line = "%s: %d tests x %d: %d passed, %d failed, %d skipped per repetition" % (
                program, len(programs[program]), args.repeat, passed, len(failed), skipped)
            print(line, flush=True)
            if log:
                log.write(line + "\n" + ("".join("  " + f + "\n" for f in failed)))
                if failed:
                    log.write(tail + "\n")
            failures += ["%s: %s" % (program, f) for f in failed]
    summary = "repeat: %d GPU tests x %d repetitions in %d programs: %d passed, %d failed (%d skipped per " \
              "repetition; %d that wait on purpose left out)" % (total, args.repeat, len(programs), passed_total,
                                                                 len(failures), skipped_total, left_out)
    for f in failures[:50]:
        print("  " + f)
    print(summary)
    if log:
        log.write(summary + "\n")
    if passed_total == 0:
        print("repeat: no GPU test ran (all skipped): nothing was repeated")
        return 1
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
