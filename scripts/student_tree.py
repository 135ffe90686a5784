#!/usr/bin/env python3
"""Writes the students' copy of the course: everything but the answers.

    scripts/student_tree.py OUT [--root DIR]

OUT (a new or empty folder) receives every file of the course that git tracks, except:
  - every exercise's solution (NN_topic/exercises/solutions/),
  - the quizzes' answers: the answer folds of the chapter pages (<details><summary>Answer</summary>
    ... </details>) are removed, and so are the answer keys and GIFT exports (docs/quizzes/answers/,
    docs/quizzes/*.gift) and the diagnostic's answers (docs/diagnostic_answers.md),
  - page passages that answer an exercise, marked on the pages as
        <!-- answer:begin NAME -->  ...  <!-- answer:end -->
    (NAME is the exercise they answer); each is replaced by one line saying what was left out,
  - the `solutions` presets of CMakePresets.json and the script that checks solutions against
    starters (scripts/check_exercises.py).
The copy configures, builds and grades like the course (`cmake --workflow --preset exercises`, or
slurm/grade.sh): its untouched starters fail their tests, as they should. A marker without its end
is an error naming the page and the line, and nothing is written. Exit status: 0 written, 1 a page
or the root is wrong, 2 a bad command line or an OUT that is not a new or empty folder.
"""
import argparse
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

ANSWER_FOLD = re.compile(r"^[ \t]*<details>\s*<summary>\s*Answer\s*</summary>.*?</details>[ \t]*\n", re.S | re.M)
PASSAGE_BEGIN = re.compile(r"^[ \t]*<!-- answer:begin (?P<name>[a-z0-9_]+) -->[ \t]*$")
PASSAGE_END = re.compile(r"^[ \t]*<!-- answer:end -->[ \t]*$")
LEFT_OUT_FILES = ("docs/diagnostic_answers.md", "scripts/check_exercises.py")


class TreeError(Exception):
    pass


def left_out(relative):
    parts = relative.split("/")
    if any(a == "exercises" and b == "solutions" for a, b in zip(parts, parts[1:])):
        return True
    if relative.startswith("docs/quizzes/answers/") or (relative.startswith("docs/quizzes/")
                                                          and relative.endswith(".gift")):
        return True
    return relative in LEFT_OUT_FILES


def strip_page(name, text):
    """The page without answer folds and marked answer passages."""
    text = ANSWER_FOLD.sub("", text)
    out, inside, begun = [], None, 0
    for number, line in enumerate(text.splitlines(keepends=True), start=1):
        begin, end = PASSAGE_BEGIN.match(line), PASSAGE_END.match(line)
        if begin:
            if inside:
                raise TreeError(f"{name}:{number}: an answer passage begins inside another (from line {begun})")
            inside, begun = begin["name"], number
            out.append(f"*(Left out of the students' copy: this passage answers the exercise "
                       f"`{inside}`.)*\n")
        elif end:
            if not inside:
                raise TreeError(f"{name}:{number}: '<!-- answer:end -->' without its begin")
            inside = None
        elif not inside:
            out.append(line)
    if inside:
        raise TreeError(f"{name}:{begun}: answer passage '{inside}' has no '<!-- answer:end -->'")
    return "".join(out)


def strip_presets(text):
    presets = json.loads(text)
    for kind in ("configurePresets", "buildPresets", "testPresets", "workflowPresets"):
        presets[kind] = [p for p in presets.get(kind, []) if p.get("name") != "solutions"
                         and p.get("configurePreset") != "solutions"]
    return json.dumps(presets, indent=2) + "\n"


def tracked_files(root):
    try:
        listing = subprocess.run(["git", "-C", str(root), "ls-files", "-z"], capture_output=True, check=True)
        return sorted(name for name in listing.stdout.decode("utf-8").split("\0") if name)
    except (OSError, subprocess.CalledProcessError):
        skip = ("build", ".git", "out", "node_modules", "__pycache__")
        return sorted(str(p.relative_to(root)) for p in root.rglob("*")
                      if p.is_file() and not any(part.startswith(skip) for part in p.relative_to(root).parts))


def plan(root):
    """{relative path: bytes or None (copy as is)} of the students' copy, checked before anything is written."""
    files = {}
    for relative in tracked_files(root):
        source = root / relative
        if left_out(relative) or not source.is_file():
            continue
        if relative.endswith(".md"):
            files[relative] = strip_page(relative, source.read_text(encoding="utf-8")).encode("utf-8")
        elif relative == "CMakePresets.json":
            files[relative] = strip_presets(source.read_text(encoding="utf-8")).encode("utf-8")
        else:
            files[relative] = None
    return files


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="a new or empty folder")
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parent.parent)
    args = parser.parse_args()
    root = args.root.resolve()
    if not (root / "CMakeLists.txt").is_file() or not (root / "common" / "course").is_dir():
        print(f"student_tree: {root} is not the course's root (no CMakeLists.txt and common/course)", file=sys.stderr)
        return 1
    out = args.out.resolve()
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        print(f"student_tree: {args.out} must be a new or empty folder", file=sys.stderr)
        return 2
    if out == root or root in out.parents:
        print(f"student_tree: {args.out} is inside the course's tree; write the copy elsewhere", file=sys.stderr)
        return 2
    try:
        files = plan(root)
    except (TreeError, UnicodeDecodeError, json.JSONDecodeError) as error:
        print(f"student_tree: {error}", file=sys.stderr)
        return 1
    for relative, content in files.items():
        target = out / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        if content is None:
            shutil.copy2(root / relative, target)
        else:
            target.write_bytes(content)
    solutions = sum(1 for r in tracked_files(root) if left_out(r))
    print(f"student_tree: {len(files)} files written to {args.out} ({solutions} left out: solutions and answers)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
