#!/usr/bin/env python3
"""Proves the graded exercises both ways: every untouched starter fails its test, every solution passes.

    scripts/check_exercises.py [--root DIR] [--jobs N] [--configure-arg ARG ...]

Configures, builds and runs the exercises twice, as the presets do (build-exercises/ from the
starters, build-solutions/ from the solutions), then prints one line per exercise and exits 1 when
a starter passes untouched (its test cannot fail), a solution fails, or an exercise has no test
that ran. Tests that skip (a GPU exercise on a machine without the GPU it needs) are reported as
not graded here; scripts/gpu_check.sh --steps=exercises runs this on a GPU machine.

The summary that ends `cmake --workflow --preset exercises` is scripts/exercise.py --summary.
"""
import argparse
import subprocess
import sys
from collections import OrderedDict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from exercise import outcomes  # noqa: E402  (the JUnit reading the summary shares)


def run(command, cwd, expect_success=True):
    print("+ " + " ".join(command), flush=True)
    result = subprocess.run(command, cwd=cwd)
    if expect_success and result.returncode != 0:
        sys.exit(f"check_exercises: '{' '.join(command)}' failed with exit code {result.returncode}")
    return result.returncode


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", default=str(Path(__file__).resolve().parent.parent))
    parser.add_argument("--jobs", type=int, default=4)
    parser.add_argument("--configure-arg", action="append", default=[],
                        help="extra argument for both configure steps, e.g. -DCOURSE_CUDA_ARCHITECTURES=90-real")
    args = parser.parse_args()
    root = Path(args.root)

    junit = {}
    for preset in ("exercises", "solutions"):
        build = root / f"build-{preset}"
        run(["cmake", "--preset", preset, *args.configure_arg], root)
        run(["cmake", "--build", "--preset", preset, "-j", str(args.jobs)], root)
        junit[preset] = build / "Testing" / f"check_{preset}.xml"
        # The starters' run fails by design; what failed is read from the JUnit file.
        run(["ctest", "--test-dir", str(build), "-L", "^exercise$", "-j", str(args.jobs),
             "--output-junit", str(junit[preset])], root, expect_success=False)

    starters = outcomes(junit["exercises"])
    solutions = outcomes(junit["solutions"])
    problems = []
    print(f"\n{'exercise':44} {'starter (untouched)':28} solution")
    for key in OrderedDict.fromkeys(list(starters) + list(solutions)):
        name = f"{key[0]}/exercises/{key[1]}"
        s = starters.get(key, {"passed": 0, "failed": 0, "skipped": 0})
        t = solutions.get(key, {"passed": 0, "failed": 0, "skipped": 0})
        ran_s = s["passed"] + s["failed"]
        ran_t = t["passed"] + t["failed"]
        starter = "not graded here (skipped)" if ran_s == 0 else f"fails {s['failed']} of {ran_s} tests"
        solution = "not graded here (skipped)" if ran_t == 0 else (
            "passes" if t["failed"] == 0 else f"FAILS {t['failed']} of {ran_t} tests")
        print(f"{name:44} {starter:28} {solution}")
        if ran_s > 0 and s["failed"] == 0:
            problems.append(f"{name}: the untouched starter passes its test")
        if t["failed"] > 0:
            problems.append(f"{name}: the solution fails {t['failed']} test(s)")
        if ran_s + ran_t + s["skipped"] + t["skipped"] == 0:
            problems.append(f"{name}: no test ran")
    graded = sum(1 for k in starters if starters[k]["passed"] + starters[k]["failed"] > 0)
    print(f"\n{len(solutions)} exercises; graded here: {graded}; problems: {len(problems)}")
    for problem in problems:
        print("  " + problem)
    return 1 if problems or not solutions else 0


if __name__ == "__main__":
    sys.exit(main())
