#!/usr/bin/env python3
"""Proves the graded exercises both ways: every untouched starter fails its test, every solution passes.

    scripts/check_exercises.py [--root DIR] [--jobs N] [--configure-arg ARG ...]

Configures, builds and runs the exercises twice, as the presets do (build-exercises/ from the
starters, build-solutions/ from the solutions), then prints one line per exercise and exits 1 when
a starter passes untouched (its test cannot fail), a solution fails, or an exercise has no test
that ran. Tests that skip (a GPU exercise on a machine without the GPU it needs) are reported as
not graded here; scripts/gpu_check.sh --steps=exercises runs this on a GPU machine.

    scripts/check_exercises.py --summary JUNIT

prints the summary that ends `cmake --workflow --preset exercises` (CTest runs it after the
tests; cmake/CourseExercises.cmake sets that up): one line per chapter naming its exercises
done, to do and not graded here, the reasons for the last, and how to check one exercise; at most
40 lines. JUNIT is the run's JUnit file, removed once read (a later run without the preset prints
no stale summary); nothing is printed when it does not exist.
"""
import argparse
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections import OrderedDict
from pathlib import Path

NAME = re.compile(r"^(?P<chapter>\d\d_[a-z0-9_]+)\.exercises\.(?P<exercise>[a-z0-9_]+)\.")


def run(command, cwd, expect_success=True):
    print("+ " + " ".join(command), flush=True)
    result = subprocess.run(command, cwd=cwd)
    if expect_success and result.returncode != 0:
        sys.exit(f"check_exercises: '{' '.join(command)}' failed with exit code {result.returncode}")
    return result.returncode


SKIP_REASON = re.compile(r": Skipped\n(.+)")
MAX_REASONS = 6


def outcomes(junit):
    """{(chapter, exercise): {"passed": n, "failed": n, "skipped": n, "reasons": [...]}} from a
    CTest JUnit file (reasons: what the skipped tests said the machine lacks)."""
    table = OrderedDict()
    for case in ET.parse(junit).getroot().iter("testcase"):
        match = NAME.match(case.get("name", ""))
        if not match:
            continue
        key = (match["chapter"], match["exercise"])
        counts = table.setdefault(key, {"passed": 0, "failed": 0, "skipped": 0, "reasons": []})
        status = case.get("status", "")
        text = "".join(node.text or "" for node in case.iter("system-out"))
        if status == "fail" or case.find("failure") is not None:
            counts["failed"] += 1
        elif status == "notrun" or case.find("skipped") is not None or "[  SKIPPED ]" in text:
            counts["skipped"] += 1
            for reason in SKIP_REASON.findall(text):
                if reason.strip() not in counts["reasons"]:
                    counts["reasons"].append(reason.strip())
        else:
            counts["passed"] += 1
    return table


def summary(junit):
    """The exercises preset's closing summary (see the module's doc); returns its lines."""
    table = outcomes(junit)
    if not table:
        return ["==== Exercises: no exercise's test ran ===="]
    chapters = OrderedDict()
    reasons = OrderedDict()  # reason -> exercises not graded here for it
    done = todo = not_here = 0
    for (chapter, exercise), counts in table.items():
        verdicts = chapters.setdefault(chapter, OrderedDict(
            (("done", []), ("to do", []), ("not graded here", []))))
        if counts["failed"]:
            verdicts["to do"].append(exercise)
            todo += 1
        elif counts["skipped"]:
            verdicts["not graded here"].append(exercise)
            not_here += 1
            for reason in counts["reasons"] or ["no reason printed"]:
                reasons.setdefault(reason, []).append(exercise)
        else:
            verdicts["done"].append(exercise)
            done += 1
    lines = [f"==== Exercises: {done} of {len(table)} done, {todo} to do, {not_here} not graded here ===="]
    width = max(len(chapter) for chapter in chapters)
    for chapter, verdicts in chapters.items():
        parts = [f"{verdict}: {', '.join(names)}" for verdict, names in verdicts.items() if names]
        lines.append(f"  {chapter:{width}}  {'; '.join(parts)}")
    if reasons:
        # A reason reads "needs a GPU of compute capability X or newer for ...; <what this machine
        # has>": grouped by what the machine has, with the capabilities the exercises need.
        machines = OrderedDict()  # what the machine has -> ([exercise], [capability])
        for reason, names in reasons.items():
            need, _, machine = reason.rpartition("; ")
            capability = re.search(r"compute capability (\d+\.\d+a?)", need)
            exercises_of, capabilities = machines.setdefault(machine or reason, ([], []))
            exercises_of.extend(name for name in names if name not in exercises_of)
            if capability and capability[1] not in capabilities:
                capabilities.append(capability[1])
        lines.append("Not graded here (the machine lacks what the GPU checks need):")
        for machine, (names, capabilities) in list(machines.items())[:MAX_REASONS]:
            needs = f"; they need compute capability {', '.join(sorted(capabilities))}" if capabilities else ""
            lines.append(f"  {len(names)} exercise{'s' if len(names) != 1 else ''}: {machine}{needs}")
        if len(machines) > MAX_REASONS:
            lines.append(f"  ... and {len(machines) - MAX_REASONS} more reasons (scripts/exercise.py NAME says each)")
    lines.append("What is wrong with one exercise, after rebuilding it: scripts/exercise.py NAME")
    return lines


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--summary":
        junit = Path(sys.argv[2])
        if junit.is_file():
            lines = summary(junit)
            junit.unlink()
            print("\n" + "\n".join(lines))
        return 0
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
