#!/usr/bin/env python3
"""Checks the limits of every chapter's core page and lessons (CTest: pages.limits).

    scripts/page_limits.py [--root DIR] [--pending FILE]

For every chapter NN_topic/ the core page README.md must have
  - at most 450 lines,
  - at most 3,500 words of prose (words outside fenced code blocks and HTML comments),
  - a heading "What to remember" followed by 4 to 6 bullets (before the next heading),
  - a link to REFERENCE.md where the chapter has a reference page,
  - at least one figure: an image link to an .svg file that exists;
and every lesson (the LESSONS of the chapter's CMakeLists.txt, NAME.cu each) lines of at most 100
characters (its 350-line and 4-variant limits are checked by cmake/CourseLessonLimits.cmake).

A chapter listed in the pending file (default: scripts/page_limits_pending.txt, one chapter folder
per line, # starts a comment) is being reshaped: its problems are reported as "pending" and do not
fail the check. Once its page meets the limits, its line is removed. Every other chapter must pass.
Each problem is one line naming the file (and line) and the rule. Exit status: 0 if every chapter
that is not pending passes, 1 otherwise, 2 for a bad command line or a bad pending file.
"""
import argparse
import re
import sys
from pathlib import Path

MAX_PAGE_LINES = 450
MAX_PROSE_WORDS = 3500
REMEMBER_BULLETS = (4, 6)
MAX_LESSON_COLUMNS = 100
REMEMBER = re.compile(r"^#{1,6}\s+What to remember\b", re.I)
HEADING = re.compile(r"^#{1,6}\s")
FENCE = re.compile(r"^\s*(```|~~~)")
BULLET = re.compile(r"^([-*+]|\d+[.)])\s+\S")
SVG_LINK = re.compile(r"!\[[^\]]*\]\(\s*<?([^)\s>]+\.svg)>?(?:\s+\"[^\"]*\")?\s*\)|<img\b[^>]*\bsrc=\"([^\"]+\.svg)\"", re.I)
REFERENCE_LINK = re.compile(r"\]\(\s*(?:\./)?REFERENCE\.md(?:#[\w-]*)?\s*\)|href=\"(?:\./)?REFERENCE\.md")


def prose(lines):
    """The page's lines with fenced code blocks and HTML comments blanked out (line numbers kept)."""
    out, in_fence, in_comment = [], None, False
    for line in lines:
        if in_fence:
            if line.strip().startswith(in_fence):
                in_fence = None
            out.append("")
            continue
        fence = FENCE.match(line)
        if fence and not in_comment:
            in_fence = fence.group(1)
            out.append("")
            continue
        text = ""
        rest = line
        while rest:
            if in_comment:
                end = rest.find("-->")
                if end < 0:
                    rest = ""
                else:
                    in_comment, rest = False, rest[end + 3:]
            else:
                start = rest.find("<!--")
                if start < 0:
                    text, rest = text + rest, ""
                else:
                    text, rest, in_comment = text + rest[:start] + " ", rest[start + 4:], True
        out.append(text)
    return out


def page_problems(page):
    """The problems of a chapter's core page, one line each."""
    lines = page.read_text(encoding="utf-8").splitlines()
    name = f"{page.parent.name}/{page.name}"
    problems = []
    if len(lines) > MAX_PAGE_LINES:
        problems.append(f"{name}: {len(lines)} lines, more than {MAX_PAGE_LINES}")
    text = prose(lines)
    words = sum(len(line.split()) for line in text)
    if words > MAX_PROSE_WORDS:
        problems.append(f"{name}: {words} words of prose (outside code blocks and comments), "
                        f"more than {MAX_PROSE_WORDS:,}")
    remember = [n for n, line in enumerate(text) if REMEMBER.match(line)]
    if not remember:
        problems.append(f"{name}: no heading \"What to remember\"")
    elif len(remember) > 1:
        problems.append(f"{name}:{remember[1] + 1}: a second heading \"What to remember\"")
    else:
        bullets = 0
        for line in text[remember[0] + 1:]:
            if HEADING.match(line):
                break
            bullets += bool(BULLET.match(line))  # top-level bullets only: no indentation
        low, high = REMEMBER_BULLETS
        if not low <= bullets <= high:
            problems.append(f"{name}:{remember[0] + 1}: \"What to remember\" has {bullets} bullets, "
                            f"not {low} to {high}")
    if (page.parent / "REFERENCE.md").is_file() and not any(REFERENCE_LINK.search(line) for line in text):
        problems.append(f"{name}: no link to REFERENCE.md, the chapter's reference page")
    figures = [(n, match.group(1) or match.group(2)) for n, line in enumerate(text)
               for match in SVG_LINK.finditer(line)]
    if not figures:
        problems.append(f"{name}: no figure (an image link to an .svg file)")
    for n, target in figures:
        if "://" not in target and not (page.parent / target.split("#")[0]).is_file():
            problems.append(f"{name}:{n + 1}: figure {target} does not exist")
    return problems


def lessons(folder):
    """The LESSONS of a chapter's CMakeLists.txt (course_add_chapter), in order."""
    cmake = folder / "CMakeLists.txt"
    if not cmake.is_file():
        return []
    text = re.sub(r"#[^\n]*", "", cmake.read_text(encoding="utf-8"))
    call = re.search(r"\bcourse_add_chapter\s*\((.*?)\)", text, re.S)
    names, keyword = [], None
    for token in call.group(1).split() if call else []:
        if re.fullmatch(r"[A-Z_]+", token):
            keyword = token
        elif keyword == "LESSONS":
            names.append(token)
    return names


def lesson_problems(folder):
    problems = []
    for lesson in lessons(folder):
        source = folder / f"{lesson}.cu"
        if not source.is_file():
            problems.append(f"{folder.name}/{lesson}.cu: listed in LESSONS but missing")
            continue
        long = [n for n, line in enumerate(source.read_text(encoding="utf-8").splitlines(), 1)
                if len(line) > MAX_LESSON_COLUMNS]
        if long:
            shown = ", ".join(map(str, long[:8])) + (", ..." if len(long) > 8 else "")
            problems.append(f"{folder.name}/{source.name}: {len(long)} line(s) longer than {MAX_LESSON_COLUMNS} "
                            f"characters (wrap them): line {shown}")
    return problems


def read_pending(path, chapters):
    """The chapters of the pending file; SystemExit(2) with one line for a bad entry."""
    pending = []
    for n, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        entry = raw.split("#", 1)[0].strip()
        if not entry:
            continue
        if entry not in chapters:
            raise SystemExit(f"{path}:{n}: '{entry}' is not a chapter folder")
        pending.append(entry)
    return pending


def main():
    parser = argparse.ArgumentParser(description="Check the chapter pages' and lessons' limits.")
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parent.parent,
                        help="the repository (default: the one holding this script)")
    parser.add_argument("--pending", type=Path, default=None,
                        help="chapters not yet reshaped (default: ROOT/scripts/page_limits_pending.txt)")
    args = parser.parse_args()
    folders = sorted(path for path in args.root.glob("[0-9][0-9]_*") if path.is_dir())
    if not folders:
        print(f"{args.root}: no chapter folders (NN_topic/)", file=sys.stderr)
        return 2
    pending_file = args.pending or args.root / "scripts" / "page_limits_pending.txt"
    try:
        pending = read_pending(pending_file, {folder.name for folder in folders}) if pending_file.is_file() else []
    except (OSError, UnicodeDecodeError) as error:
        print(f"{pending_file}: cannot be read: {error}", file=sys.stderr)
        return 2
    except SystemExit as error:
        print(error, file=sys.stderr)
        return 2
    if args.pending and not args.pending.is_file():
        print(f"{args.pending}: not a file", file=sys.stderr)
        return 2
    failed = passed = waiting = 0
    for folder in folders:
        page = folder / "README.md"
        if not page.is_file():
            problems = [f"{folder.name}: no README.md"]
        else:
            try:
                problems = page_problems(page) + lesson_problems(folder)
            except UnicodeDecodeError as error:
                problems = [f"{folder.name}: a file is not UTF-8 ({error.reason} at byte {error.start})"]
        if folder.name in pending:
            waiting += 1
            state = "pending, " + (f"{len(problems)} problem(s)" if problems else
                                   f"meets the limits: remove it from {pending_file.name}")
            print(f"{folder.name}: {state}")
            for problem in problems:
                print(f"  pending: {problem}")
        elif problems:
            failed += 1
            for problem in problems:
                print(problem, file=sys.stderr)
        else:
            passed += 1
            print(f"{folder.name}: meets the limits")
    print(f"{len(folders)} chapters: {passed} pass, {failed} fail, {waiting} pending")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
