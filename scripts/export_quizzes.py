#!/usr/bin/env python3
"""Exports every chapter's quiz for a learning platform, from the chapter pages.

    scripts/export_quizzes.py [--check] [--root DIR]

A chapter's quiz is the section `## Quiz` of its core page (NN_topic/README.md): a numbered list
whose items are a question followed by its answer in a fold,

    1. The question, over one or more lines.
       <details><summary>Answer</summary>
       The answer, over one or more lines or paragraphs.
       </details>

For each chapter it writes, under docs/quizzes/:
  NN_topic.md          the questions alone, as Markdown (for students: no answers)
  NN_topic.gift        the questions with their answers as general feedback, in Moodle's GIFT
                       format (essay questions, Markdown text), to import into Moodle or convert
  answers/NN_topic.md  the answer key (for instructors)
and docs/quizzes/README.md, the index. The same pages always give the same bytes. With --check it
writes nothing and exits 1, naming each stale or missing file, when an export differs from the
pages (CTest quizzes.fresh). A quiz item without an answer fold, or a chapter page without a quiz,
is an error naming the page and the line.
"""
import argparse
import posixpath
import re
import sys
from pathlib import Path

ITEM = re.compile(r"^(?P<number>\d+)\.\s+(?P<text>.*)$")
FOLD_OPEN = re.compile(r"^\s*<details>\s*<summary>\s*Answer\s*</summary>\s*(?P<rest>.*)$")
FOLD_CLOSE = re.compile(r"^(?P<rest>.*?)\s*</details>\s*$")
LINK = re.compile(r"\[(?P<text>[^\]\n]*)\]\((?P<target>[^)\s]+)\)")
GIFT_SPECIAL = re.compile(r"([~=#{}:\\])")


class QuizError(Exception):
    pass


def parse_quiz(page, text):
    """[(number, question, answer)] of the `## Quiz` section of a page, in order."""
    lines = text.splitlines()
    try:
        start = next(i for i, line in enumerate(lines) if re.match(r"^##\s+Quiz\b", line))
    except StopIteration:
        raise QuizError(f"{page}: no '## Quiz' section")
    end = next((i for i in range(start + 1, len(lines)) if re.match(r"^#{1,2}\s", lines[i])), len(lines))
    items = []
    i = start + 1
    while i < end:
        match = ITEM.match(lines[i])
        if not match:
            i += 1
            continue
        number, first_line = int(match["number"]), i + 1
        question = [match["text"]]
        i += 1
        while i < end and not FOLD_OPEN.match(lines[i]):
            if ITEM.match(lines[i]):
                raise QuizError(f"{page}:{first_line}: quiz question {number} has no answer fold "
                                "(<details><summary>Answer</summary> ... </details>)")
            question.append(lines[i])
            i += 1
        if i >= end:
            raise QuizError(f"{page}:{first_line}: quiz question {number} has no answer fold "
                            "(<details><summary>Answer</summary> ... </details>)")
        answer = []
        rest = FOLD_OPEN.match(lines[i])["rest"]
        i += 1
        closed = False
        while True:
            close = FOLD_CLOSE.match(rest)
            if close:
                answer.append(close["rest"])
                closed = True
                break
            answer.append(rest)
            if i >= end:
                break
            rest = lines[i]
            i += 1
        if not closed:
            raise QuizError(f"{page}:{first_line}: the answer fold of quiz question {number} is not closed")
        items.append((number, dedent(question), dedent(answer)))
    if not items:
        raise QuizError(f"{page}:{start + 1}: the '## Quiz' section has no numbered questions")
    return items


def dedent(lines):
    """The lines as one block: common indentation removed, blank lines at either end dropped."""
    body = [line.rstrip() for line in lines]
    while body and not body[0]:
        body.pop(0)
    while body and not body[-1]:
        body.pop()
    indents = [len(line) - len(line.lstrip()) for line in body[1:] if line.strip()]
    cut = min(indents) if indents else 0
    return "\n".join([body[0].strip()] + [line[cut:] for line in body[1:]]) if body else ""


def relink(text, chapter, up="../../"):
    """Links of a chapter page, rewritten to work from a folder `up` below the root (absolute ones
    kept): docs/quizzes/ is "../../", docs/quizzes/answers/ "../../../"."""
    def fix(match):
        target = match["target"]
        if re.match(r"^[a-z]+:", target) or target.startswith("#"):
            if target.startswith("#"):
                target = f"{up}{chapter}/README.md{target}"
            return f"[{match['text']}]({target})"
        path, _, anchor = target.partition("#")
        resolved = posixpath.normpath(f"{up}{chapter}/{path}") + (f"#{anchor}" if anchor else "")
        return f"[{match['text']}]({resolved})"
    return LINK.sub(fix, text)


def unlink(text):
    """Links reduced to their text (a learning platform has no copy of the pages they point to)."""
    return LINK.sub(lambda m: m["text"], text)


def gift_escape(text):
    return GIFT_SPECIAL.sub(r"\\\1", text)


def title_of(text):
    first = text.splitlines()[0] if text else ""
    return re.sub(r"^#\s+", "", first).strip()


def exports(root):
    """{relative path: content} of every file this script writes."""
    files = {}
    index = ["# Quizzes", "",
             "Every chapter's quiz, exported from its page by `scripts/export_quizzes.py` (do not edit",
             "these files; edit the page and run the script). For students: the questions alone. For a",
             "learning platform: Moodle GIFT, with each answer as the question's general feedback. For",
             "instructors: the answer keys under `answers/`.", "",
             "| chapter | questions | student copy | GIFT | answer key |", "| --- | ---: | --- | --- | --- |"]
    pages = sorted(root.glob("[0-9][0-9]_*/README.md"))
    if not pages:
        raise QuizError(f"{root}: no chapter pages (NN_topic/README.md): is this the course's root?")
    for page in pages:
        chapter = page.parent.name
        text = page.read_text(encoding="utf-8")
        items = parse_quiz(f"{chapter}/README.md", text)
        title = title_of(text)
        student = [f"# Quiz: {title}", "",
                   f"From [{chapter}](../../{chapter}/README.md). Answer each question in a few sentences.", ""]
        key = [f"# Answer key: {title}", "",
               f"From [{chapter}](../../../{chapter}/README.md). For instructors; not for the student tree.", ""]
        gift = [f"// Quiz of {chapter}, exported from {chapter}/README.md by scripts/export_quizzes.py.",
                f"$CATEGORY: async-copies/{chapter}", ""]
        for number, question, answer in items:
            student += [f"{number}. " + indent_rest(relink(question, chapter)), ""]
            key += [f"## Question {number}", "", relink(question, chapter, "../../../"), "",
                    "**Answer.** " + relink(answer, chapter, "../../../"), ""]
            gift += [f"::{chapter} Q{number}::[markdown]{gift_escape(unlink(question))}"
                     f"{{####[markdown]{gift_escape(unlink(answer))}}}", ""]
        files[f"docs/quizzes/{chapter}.md"] = "\n".join(student).rstrip() + "\n"
        files[f"docs/quizzes/answers/{chapter}.md"] = "\n".join(key).rstrip() + "\n"
        files[f"docs/quizzes/{chapter}.gift"] = "\n".join(gift).rstrip() + "\n"
        index.append(f"| {chapter} | {len(items)} | [{chapter}.md]({chapter}.md) | "
                     f"[{chapter}.gift]({chapter}.gift) | [answers/{chapter}.md](answers/{chapter}.md) |")
    files["docs/quizzes/README.md"] = "\n".join(index) + "\n"
    return files


def indent_rest(text):
    lines = text.splitlines()
    return "\n".join(lines[:1] + ["   " + line if line else "" for line in lines[1:]])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if an export is stale")
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parent.parent)
    args = parser.parse_args()
    if not args.root.is_dir():
        print(f"export_quizzes: --root {args.root} is not a folder", file=sys.stderr)
        return 2
    try:
        files = exports(args.root)
    except (QuizError, UnicodeDecodeError, OSError) as error:
        print(f"export_quizzes: {error}", file=sys.stderr)
        return 1
    stale = []
    for relative, content in files.items():
        path = args.root / relative
        old = path.read_text(encoding="utf-8") if path.is_file() else None
        if old != content:
            stale.append(relative)
    known = set(files)
    extra = sorted(str(p.relative_to(args.root)) for p in (args.root / "docs/quizzes").rglob("*")
                   if p.is_file() and str(p.relative_to(args.root)) not in known) \
        if (args.root / "docs/quizzes").is_dir() else []
    if args.check:
        for relative in stale:
            print(f"{relative}: stale (run scripts/export_quizzes.py)")
        for relative in extra:
            print(f"{relative}: not an export of any page (remove it)")
        return 1 if stale or extra else 0
    for relative in stale:
        path = args.root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_name(path.name + ".tmp")
        temporary.write_text(files[relative], encoding="utf-8")
        temporary.replace(path)
        print(f"{relative}: written")
    for relative in extra:
        (args.root / relative).unlink()
        print(f"{relative}: removed (no page exports it)")
    if not stale and not extra:
        print(f"quizzes up to date ({len(files)} files)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
