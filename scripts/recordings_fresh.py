#!/usr/bin/env python3
"""Checks the recorded GPU runs of the exercises (CTest: exercises.recordings).

    scripts/recordings_fresh.py [--root DIR] [--write-pending]

A GPU exercise is one whose test is a .cu file with a GPU suite (Sm<cc>[a]_..., the course's rule
for suite names). Most students cannot grade one, so scripts/record_exercises.py records, on a GPU
that can, what scripts/exercise.py NAME printed for the untouched starter and for the solution, in
NN_topic/exercises/recorded/NAME.txt; exercise.py shows it beside "not graded here".

A recording lists the exercise's sources, each with its SHA-256: the starter, the solution, the
test, and every file of the chapter folder (NN_topic/ or NN_topic/exercises/) that one of them
includes with a quoted #include, directly or through another such file (looked up as the build
does: beside the including file, then in the chapter folder, then in exercises/). The course's
library (common/course) is not part of them: a change of its wording (the bounded wait's diagnosis,
say) does not make a recording stale; re-record after such a change on purpose. The line `sources:`
is the SHA-256 of the per-file lines, so one hash says whether anything changed.

The check fails, with one line per problem, when
  - a recording's sources differ from the current files (it names the files that changed),
  - a recording cannot be read, holds a starter that passed or a solution that did not,
  - a recording is not of a GPU exercise of its chapter (a removed exercise, a typo, a CPU one),
  - a GPU exercise has no recording and is not listed in scripts/recordings_pending.txt,
  - a pending exercise has a recording (remove its line: the list only shrinks), or the pending
    list names something that is not a GPU exercise, or a line without a reason.
In a students' copy (no exercises/solutions/ folder) a recording's solution is not compared, nor
its starter, which holds the student's work.

--write-pending rewrites the pending list from the tree: every GPU exercise without a recording,
keeping the reason of a line already there. Exit status: 0 all fresh, 1 a problem, 2 a bad command
line.
"""
import argparse
import hashlib
import os
import re
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from capability_matrix import needs_of  # noqa: E402  (the suite-name rule, read the same way)
from exercise import exercises, starter_of  # noqa: E402  (what an exercise is, one definition)

ROOT = Path(__file__).resolve().parent.parent
PENDING = Path("scripts/recordings_pending.txt")
DEFAULT_REASON = "not recorded yet: needs a run of scripts/record_exercises.py on an H100 or H200"
PENDING_HEAD = """\
# GPU exercises without a recording of their run on a GPU (NN_topic/exercises/recorded/NAME.txt):
# one exercise name per line, with the reason after #. scripts/recordings_fresh.py (CTest
# exercises.recordings) fails on a GPU exercise that has neither a recording nor a line here, and on
# a line here whose exercise has a recording: once recorded, its line goes (the list only shrinks).
# Rewrite it from the tree with scripts/recordings_fresh.py --write-pending.
"""
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
RUN_HEAD = re.compile(r"^== (starter|solution)\b.*: exit (\d+), (\d+) lines?$")


def needs(test):
    """(capability as 90, arch-specific) that a GPU exercise's test needs; None for a CPU exercise."""
    if test.suffix != ".cu":
        return None
    return needs_of(test.read_text(errors="replace"))


def gpu_exercises(root):
    """{name: test source} of the GPU exercises."""
    return {name: test for name, test in exercises(root).items() if needs(test)}


def recording_path(test):
    name = test.name[: -len("_test" + test.suffix)]
    return test.parent / "recorded" / (name + ".txt")


def sources(root, test):
    """The exercise's sources, relative to root, in order: starter, solution, test, then the chapter
    files they include (sorted). The solution is listed even where it is absent (a students' copy)."""
    folder = test.parent
    chapter = folder.parent.resolve()
    starter = starter_of(test)
    if starter is None:
        raise ValueError(f"{test.relative_to(root)}: no single starter NAME.hpp, .cuh or .cu beside it")
    solution = folder / "solutions" / starter.name
    included, queue = set(), [p for p in (starter, solution, test) if p.is_file()]
    while queue:
        current = queue.pop()
        for name in INCLUDE.findall(current.read_text(errors="replace")):
            for base in (current.parent, folder.parent, folder):  # the build's -I order
                candidate = (base / name).resolve()
                if candidate.is_file():
                    if chapter in candidate.parents and candidate not in included:
                        included.add(candidate)
                        queue.append(candidate)
                    break
    own = {p.resolve() for p in (starter, solution, test)}
    headers = sorted(p for p in included if p not in own)
    listed = [starter, solution, test] + headers
    return [Path(os.path.relpath(p.resolve(), root.resolve())).as_posix() for p in listed]


def digest(path):
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else None


def current_hashes(root, test):
    """{path: SHA-256, or None for a file that is absent} of the exercise's current sources."""
    return {rel: digest(root / rel) for rel in sources(root, test)}


def source_lines(root, test):
    """The recording's per-file lines ("source: SHA256 PATH") for the current files, all present."""
    lines = []
    for rel, sha in current_hashes(root, test).items():
        if sha is None:
            raise ValueError(f"{rel} does not exist")
        lines.append(f"source: {sha} {rel}")
    return lines


def combined(lines):
    return hashlib.sha256("".join(line + "\n" for line in lines).encode()).hexdigest()


def parse(path):
    """A recording as {"fields": {key: value}, "sources": [(sha, path)], "runs": {which: (exit, [lines])}};
    ValueError naming what is wrong."""
    lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    fields, files, runs = {}, [], {}
    i = 0
    while i < len(lines) and not lines[i].startswith("== "):
        line = lines[i]
        i += 1
        if not line.strip() or line.startswith("#"):
            continue
        key, sep, value = line.partition(": ")
        if not sep:
            raise ValueError(f"line {i}: '{line[:60]}' is not 'key: value'")
        if key == "source":
            sha, _, rel = value.partition(" ")
            if not re.fullmatch(r"[0-9a-f]{64}", sha) or not rel:
                raise ValueError(f"line {i}: a source line is 'source: SHA256 PATH'")
            files.append((sha, rel))
        else:
            fields[key] = value
    while i < len(lines):
        head = RUN_HEAD.match(lines[i])
        if not head:
            raise ValueError(f"line {i + 1}: expected '== starter ...: exit N, K lines' or '== solution ...'")
        count = int(head[3])
        body = lines[i + 1: i + 1 + count]
        if len(body) != count:
            raise ValueError(f"line {i + 1}: {count} output lines announced, only {len(body)} follow")
        runs[head[1]] = (int(head[2]), body)
        i += 1 + count
    for key in ("date", "gpu", "sources"):
        if key not in fields:
            raise ValueError(f"the header lacks '{key}:'")
    if not files:
        raise ValueError("the header lists no 'source:' lines")
    if fields["sources"] != combined(f"source: {sha} {rel}" for sha, rel in files):
        raise ValueError("its 'sources:' hash is not the hash of its 'source:' lines (edited by hand?)")
    for which in ("starter", "solution"):
        if which not in runs:
            raise ValueError(f"no '== {which} ...' run")
    return {"fields": fields, "sources": files, "runs": runs}


def changed_sources(root, test, recording, skip_starter=False):
    """What differs between a parsed recording's sources and the current files, as phrases ("X
    changed", "X is new", "X is gone"); empty when the recording is fresh. A solution that is absent
    because the exercise has no solutions/ folder (a students' copy) is not compared. With
    skip_starter (exercise.py, in a student's tree) neither is the starter, which holds the
    student's own work, nor a file only the edited starter includes: the recorded files are judged."""
    starter = starter_of(test)
    if starter is None:
        return [f"{test.relative_to(root).as_posix()} has no single starter beside it"]
    ignored = set()
    if not (test.parent / "solutions").is_dir():
        ignored.add((test.parent / "solutions" / starter.name).relative_to(root).as_posix())
    if skip_starter:
        ignored.add(starter.relative_to(root).as_posix())
    then = {rel: sha for sha, rel in recording["sources"] if rel not in ignored}
    if skip_starter:
        now = {rel: digest(root / rel) for rel in then}
    else:
        now = {rel: sha for rel, sha in current_hashes(root, test).items() if rel not in ignored}
    phrases = []
    for rel, sha in then.items():
        if now.get(rel) is None:
            phrases.append(f"{rel} is gone")
        elif now[rel] != sha:
            phrases.append(f"{rel} changed")
    phrases += [f"{rel} is new" for rel in now if rel not in then]
    return phrases


def read_pending(path):
    """{name: reason} of the pending list and a list of problems (lines without a name or reason)."""
    pending, problems = {}, []
    if not path.is_file():
        return pending, problems
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        text = line.strip()
        if not text or text.startswith("#"):
            continue
        name, _, reason = text.partition("#")
        name, reason = name.strip(), reason.strip()
        if not re.fullmatch(r"[a-z0-9_]+", name):
            problems.append(f"{path.name}:{number}: '{name}' is not an exercise name "
                            "(one name per line, then # reason)")
        else:
            pending[name] = reason
            if not reason:
                problems.append(f"{path.name}:{number}: '{name}' has no reason "
                                f"(write '{name}  # why it is not recorded yet')")
    return pending, problems


def check(root):
    """The problems (one line each) and a summary line."""
    gpu = gpu_exercises(root)
    known = exercises(root)
    pending_file = root / PENDING
    pending, problems = read_pending(pending_file)
    recorded = set()
    for path in sorted(root.glob("[0-9][0-9]_*/exercises/recorded/*")):
        rel = path.relative_to(root).as_posix()
        name = path.stem
        chapter = path.parent.parent.parent.name
        if path.suffix != ".txt" or not path.is_file():
            problems.append(f"{rel}: not a recording (recorded/ holds NAME.txt files only)")
            continue
        if name not in known or known[name].parent.parent.name != chapter:
            problems.append(f"{rel}: '{name}' is not an exercise of {chapter}: remove the recording")
            continue
        if name not in gpu:
            problems.append(f"{rel}: '{name}' is a CPU exercise (graded on every machine): remove the recording")
            continue
        recorded.add(name)
        try:
            recording = parse(path)
        except (ValueError, UnicodeDecodeError) as error:
            problems.append(f"{rel}: cannot be read: {error}")
            continue
        # In a students' copy (no solutions/) the starter holds the student's work: not compared.
        students_copy = not (gpu[name].parent / "solutions").is_dir()
        changes = changed_sources(root, gpu[name], recording, skip_starter=students_copy)
        if changes:
            problems.append(f"{rel}: stale: {'; '.join(changes[:4])}{' ...' if len(changes) > 4 else ''} since "
                            f"{recording['fields']['date']}: re-record with scripts/record_exercises.py {name}")
        starter_exit, solution_exit = recording["runs"]["starter"][0], recording["runs"]["solution"][0]
        if starter_exit != 1:
            problems.append(f"{rel}: the untouched starter exited {starter_exit}, not 1 (to do)")
        if solution_exit != 0:
            problems.append(f"{rel}: the solution exited {solution_exit}, not 0 (done)")
    for name in sorted(gpu, key=lambda n: (gpu[n].parent.parent.name, n)):
        if name not in recorded and name not in pending:
            problems.append(f"{recording_path(gpu[name]).relative_to(root).as_posix()}: missing: GPU exercise "
                            f"'{name}' has no recording and is not listed in {PENDING}")
    for name in sorted(pending):
        if name not in gpu:
            problems.append(f"{PENDING}: '{name}' is not a GPU exercise of the course: remove its line")
        elif name in recorded:
            problems.append(f"{PENDING}: '{name}' has a recording: remove its line (the list only shrinks)")
    summary = (f"recordings: {len(recorded)} of {len(gpu)} GPU exercises recorded, "
               f"{len([n for n in pending if n in gpu and n not in recorded])} pending")
    return problems, summary


def write_pending(root):
    """Rewrites the pending list: every GPU exercise without a recording, in chapter order."""
    path = root / PENDING
    old, _ = read_pending(path)
    old = {n: r for n, r in old.items() if r}
    gpu = gpu_exercises(root)
    names = [n for n, t in sorted(gpu.items(), key=lambda item: (item[1].parent.parent.name, item[0]))
             if not recording_path(t).exists()]
    width = max((len(n) for n in names), default=0)
    text = PENDING_HEAD + "".join(f"{n:{width}}  # {old.get(n, DEFAULT_REASON)}\n" for n in names)
    write_atomically(path, text)
    return names


def write_atomically(path, text):
    """Writes text to path through a temporary file in the same folder renamed over it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix="." + path.name + ".", suffix=".tmp")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(text)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=ROOT)
    parser.add_argument("--write-pending", action="store_true",
                        help="rewrite scripts/recordings_pending.txt: every GPU exercise without a recording")
    args = parser.parse_args()
    root = args.root.resolve()
    if not (root / "scripts").is_dir() or not list(root.glob("[0-9][0-9]_*")):
        print(f"recordings_fresh: {root} is not the course's root (no scripts/ and NN_topic/ folders)")
        return 2
    if args.write_pending:
        names = write_pending(root)
        print(f"recordings_fresh: {PENDING} lists {len(names)} GPU exercises without a recording"
              f"{': ' + ', '.join(names) if names else ''}")
    problems, summary = check(root)
    for problem in problems:
        print(problem)
    print(summary + (f"; {len(problems)} problem(s)" if problems else "; all fresh"))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
