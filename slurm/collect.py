#!/usr/bin/env python3
"""Turns the grading jobs' test results into verdicts.

    slurm/collect.py --summary JUNIT   one line per exercise of one student's results
    slurm/collect.py OUT               the class table: OUT/class.csv (student, exercise, verdict)
                                       from every OUT/<student>/junit.xml, and a count per verdict

An exercise is `passed` when every one of its tests passed, `failed` when any failed, and
`not graded here` when its tests skipped (the GPU that ran them lacks what the exercise needs).
A student whose job left no junit.xml is listed with the verdict `no results` and the first line of
their summary.txt, if any.
"""
import argparse
import csv
import re
import sys
import xml.etree.ElementTree as ET
from collections import OrderedDict
from pathlib import Path

NAME = re.compile(r"^(?P<chapter>\d\d_[a-z0-9_]+)\.exercises\.(?P<exercise>[a-z0-9_]+)\.")


def verdicts(junit):
    """{exercise: verdict} from one CTest JUnit file, in the file's order."""
    counts = OrderedDict()
    for case in ET.parse(junit).getroot().iter("testcase"):
        match = NAME.match(case.get("name", ""))
        if not match:
            continue
        tally = counts.setdefault(f"{match['chapter']}/{match['exercise']}", [0, 0, 0])
        text = "".join(node.text or "" for node in case.iter("system-out"))
        if case.get("status") == "fail" or case.find("failure") is not None:
            tally[1] += 1
        elif case.get("status") == "notrun" or case.find("skipped") is not None or "[  SKIPPED ]" in text:
            tally[2] += 1
        else:
            tally[0] += 1
    return OrderedDict((name, "failed" if failed else "passed" if passed else "not graded here")
                       for name, (passed, failed, _) in counts.items())


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--summary", metavar="JUNIT", help="print one student's verdicts from JUNIT")
    parser.add_argument("out", nargs="?", help="the class's results folder (OUT/<student>/junit.xml)")
    args = parser.parse_args()
    if bool(args.summary) == bool(args.out):
        parser.error("give either --summary JUNIT or OUT")
    try:
        if args.summary:
            table = verdicts(args.summary)
            if not table:
                print(f"collect: {args.summary} holds no exercise tests", file=sys.stderr)
                return 1
            for name, verdict in table.items():
                print(f"{name}: {verdict}")
            return 0
        out = Path(args.out)
        if not out.is_dir():
            print(f"collect: {out} is not a folder", file=sys.stderr)
            return 1
        rows, totals = [], OrderedDict()
        for student in sorted(p for p in out.iterdir() if p.is_dir()):
            junit = student / "junit.xml"
            if junit.is_file():
                for name, verdict in verdicts(junit).items():
                    rows.append((student.name, name, verdict))
                    totals[verdict] = totals.get(verdict, 0) + 1
            else:
                summary = student / "summary.txt"
                first = summary.read_text(errors="replace").splitlines()[0] if summary.is_file() else ""
                rows.append((student.name, "", f"no results{': ' + first if first else ''}"))
                totals["no results"] = totals.get("no results", 0) + 1
        with open(out / "class.csv", "w", newline="") as handle:
            writer = csv.writer(handle, lineterminator="\n")
            writer.writerow(["student", "exercise", "verdict"])
            writer.writerows(rows)
        students = len({row[0] for row in rows})
        print(f"{out / 'class.csv'}: {students} students, "
              + ", ".join(f"{count} {verdict}" for verdict, count in totals.items()))
        return 0
    except (ET.ParseError, OSError) as error:
        print(f"collect: {error}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
