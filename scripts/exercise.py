#!/usr/bin/env python3
"""Checks one graded exercise: builds what changed, runs its tests, says what is wrong.

    scripts/exercise.py NAME [--build DIR]

NAME is an exercise's name, the stem of NN_topic/exercises/NAME_test.cpp or NAME_test.cu (for
example ring_cursor); a path to its starter or test is taken too. The first run configures the
build folder (build-exercises/, the exercises preset's settings) for that exercise's chapter
only; a later run for another chapter adds it. Then the exercise's own target is built, so a
changed starter is always recompiled, and its test program runs. Printed: the verdict, and for a
failing exercise the sentences its failed checks say (not the test framework's expressions); an
assignment's speed check adds the measured speed, as a ratio to cudaMemcpy, passed or failed.

Exit status: 0 the exercise passes, 1 it fails (or does not compile), 77 not graded here (the
machine lacks what its GPU checks need), 2 NAME is not an exercise.

Not graded here, a GPU exercise that has a recording (NN_topic/exercises/recorded/NAME.txt, written
by scripts/record_exercises.py on a GPU that grades it) is followed by what that GPU printed for the
untouched starter and for the solution, with the GPU and the date, within the same 30 lines; when
the test, the solution or a chapter file it includes has changed since (the recording's hashes; the
starter is the student's own and is not compared), it says the recording is stale.

    scripts/exercise.py --summary JUNIT

prints the summary that ends `cmake --workflow --preset exercises` (CTest runs it after the
tests; cmake/CourseExercises.cmake sets that up): one line per chapter naming its exercises
done, to do and not graded here, what the machine lacks for the last, and how to check one
exercise; at most 40 lines. JUNIT is the run's JUnit file, removed once read (a later run without
the preset prints no stale summary); nothing is printed when it does not exist.
"""
import argparse
import difflib
import json
import re
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from collections import OrderedDict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SKIP_CODE = 77
MAX_SENTENCES = 24        # failure lines printed; the whole output stays within 30 lines
MAX_PER_TEST = 3          # failures shown per test, so that every failing test gets a say
RUN_TIMEOUT_S = 900       # the bounded waits stop a stuck kernel long before this

# Lines GoogleTest writes around a check's own message; a line indented under one of them
# (the expressions and their values) is GoogleTest's too.
GTEST_LINE = re.compile(
    r"^(Expected equality of these values:|Expected: |Expected |Value of: |\s+Actual: |Actual: |"
    r"Which is: |Death test: |\s+Result: |Actual msg:|The difference between |Failed$|"
    r"Expected equality|Expected (?:non-)?fatal failure|Mock function|Google Mock)")
EXCEPTION = re.compile(r'^C\+\+ exception with description "(.*)" thrown in the test body\.$')
DEATH_PREFIX = "[  DEATH   ] "
NAME = re.compile(r"^(?P<chapter>\d\d_[a-z0-9_]+)\.exercises\.(?P<exercise>[a-z0-9_]+)\.")


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


def exercises(root=ROOT):
    """{name: test source} for every exercise of the course in @p root (NN_topic/exercises/NAME_test.cpp
    or .cu)."""
    found = {}
    for test in sorted(root.glob("[0-9][0-9]_*/exercises/*_test.c*")):
        if test.suffix in (".cpp", ".cu"):
            found[test.name[: -len("_test" + test.suffix)]] = test
    return found


def starter_of(test):
    """The starter next to an exercise's test (NAME.hpp, .cuh or .cu), or None."""
    name = test.name[: -len("_test" + test.suffix)]
    found = [test.parent / (name + ext) for ext in (".hpp", ".cuh", ".cu") if (test.parent / (name + ext)).is_file()]
    return found[0] if len(found) == 1 else None


def sentences(failure):
    """The check's own sentences from one GoogleTest failure text (without its expressions)."""
    lines = failure.split("\n")[1:]  # the first line is file:line
    kept, trace = [], []
    under_gtest = in_trace = False
    for line in lines:
        if line.startswith("Google Test trace:"):
            in_trace = True
            continue
        if in_trace:
            match = re.match(r"^.*?:\d+: (.*)$", line)
            if match and match[1].strip():
                trace.append(match[1].strip())
            continue
        if line.startswith(DEATH_PREFIX):
            line = line[len(DEATH_PREFIX):]
            under_gtest = False
        elif GTEST_LINE.match(line):
            under_gtest = True
            continue
        elif under_gtest and line[:1].isspace():
            continue
        else:
            under_gtest = False
        match = EXCEPTION.match(line)
        if match:
            line = match[1]
        if line.strip():
            kept.append(line.strip())
    # A trace (SCOPED_TRACE) adds where the check ran, unless the sentence says it already.
    context = [t for t in trace if not any(t in sentence for sentence in kept)]
    if kept and context:
        kept[-1] += " (" + "; ".join(context) + ")"
    return kept


def cache_value(build, key):
    cache = build / "CMakeCache.txt"
    if not cache.is_file():
        return None
    match = re.search(rf"^{key}:[A-Z]+=(.*)$", cache.read_text(errors="replace"), re.M)
    return match[1] if match else None


NOISE = re.compile(r"^(g?make(\[\d+\])?: |ninja: |\[\d+/\d+\] |\[ *\d+%\] |FAILED: |\S*(nvcc|c\+\+|g\+\+|clang\+\+) )")


def show_tail(output, root, limit=20):
    """The lines of a failed command's output that say why (the compiler's errors and the source
    lines it quotes, without the build tool's own lines), else its last lines; paths relative."""
    every = [line.replace(str(root) + "/", "") for line in output.splitlines() if line.strip()]
    # Only the build tool's lines (a build folder without its build files, say): those, then.
    lines = [line for line in every if not NOISE.match(line)] or every
    errors = [i for i, line in enumerate(lines) if re.search(r"\berror\b|Error", line)]
    picked = []
    for i in errors:
        for j in range(i, min(i + 3, len(lines))):
            if j not in picked:
                picked.append(j)
    chosen = [lines[j] for j in sorted(picked)] if picked else lines[-limit:]
    for line in chosen[:limit]:
        print("  " + line[:300])
    if len(chosen) > limit:
        print(f"  ... {len(chosen) - limit} more lines")


MAX_LINES = 30           # everything exercise.py prints for one exercise
MAX_LINE_CHARS = 200     # a recorded line longer than this is cut


def recorded_block(name, test, budget):
    """The lines that show the recording of a GPU exercise (empty when it has none), at most budget."""
    path = test.parent / "recorded" / f"{name}.txt"
    if not path.is_file():
        return []
    from recordings_fresh import changed_sources, parse  # only needed here
    where = path.relative_to(ROOT).as_posix()
    try:
        recording = parse(path)
    except (OSError, ValueError) as error:
        return [f"(a recording of this exercise, {where}, cannot be read: {error})"]
    fields = recording["fields"]
    lines = [f"Recorded on {fields['gpu']}, {fields['date']} ({where}):"]
    changes = changed_sources(ROOT, test, recording, skip_starter=True)
    if changes:
        lines.append(f"  stale: {'; '.join(changes[:2])}{' ...' if len(changes) > 2 else ''} since it was recorded, "
                     "so it may differ from what this exercise prints now")
    (starter_code, starter), (solution_code, solution) = recording["runs"]["starter"], recording["runs"]["solution"]
    room = budget - len(lines) - 2  # the two titles
    if len(starter) + len(solution) <= room:
        starter_room, solution_room = len(starter), len(solution)
    else:
        solution_room = min(len(solution), max(3, room - len(starter)))
        starter_room = room - solution_room

    def shown(output, room):
        cut = [line if len(line) <= MAX_LINE_CHARS else line[: MAX_LINE_CHARS - 3] + "..." for line in output]
        if len(cut) > room:
            cut = cut[: max(room - 1, 0)] + [f"... {len(output) - max(room - 1, 0)} more lines in {where}"]
        return ["    " + line for line in cut]

    lines.append(f"  the untouched starter printed (exit {starter_code}):")
    lines += shown(starter, starter_room)
    lines.append(f"  the solution printed (exit {solution_code}):")
    lines += shown(solution, solution_room)
    return lines[:budget]


def configure(build, chapter):
    """Configures build (the exercises preset) when it is missing, set otherwise or lacks chapter."""
    chapters = cache_value(build, "COURSE_ONLY_CHAPTERS")
    # A configure that stopped half-way leaves a cache without the generator's build file.
    build_file = "build.ninja" if "Ninja" in (cache_value(build, "CMAKE_GENERATOR") or "") else "Makefile"
    ready = (chapters is not None and cache_value(build, "COURSE_EXERCISES") in ("ON", "TRUE", "1")
             and cache_value(build, "COURSE_EXERCISE_SOLUTIONS") in ("OFF", "FALSE", "0", "")
             and (build / build_file).is_file())
    if ready and (chapters == "" or chapter in chapters.split(";")):
        return True
    wanted = [c for c in (chapters or "").split(";") if c and c != "none"] if ready else []
    wanted.append(chapter)
    print(f"configuring {build.name}/ for {', '.join(wanted)} (the first time takes a minute)")
    command = ["cmake", "--preset", "exercises", "-B", str(build), "-DCOURSE_ONLY_CHAPTERS=" + ";".join(wanted)]
    result = subprocess.run(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if result.returncode != 0:
        print(f"exercise.py: configuring {build.name}/ failed ({' '.join(command)}):")
        show_tail(result.stdout, ROOT)
        return False
    return True


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--summary":
        junit = Path(sys.argv[2])
        if junit.is_file():
            lines = summary(junit)
            junit.unlink()
            print("\n" + "\n".join(lines))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("name", help="the exercise, e.g. ring_cursor")
    parser.add_argument("--build", default=None, help="build folder (default: build-exercises/ in the course)")
    args = parser.parse_args()

    known = exercises()
    name = args.name
    if "/" in name or "." in name:  # a path to the starter, the test or the solution
        name = re.sub(r"_test$", "", Path(name).name.split(".")[0])
    if name not in known:
        near = difflib.get_close_matches(name, known, n=5, cutoff=0.5)
        hint = f"near names: {', '.join(near)}" if near else f"the exercises: {', '.join(sorted(known))}"
        print(f"exercise.py: '{args.name}' is not an exercise (NAME is the stem of an "
              f"NN_topic/exercises/NAME_test.cpp or .cu file); {hint}")
        return 2
    test = known[name]
    chapter = test.parent.parent.name
    starter = (starter_of(test) or test).relative_to(ROOT)
    build = Path(args.build).resolve() if args.build else ROOT / "build-exercises"

    if not configure(build, chapter):
        return 1
    target = f"{chapter}_exercise_{name}"
    result = subprocess.run(["cmake", "--build", str(build), "--target", target], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if result.returncode != 0:
        print(f"{name}: to do: {starter} does not compile; the compiler says:")
        show_tail(result.stdout, ROOT)
        return 1

    program = build / chapter / "exercises" / f"exercise_{name}"
    with tempfile.TemporaryDirectory() as scratch:
        report = Path(scratch) / "report.json"
        try:
            run = subprocess.run([str(program), "--gtest_filter=Host*:*/Host*:Sm*:*/Sm*",
                                  f"--gtest_output=json:{report}"], cwd=program.parent,
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                 errors="replace", timeout=RUN_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            print(f"{name}: to do: its tests did not finish within {RUN_TIMEOUT_S} s (a wait that never returns?)")
            return 1
        if not report.is_file():
            print(f"{name}: to do: the test program stopped before it finished (exit status {run.returncode});")
            print(f"  run {program.relative_to(ROOT) if program.is_relative_to(ROOT) else program} to see where")
            return 1
        tests = [t for suite in json.loads(report.read_text())["testsuites"] for t in suite["testsuite"]]

    reasons = []
    for match in re.finditer(r": Skipped\n(.+)", run.stdout):
        if match[1].strip() not in reasons:
            reasons.append(match[1].strip())
    speeds = [f"speed ({t['name']}): {t['speed']}" for t in tests if t.get("speed")]
    failed = [t for t in tests if t.get("failures")]
    skipped = [t for t in tests if t.get("result") == "SKIPPED" and not t.get("failures")]
    passed = len(tests) - len(failed) - len(skipped)

    if failed:
        print(f"{name}: to do: {len(failed)} of {len(tests)} checks fail ({starter})")
        shown, more = [], 0
        for t in failed:
            for failure in t["failures"][:MAX_PER_TEST]:
                for sentence in sentences(failure["failure"]) or ["(this check failed without a message)"]:
                    if sentence in shown:
                        continue
                    if len(shown) < MAX_SENTENCES:
                        shown.append(sentence)
                        print("  " + sentence)
                    else:
                        more += 1
        if more:
            print(f"  ... and {more} more")
        for line in speeds:
            if not any(line.split(": ", 1)[1] in sentence for sentence in shown):
                print("  " + line)
        if skipped:
            print(f"  ({len(skipped)} GPU checks not graded here: {'; '.join(reasons) or 'skipped'})")
        return 1
    if not tests:
        print(f"{name}: no check ran (the test program holds no Host or Sm test)")
        return 1
    if skipped:
        host = f"its {passed} host checks pass; " if passed else ""
        print(f"{name}: not graded here: {host}{len(skipped)} GPU checks skipped: "
              f"{'; '.join(reasons) or 'no reason printed'}")
        for line in recorded_block(name, test, MAX_LINES - 1):
            print(line)
        return SKIP_CODE
    print(f"{name}: done: all {len(tests)} checks pass")
    for line in speeds:
        print("  " + line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
