#!/usr/bin/env python3
"""Writes the measured parts of the grading scheme (docs/grading.md): time per chapter and points.

    scripts/course_plan.py [--check] [--root DIR] [--lab-times CSV]

Between `<!-- plan:times:begin -->` and `<!-- plan:times:end -->` of docs/grading.md it writes, for
every chapter, the minutes a student needs to read its core page and its reference page at 150
words a minute (prose only: code blocks and HTML comments are not counted, as scripts/page_limits.py
counts them), the number of graded exercises on the CPU and on a GPU, and the seconds its lesson
and lab take on an H200 with `--bench` (from docs/lab_times.csv, which a GPU machine's run writes:
`program,seconds,gpu` per line, e.g. `06_tma_1d.tma_1d_lab,7.9,NVIDIA H200`). Between
`<!-- plan:points:begin -->` and `<!-- plan:points:end -->` it writes the points of every exercise:
4 for one graded on the CPU, 8 for one graded on a GPU, 16 for an assignment (a whole kernel written
from an empty body and graded on speed too; its starter's first line begins `// Assignment`), 0 for
the warm-up (ungraded practice).
Between `<!-- plan:assignments:begin -->` and `<!-- plan:assignments:end -->` it writes each
assignment's speed floor (kSpeedFloor in its test) beside what its solution measured where the
assignment's run was recorded on a GPU (NN_topic/exercises/recorded/NAME.txt, written by
scripts/record_exercises.py, kept fresh by CTest exercises.recordings).
Between `<!-- plan:gpu-minutes:begin -->` and `<!-- plan:gpu-minutes:end -->` of docs/cluster.md it
writes the GPU-minutes of grading each week's chapters, from the lab-times rows `grade.weekN`.
With --check it writes nothing and exits 1 when the page is stale (CTest plan.fresh). A missing
marker or a bad lab-times line is one line naming the file and the line, exit 1, nothing written.
"""
import argparse
import csv
import math
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from page_limits import prose  # noqa: E402  (the one definition of a page's prose)
from make_slides import WEEKS  # noqa: E402  (the one definition of the six weeks)
from exercise import starter_of  # noqa: E402  (where an exercise's starter is)
from recordings_fresh import parse as parse_recording  # noqa: E402  (the one reader of a recording)

WORDS_PER_MINUTE = 150
POINTS = {"CPU": 4, "GPU": 8, "GPU assignment": 16}
WARMUP = "warmup"


class PlanError(Exception):
    pass


def prose_words(path):
    if not path.is_file():
        return 0
    lines = path.read_text(encoding="utf-8").splitlines()
    return sum(len(re.findall(r"[A-Za-z0-9][\w'’-]*", line)) for line in prose(lines))


def exercises(chapter_dir):
    """[(name, 'CPU', 'GPU' or 'GPU assignment')] of a chapter's graded exercises: a .cpp test runs
    on the CPU; an assignment's starter begins with the line `// Assignment N ...`."""
    found = []
    for test in sorted((chapter_dir / "exercises").glob("*_test.*")):
        name = re.sub(r"_test\.(cpp|cu)$", "", test.name)
        if test.suffix == ".cpp":
            found.append((name, "CPU"))
        else:
            gpu_suites = re.findall(r"\bclass\s+Sm\d+", test.read_text(encoding="utf-8"))
            starter = starter_of(test)
            first = starter.read_text(encoding="utf-8").split("\n", 1)[0] if starter else ""
            kind = "GPU assignment" if first.startswith("// Assignment") else "GPU"
            found.append((name, kind if gpu_suites else "CPU"))
    return found


def lab_times(path):
    """{program: (seconds, gpu)} from the lab-times file, or {} when there is none."""
    if not path.is_file():
        return {}
    times = {}
    with open(path, newline="", encoding="utf-8") as handle:
        for number, row in enumerate(csv.reader(handle), start=1):
            if not row or row[0].startswith("#") or row[0] == "program":
                continue
            if len(row) != 3:
                raise PlanError(f"{path}:{number}: expected program,seconds,gpu; got {len(row)} fields")
            try:
                seconds = float(row[1])
            except ValueError:
                raise PlanError(f"{path}:{number}: seconds '{row[1]}' is not a number")
            if not math.isfinite(seconds) or seconds < 0:
                raise PlanError(f"{path}:{number}: seconds '{row[1]}' is not a time")
            times[row[0]] = (seconds, row[2])
    return times


def minutes(words):
    return max(1, round(words / WORDS_PER_MINUTE)) if words else 0


def times_table(root, times):
    rows = ["| chapter | core page | reference page | exercises (CPU + GPU) | lesson on the GPU | lab on the GPU |",
            "| --- | ---: | ---: | ---: | ---: | ---: |"]
    gpus = sorted({gpu for _, gpu in times.values()})
    total_core = total_reference = 0
    for chapter_dir in sorted(root.glob("[0-9][0-9]_*/")):
        if not (chapter_dir / "CMakeLists.txt").is_file():
            continue
        chapter = chapter_dir.name
        core, reference = minutes(prose_words(chapter_dir / "README.md")), minutes(prose_words(chapter_dir / "REFERENCE.md"))
        total_core += core
        total_reference += reference
        graded = [kind for name, kind in exercises(chapter_dir) if name != WARMUP]
        lab = [key for key in times if key.startswith(chapter + ".") and key.endswith("_lab")]
        lesson = f"{times[chapter][0]:.0f} s" if chapter in times else "not measured"
        lab_text = f"{times[lab[0]][0]:.0f} s" if lab else "not measured"
        rows.append(f"| {chapter} | {core} min | {reference} min | {graded.count('CPU')} + {len(graded) - graded.count('CPU')} "
                    f"| {lesson} | {lab_text} |")
    rows.append(f"| **all** | **{total_core} min** | **{total_reference} min** | | | |")
    note = (f"Reading at {WORDS_PER_MINUTE} words a minute, prose only. Program times: `--bench` at the "
            f"default size (verify, then time), measured on {', '.join(gpus) if gpus else 'no GPU yet'}; "
            "a student also builds (about a minute per chapter on a few cores).")
    return "\n".join(rows + ["", note])


def points_table(root):
    rows = ["| chapter | exercise | graded on | points |", "| --- | --- | --- | ---: |"]
    total = 0
    for chapter_dir in sorted(root.glob("[0-9][0-9]_*/")):
        for name, kind in exercises(chapter_dir):
            points = 0 if name == WARMUP else POINTS[kind]
            total += points
            label = f"`{name}` (warm-up, ungraded)" if name == WARMUP else f"`{name}`"
            rows.append(f"| {chapter_dir.name} | {label} | {kind} | {points} |")
    rows.append(f"| **all** | | | **{total}** |")
    return "\n".join(rows)


def gpu_minutes_table(times):
    rows = ["| week | chapters | grading the starters on one GPU | on |", "| --- | --- | ---: | --- |"]
    total, measured = 0.0, 0
    for week, chapters in enumerate(WEEKS, start=1):
        key = f"grade.week{week}"
        if key in times:
            seconds, gpu = times[key]
            total += seconds
            measured += 1
            rows.append(f"| {week} | {', '.join(chapters)} | {seconds / 60:.1f} GPU-minutes | {gpu} |")
        else:
            rows.append(f"| {week} | {', '.join(chapters)} | not measured | |")
    if measured == len(WEEKS):
        rows.append(f"| **all** | | **{total / 60:.1f} GPU-minutes** | |")
    else:  # a sum of some weeks is no course total
        rows.append(f"| **all** | | **{total / 60:.1f} GPU-minutes for the {measured} weeks measured** | |")
    return "\n".join(rows)


def assignments_table(root):
    rows = ["| assignment | its floor | the solution measured | on |", "| --- | ---: | ---: | --- |"]
    for chapter_dir in sorted(root.glob("[0-9][0-9]_*/")):
        for name, kind in exercises(chapter_dir):
            if kind != "GPU assignment":
                continue
            test = chapter_dir / "exercises" / f"{name}_test.cu"
            floor = re.search(r"constexpr double kSpeedFloor = ([0-9.]+);", test.read_text(encoding="utf-8"))
            if not floor:
                raise PlanError(f"{test.relative_to(root)}: an assignment's test needs "
                                "'constexpr double kSpeedFloor = <ratio>;'")
            label = f"{chapter_dir.name} `{name}`"
            recording = chapter_dir / "exercises" / "recorded" / f"{name}.txt"
            speed, date = None, None
            if recording.is_file():
                try:
                    parsed = parse_recording(recording)
                except ValueError as error:
                    raise PlanError(f"{recording.relative_to(root)}: {error}")
                date = parsed["fields"]["date"]
                speed = re.search(r"speed \([^)]*\): ([0-9.]+)x cudaMemcpy device-to-device on (.+?) \(",
                                  "\n".join(parsed["runs"]["solution"][1]))
            if speed:
                rows.append(f"| {label} | {float(floor[1]):.2f} × | {float(speed[1]):.2f} × | "
                            f"{speed[2]}, {date} |")
            else:
                rows.append(f"| {label} | {float(floor[1]):.2f} × | not recorded | |")
    return "\n".join(rows)


def fill(text, name, body, page):
    begin, end = f"<!-- plan:{name}:begin -->", f"<!-- plan:{name}:end -->"
    if text.count(begin) != 1 or text.count(end) != 1 or text.index(begin) > text.index(end):
        raise PlanError(f"{page}: needs one '{begin}' before one '{end}'")
    head, rest = text.split(begin)
    _, tail = rest.split(end)
    return f"{head}{begin}\n{body}\n{end}{tail}"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if docs/grading.md is stale")
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parent.parent)
    parser.add_argument("--lab-times", type=Path, help="default: ROOT/docs/lab_times.csv")
    args = parser.parse_args()
    grading, cluster = args.root / "docs" / "grading.md", args.root / "docs" / "cluster.md"
    try:
        times = lab_times(args.lab_times or args.root / "docs" / "lab_times.csv")
        pages = {}
        old = grading.read_text(encoding="utf-8")
        new = fill(fill(old, "times", times_table(args.root, times), grading), "points",
                   points_table(args.root), grading)
        pages[grading] = (old, fill(new, "assignments", assignments_table(args.root), grading))
        old = cluster.read_text(encoding="utf-8")
        pages[cluster] = (old, fill(old, "gpu-minutes", gpu_minutes_table(times), cluster))
    except (PlanError, OSError, UnicodeDecodeError) as error:
        print(f"course_plan: {error}", file=sys.stderr)
        return 1
    stale = [page for page, (old, new) in pages.items() if old != new]
    for page in pages:
        name = page.relative_to(args.root)
        if page not in stale:
            print(f"{name} is up to date")
        elif args.check:
            print(f"{name} is stale: run scripts/course_plan.py")
    if args.check or not stale:
        return 1 if stale else 0
    for page in stale:
        temporary = page.with_name(page.name + ".tmp")
        temporary.write_text(pages[page][1], encoding="utf-8")
        temporary.replace(page)
        print(f"{page.relative_to(args.root)} written")
    return 0


if __name__ == "__main__":
    sys.exit(main())
