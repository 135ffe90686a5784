#!/usr/bin/env python3
"""Checks how CTest registers the GoogleTest cases of a built tree (CTest tests.registration).

    scripts/test_registration.py BUILD [--ctest CTEST] [--json FILE]

cmake/CourseTesting.cmake registers each GoogleTest case as its own CTest test through three
filters: Host suites, GPU (Sm...) suites, and the GPU suites that wait out the bounded wait on
purpose (...Diagnosis, ...Broken), which get COURSE_WAIT_LIMIT_MS. This lists every case of every
registered test program (--gtest_list_tests) and checks that each is registered exactly once, that
the bound is set on exactly the ...Diagnosis and ...Broken cases, and that nothing is registered
that the program does not hold. --json reads CTest's listing from FILE instead of running
`ctest --show-only=json-v1` (for the check's own test). Exit 0 when all hold, 1 otherwise.
"""
import argparse
import collections
import json
import re
import subprocess
import sys

WAITS_OUT = re.compile(r"(^|/)Sm[^./]*(Diagnosis|Broken)\.")
REGISTERED = re.compile(r"^([^./]*/)?(Host|Sm)")


def listed_cases(exe):
    out = subprocess.run([exe, "--gtest_list_tests"], capture_output=True, text=True, timeout=120).stdout
    cases, suite = set(), None
    for line in out.splitlines():
        if not line.strip():
            continue
        if not line.startswith(" "):
            suite = line.split()[0]
        elif suite is not None:
            cases.add(suite + line.split()[0])
    return {case for case in cases if REGISTERED.match(case)}


def problems(listing, list_cases=listed_cases):
    registered = collections.defaultdict(collections.Counter)  # exe -> case -> times
    bounded = collections.defaultdict(set)
    for test in listing["tests"]:
        command = test.get("command") or []
        filters = [arg.split("=", 1)[1] for arg in command if arg.startswith("--gtest_filter=")]
        if not filters:
            continue
        exe, case = command[0], filters[0]
        registered[exe][case] += 1
        env = [value for prop in test.get("properties", []) if prop["name"] == "ENVIRONMENT"
               for value in prop["value"]]
        if any(value.startswith("COURSE_WAIT_LIMIT_MS=") for value in env):
            bounded[exe].add(case)
    found = []
    for exe, counts in sorted(registered.items()):
        cases = list_cases(exe)
        for case in sorted(cases - set(counts)):
            found.append(f"{exe}: {case} is not registered with CTest: it never runs")
        for case, times in sorted(counts.items()):
            if case not in cases:
                found.append(f"{exe}: {case} is registered but the program has no such test")
            if times > 1:
                found.append(f"{exe}: {case} is registered {times} times")
            if bool(WAITS_OUT.search(case)) != (case in bounded[exe]):
                want = "needs" if WAITS_OUT.search(case) else "must not have"
                found.append(f"{exe}: {case} {want} COURSE_WAIT_LIMIT_MS (the tests that wait out the bound)")
    return found, sum(sum(c.values()) for c in registered.values())


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("build")
    parser.add_argument("--ctest", default="ctest")
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    if args.json:
        with open(args.json, encoding="utf-8") as f:
            listing = json.load(f)
    else:
        run = subprocess.run([args.ctest, "--test-dir", args.build, "--show-only=json-v1"],
                             capture_output=True, text=True)
        if run.returncode != 0:
            print(f"test_registration: ctest --show-only failed: {run.stderr.strip()}")
            return 1
        listing = json.loads(run.stdout)
    found, count = problems(listing)
    for line in found:
        print(line)
    print(f"test_registration: {count} GoogleTest cases registered; {len(found)} problem(s)")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
