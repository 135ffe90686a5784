#!/usr/bin/env python3
"""scripts/test_registration.py on a made-up CTest listing: a clean one passes, each planted fault
(a case never registered, one registered twice, one the program lacks, the bound missing or where
it does not belong) is reported, and only it."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_registration import problems  # noqa: E402

CASES = {"HostModel.Counts", "Sm90_Ring.Wraps", "Lab/Sm90_Ring.Rows/ring", "Sm90_RingDiagnosis.Hangs",
         "Lab/Sm90_RingBroken.Counts/ring"}
BOUNDED = {"Sm90_RingDiagnosis.Hangs", "Lab/Sm90_RingBroken.Counts/ring"}


def test(case, bounded):
    props = [{"name": "ENVIRONMENT", "value": ["COURSE_WAIT_LIMIT_MS=1000"]}] if bounded else []
    return {"command": ["/b/t", f"--gtest_filter={case}"], "properties": props}


def listing(cases=CASES, bounded=BOUNDED):
    return {"tests": [test(c, c in bounded) for c in sorted(cases)] + [{"command": ["/b/lesson"]}]}


def check(name, data, expect):
    found, _ = problems(data, list_cases=lambda exe: set(CASES))
    ok = len(found) == (1 if expect else 0) and (not expect or expect in found[0])
    print(f"{'ok' if ok else 'FAIL'}: {name}: {found}")
    return ok


results = [
    check("clean", listing(), None),
    check("a case never registered", listing(CASES - {"Sm90_Ring.Wraps"}), "Sm90_Ring.Wraps is not registered"),
    check("a case registered twice",
          {"tests": listing()["tests"] + [test("Sm90_Ring.Wraps", False)]}, "registered 2 times"),
    check("a case the program lacks", listing(CASES | {"Sm90_Gone.Test"}), "has no such test"),
    check("the bound missing", listing(bounded=BOUNDED - {"Sm90_RingDiagnosis.Hangs"}),
          "Sm90_RingDiagnosis.Hangs needs COURSE_WAIT_LIMIT_MS"),
    check("the bound where it does not belong", listing(bounded=BOUNDED | {"Lab/Sm90_Ring.Rows/ring"}),
          "Lab/Sm90_Ring.Rows/ring must not have"),
]
sys.exit(0 if all(results) else 1)
