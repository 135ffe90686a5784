#!/usr/bin/env python3
"""Keeps the code quoted by the chapter pages equal to the code in the chapters.

    scripts/pages.py [--check] [--root DIR]

A chapter page (NN_topic/README.md, the core page, or NN_topic/REFERENCE.md, the reference page) quotes a marked region of a source file of its chapter as a
fenced block between two comment lines:

    <!-- snippet: sync_copy.cu kernel -->
    From [`sync_copy.cu`](sync_copy.cu):
    ```cpp
    ...the lines between the two `/// [kernel]` markers of sync_copy.cu...
    ```
    <!-- /snippet -->

GitHub shows the code itself; the site shows the same block. This script rewrites every such block
from the sources (and turns a Doxygen `@snippet file marker` line into one). Pages are plain
Markdown: it also turns the Doxygen-only forms a page may contain into Markdown that GitHub shows
and the site's copies (docs/prepare_pages.cmake) turn back: a heading label `## Title {#label}`
becomes an anchor line `<a name="label"></a>` above the heading, and `@ref label "text"` a link
(`[text](#label)`, `[text](REFERENCE.md#label)` for the other page of the same chapter,
`[text](../NN_topic/README.md#label)` or `[text](../NN_topic/REFERENCE.md#label)` for another
chapter's, or `[text](../NN_topic/README.md)` for a page's title). A label is defined once among
all the pages (the site has one namespace of labels). With --check it writes
nothing and exits 1, naming each stale block, when a page differs from its sources; CTest runs that
check. A marker that is missing, or present other than twice, is an error either way.
"""
import argparse
import re
import sys
from pathlib import Path

OPEN = re.compile(r"^(?P<indent>[ \t]*)<!-- snippet: (?P<file>[\w.\-/]+) (?P<marker>[\w\-]+) -->\s*$")
CLOSE = re.compile(r"^[ \t]*<!-- /snippet -->\s*$")
DOXYGEN = re.compile(r"^(?P<indent>[ \t]*)@snippet (?P<file>[\w.\-/]+) (?P<marker>[\w\-]+)\s*$")
LANGUAGE = {".cu": "cpp", ".cuh": "cpp", ".hpp": "cpp", ".cpp": "cpp", ".h": "cpp", ".cmake": "cmake", ".py": "python"}


class PageError(Exception):
    pass


def region(source: Path, marker: str) -> list:
    """The lines between the two marker lines `/// [marker]` (or `// [marker]`, `# [marker]`)."""
    if not source.is_file():
        raise PageError(f"no file {source}")
    lines = source.read_text().splitlines()
    pattern = re.compile(r"^\s*(///|//|#) \[" + re.escape(marker) + r"\]\s*$")
    hits = [i for i, line in enumerate(lines) if pattern.match(line)]
    if len(hits) != 2:
        raise PageError(f"{source.name}: marker [{marker}] appears {len(hits)} times, not twice")
    body = lines[hits[0] + 1:hits[1]]
    # Drop the common indentation, as Doxygen's @snippet shows it.
    indents = [len(line) - len(line.lstrip()) for line in body if line.strip()]
    cut = min(indents) if indents else 0
    return [line[cut:] if line.strip() else "" for line in body]


def block(indent: str, folder: Path, file: str, marker: str) -> list:
    # A chapter's own file, or one of the shared library (common/course) that the chapter quotes.
    source, href = folder / file, file
    library = folder.parent / "common" / "course" / file
    if not source.is_file() and library.is_file():
        source, href = library, f"../common/course/{file}"
    code = region(source, marker)
    language = LANGUAGE.get(Path(file).suffix, "")
    lines = [f"<!-- snippet: {file} {marker} -->", f"From [`{file}`]({href}):", f"```{language}"]
    lines += code + ["```", "<!-- /snippet -->"]
    return [(indent + line) if line else "" for line in lines]


HEADING_LABEL = re.compile(r"^(?P<heading>#+ .*?)\s*\{#(?P<label>\w+)\}\s*$")
REF = re.compile(r'@ref (?P<label>\w+)(?: "(?P<text>[^"]*)")?')


def labels_of(pages, errors=None) -> dict:
    """label -> (page, heading text) for every labelled heading and every anchor line.

    A label defined on two pages (or twice on one) is appended to `errors` as one line."""
    found, where = {}, {}
    for page in pages:
        lines = page.read_text().splitlines()
        for n, line in enumerate(lines):
            heading = HEADING_LABEL.match(line)
            anchor = re.match(r'^\s*<a name="(\w+)"></a>\s*$', line)
            if heading:
                label, text = heading["label"], re.sub(r"^#+ ", "", heading["heading"])
            elif anchor and n + 1 < len(lines):
                label, text = anchor.group(1), re.sub(r"^#+ ", "", lines[n + 1])
            else:
                continue
            if label in where and errors is not None:
                errors.append(f"{page}:{n + 1}: label '{label}' is also defined at {where[label]}; "
                              "the site needs every label once")
            where.setdefault(label, f"{page}:{n + 1}")
            found.setdefault(label, (page, text))
        # The site labels each page's title (chNN_topic, chNN_topic_reference) where the page does not.
        if lines and lines[0].startswith("# "):
            found.setdefault(page_label(page), (page, re.sub(r"^# |\s*\{#\w+\}\s*$", "", lines[0])))
    return found


def page_label(page: Path) -> str:
    """The site's label of a chapter page's title: chNN_topic, or chNN_topic_reference."""
    return f"ch{page.parent.name}" + ("_reference" if page.name == "REFERENCE.md" else "")


def plain_markdown(page: Path, lines: list, labels: dict) -> list:
    out = []
    for n, line in enumerate(lines):
        heading = HEADING_LABEL.match(line)
        if heading:
            if n > 0 and not heading["heading"].startswith("# "):
                out.append(f'<a name="{heading["label"]}"></a>')
            line = heading["heading"]  # the site's copy labels the title itself

        def link(match):
            label, text = match["label"], match["text"]
            if label not in labels:
                raise PageError(f"{page}:{n + 1}: @ref {label}: no heading has that label")
            target, title = labels[label]
            text = text or title
            first = target.read_text().splitlines()[0]
            is_title = label == page_label(target) or (
                HEADING_LABEL.match(first) and HEADING_LABEL.match(first)["label"] == label)
            if target == page:
                return f"[{text}](#{label})"
            if target.parent == page.parent and is_title:
                return f"[{text}]({target.name})"
            # The other page of the same chapter by its name, another chapter's through its folder.
            where = target.name if target.parent == page.parent else f"../{target.parent.name}/{target.name}"
            return f"[{text}]({where})" if is_title else f"[{text}]({where}#{label})"

        out.append(REF.sub(link, line))
    return out


def render(page: Path, labels: dict) -> str:
    folder = page.parent
    lines = plain_markdown(page, page.read_text().splitlines(), labels)
    out, i = [], 0
    while i < len(lines):
        line = lines[i]
        opened, doxygen = OPEN.match(line), DOXYGEN.match(line)
        if opened:
            j = i + 1
            while j < len(lines) and not CLOSE.match(lines[j]):
                j += 1
            if j == len(lines):
                raise PageError(f"{page}:{i + 1}: <!-- snippet --> without <!-- /snippet -->")
            out += block(opened["indent"], folder, opened["file"], opened["marker"])
            i = j + 1
        elif doxygen:
            out += block(doxygen["indent"], folder, doxygen["file"], doxygen["marker"])
            i += 1
        else:
            out.append(line)
            i += 1
    return "\n".join(out) + ("\n" if page.read_text().endswith("\n") else "")


def chapter_pages(root: Path) -> list:
    """Every chapter's pages, in course order: its core page README.md, then REFERENCE.md if it has one."""
    pages = []
    for folder in sorted(path for path in root.glob("[0-9][0-9]_*") if path.is_dir()):
        pages += [folder / name for name in ("README.md", "REFERENCE.md") if (folder / name).is_file()]
    return pages


def main() -> int:
    parser = argparse.ArgumentParser(description="Regenerate the code blocks of the chapter pages.")
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if a page is stale")
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parent.parent)
    args = parser.parse_args()
    pages = chapter_pages(args.root)
    if not pages:
        print(f"no chapter pages under {args.root}", file=sys.stderr)
        return 1
    stale, errors, blocks = [], 0, 0
    duplicates = []
    labels = labels_of(pages, duplicates)
    for duplicate in duplicates:
        print(duplicate, file=sys.stderr)
    errors += len(duplicates)
    for page in pages:
        try:
            new = render(page, labels)
        except PageError as error:
            print(f"{page.relative_to(args.root)}: {error}", file=sys.stderr)
            errors += 1
            continue
        blocks += new.count("<!-- /snippet -->")
        if new != page.read_text():
            stale.append(page)
            if not args.check:
                page.write_text(new)
    name = lambda p: str(p.relative_to(args.root))
    if args.check:
        for page in stale:
            print(f"{name(page)}: its code blocks differ from the sources; run scripts/pages.py", file=sys.stderr)
        print(f"{len(pages)} pages, {blocks} code blocks, {len(stale)} stale, {errors} with errors")
        return 1 if stale or errors else 0
    print(f"{len(pages)} pages, {blocks} code blocks; rewrote {len(stale)}: {', '.join(map(name, stale)) or 'none'}")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
