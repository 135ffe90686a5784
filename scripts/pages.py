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
all the pages (the site has one namespace of labels). The pages of docs/ have their code blocks
written the same way (a file not in docs/ is looked up in common/course/ and common/tests/*/);
--docs also turns their labels and references into plain Markdown. With --check it writes
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
FENCE = re.compile(r"^\s*(```|~~~)")
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
    if not source.is_file():
        # A file of the shared library, or of its tests (a page of docs/ quotes those).
        common = folder.parent / "common"
        for other in [common / "course" / file] + sorted(common.glob(f"tests/*/{file}")):
            if other.is_file():
                source, href = other, "../" + other.relative_to(folder.parent).as_posix()
                break
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
    """The site's label of a page's title: chNN_topic or chNN_topic_reference for a chapter's core
    or reference page, the file's name for a page of docs/ (docs/async_model.md: async_model)."""
    if not re.match(r"^[0-9][0-9]_", page.parent.name):
        return page.stem
    return f"ch{page.parent.name}" + ("_reference" if page.name == "REFERENCE.md" else "")


def plain_markdown(page: Path, lines: list, labels: dict) -> list:
    out, in_fence = [], False
    for n, line in enumerate(lines):
        if FENCE.match(line):
            in_fence = not in_fence
        if in_fence:
            out.append(line)
            continue
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

        # (A reference quoted in a code span stays as it is.)
        out.append("".join(part if part.startswith("`") else REF.sub(link, part)
                           for part in re.split(r"(`[^`]*`)", line)))
    return out


def render(page: Path, labels: dict, plain: bool = True) -> str:
    """The page with its snippet blocks written from the sources and (plain) its labels and
    references as plain Markdown."""
    folder = page.parent
    lines = page.read_text().splitlines()
    if plain:
        lines = plain_markdown(page, lines, labels)
    out, i, in_fence = [], 0, False
    while i < len(lines):
        line = lines[i]
        opened, doxygen = OPEN.match(line), DOXYGEN.match(line)
        if FENCE.match(line):
            in_fence = not in_fence
        if in_fence or not (opened or doxygen):
            out.append(line)
            i += 1
        elif opened:
            j = i + 1
            while j < len(lines) and not CLOSE.match(lines[j]):
                j += 1
            if j == len(lines):
                raise PageError(f"{page}:{i + 1}: <!-- snippet --> without <!-- /snippet -->")
            out += block(opened["indent"], folder, opened["file"], opened["marker"])
            i = j + 1
        else:
            out += block(doxygen["indent"], folder, doxygen["file"], doxygen["marker"])
            i += 1
    return "\n".join(out) + ("\n" if page.read_text().endswith("\n") else "")


def chapter_pages(root: Path) -> list:
    """Every chapter's pages, in course order: its core page README.md, then REFERENCE.md if it has one."""
    pages = []
    for folder in sorted(path for path in root.glob("[0-9][0-9]_*") if path.is_dir()):
        pages += [folder / name for name in ("README.md", "REFERENCE.md") if (folder / name).is_file()]
    return pages


# ------------------------------------------------------------------------------------------------
# The site's copy (--site OUT): what Doxygen 1.9.4 reads instead of the pages themselves. The pages
# stay plain Markdown for GitHub; their copies gain the site's labels, navigation and links, and
# lose the Markdown that Doxygen 1.9.4 renders wrongly (each fix names what it would show).

# The site's pages in reading order, around the chapters' pages: docs/NAME.md, or a page this
# script writes (mainpage, chapters, examples_by_chapter), or the topics of docs/topics.dox.
SITE_BEFORE = ["mainpage", "diagnostic", "diagnostic_answers", "async_model", "reading_a_chapter", "chapters"]
SITE_AFTER = ["bounded_wait", "topics", "hostile_inputs", "instructor", "grading", "cluster",
              "chapter_pages", "examples_by_chapter"]
ANCHOR_LINE = re.compile(r'^\s*<a name="([\w-]+)"></a>\s*$')
LIST_ITEM = re.compile(r"^\s*(\d+[.)]|[-*+])\s")
# What inline fixes must leave alone: code spans, HTML tags and comments, Doxygen references,
# Markdown links and images (their text and address).
PROTECTED = re.compile(r"(?P<code>(?P<ticks>`+)(?P<span>.+?)(?<!`)(?P=ticks)(?!`))"
                       r"|<!--.*?-->|<[A-Za-z/!][^>\n]*>|@ref [\w-]+(?: \"[^\"\n]*\")?"
                       r"|!?\[[^\]\n]*\]\([^)\n]*\)|https?://\S+", re.S)
MENTION = re.compile(r"\b([Cc]hapters?)(\s+)(\d\d(?:(?:,\s+|,?\s+and\s+|\s+or\s+|\s+to\s+|–|-)\d\d)*)\b")


class Site:
    """The pages of the site, their titles and labels; writes every page's copy into `out`."""

    def __init__(self, root: Path, out: Path, mainpage: Path):
        self.root, self.out = root, out
        self.chapters = {}                     # "01" -> "01_sync_copy", chapters with a core page
        for folder in sorted(root.glob("[0-9][0-9]_*")):
            if (folder / "README.md").is_file():
                self.chapters[folder.name[:2]] = folder.name
        self.sources, self.titles, self.order = {}, {}, []
        docs = root / "docs"
        known = set(SITE_BEFORE + SITE_AFTER)
        extra = sorted(p.stem for p in docs.glob("*.md") if p.stem not in known)
        for name in SITE_BEFORE + [None] + SITE_AFTER[:-1] + extra + SITE_AFTER[-1:]:
            if name is None:
                for chapter in self.chapters.values():
                    for kind, label in (("README", f"ch{chapter}"), ("REFERENCE", f"ch{chapter}_reference")):
                        if (root / chapter / f"{kind}.md").is_file():
                            self.add(label, root / chapter / f"{kind}.md")
            elif name == "mainpage":
                self.add(name, mainpage)
            elif name == "topics":
                dox = docs / "topics.dox"
                if dox.is_file():
                    for label, title in re.findall(r"^@page (\w+) (.*)$", dox.read_text(), re.M):
                        self.order.append(label)
                        self.titles[label] = title.strip()
                        self.sources[label] = dox
            elif name in ("chapters", "examples_by_chapter"):
                self.add(name, None, {"chapters": "The chapters", "examples_by_chapter": "Examples"}[name])
            elif (docs / f"{name}.md").is_file():
                self.add(name, docs / f"{name}.md")

    def add(self, label, source, title=None):
        if title is None:
            first = source.read_text(encoding="utf-8").splitlines()[0]
            title = re.sub(r"\s*\{#[\w-]+\}\s*$", "", re.sub(r"^#\s+", "", first))
        self.order.append(label)
        self.titles[label], self.sources[label] = title, source

    def nav(self, label) -> str:
        """Previous and next page in reading order, as Doxygen references with their titles."""
        i = self.order.index(label)
        parts = []
        if i > 0:
            other = self.order[i - 1]
            parts.append(f'&larr; Previous: @ref {other} "{quote_title(self.titles[other])}"')
        if i + 1 < len(self.order):
            other = self.order[i + 1]
            parts.append(f'Next: @ref {other} "{quote_title(self.titles[other])}" &rarr;')
        # (In a span of its own: the search index leaves it out, the style sheet may place it.)
        return '<span class="course-nav">' + " &nbsp;&middot;&nbsp; ".join(parts) + "</span>"

    def write(self):
        self.out.mkdir(parents=True, exist_ok=True)
        written = []
        for label in self.order:
            source = self.sources[label]
            if label == "chapters":
                text = self.chapters_page()
            elif label == "examples_by_chapter":
                text = self.examples_page()
            elif source is not None and source.suffix == ".dox":
                if label != self.order[[self.sources[o] for o in self.order].index(source)]:
                    continue                  # topics.dox is written once, with all its pages
                text, label = self.topics_copy(source), "topics"
            else:
                text = self.page_copy(label, source)
            name = f"{label}.dox" if label in ("topics", "examples_by_chapter") else f"{label}.md"
            (self.out / name).write_text(text, encoding="utf-8")
            written.append(self.out / name)
        (self.out / "examples.dox").write_text(self.examples_dox(), encoding="utf-8")
        written.append(self.out / "examples.dox")
        # Doxygen reads the pages in this order, which is the order of the site's navigation.
        inputs = " \\\n    ".join(f'"{path.as_posix()}"' for path in written)
        (self.out / "inputs.doxyfile").write_text(f"INPUT = {inputs}\n", encoding="utf-8")
        return written

    # -- pages this script writes ------------------------------------------------------------------
    def chapters_page(self) -> str:
        lines = ["# The chapters {#chapters}", "", self.nav("chapters"), "",
                 "In the order a student works through them:", ""]
        for chapter in self.chapters.values():
            lines.append(f"- @subpage ch{chapter}")
            if (self.root / chapter / "REFERENCE.md").is_file():
                lines.append(f"- @subpage ch{chapter}_reference")
        return "\n".join(lines) + "\n"

    def chapter_files(self, chapter):
        return sorted(p.name for p in (self.root / chapter).iterdir()
                      if p.suffix in (".cu", ".hpp", ".cuh", ".cpp") and p.is_file())

    def examples_dox(self) -> str:
        out = []
        for chapter in sorted(p.name for p in self.root.glob("[0-9][0-9]_*") if p.is_dir()):
            for name in self.chapter_files(chapter):
                ref = f'@ref ch{chapter} "{chapter}"' if chapter[:2] in self.chapters else chapter
                out.append(f"/**\n@example {name}\n{describe(name, ref)}\n*/\n")
        return "\n".join(out)

    def examples_page(self) -> str:
        out = ["/**", "@page examples_by_chapter Examples", "", self.nav("examples_by_chapter"), "",
               "Every chapter's programs, models and tests in full, by chapter.", ""]
        for chapter in sorted(p.name for p in self.root.glob("[0-9][0-9]_*") if p.is_dir()):
            files = self.chapter_files(chapter)
            if not files:
                continue
            title = self.titles.get(f"ch{chapter}", chapter)
            heading = f'@ref ch{chapter} "{quote_title(title)}"' if chapter[:2] in self.chapters else chapter
            out += [f"@section examples_{chapter} {chapter}", "", heading, ""]
            out += [f"- [{name}]({example_page(name)}): {describe(name, None)}" for name in files]
            out.append("")
        return "\n".join(out) + "*/\n"

    def topics_copy(self, source: Path) -> str:
        """docs/topics.dox with each page's navigation under its @page line."""
        out = []
        for line in source.read_text(encoding="utf-8").splitlines():
            out.append(line)
            page = re.match(r"^@page (\w+) ", line)
            if page:
                out += ["", self.nav(page.group(1))]
        return "\n".join(out) + "\n"

    # -- the copy of a Markdown page ---------------------------------------------------------------
    def page_copy(self, label, source: Path) -> str:
        text = source.read_text(encoding="utf-8")
        first, _, body = text.partition("\n")
        first = re.sub(r"\s*\{#[\w-]+\}\s*$", "", first) + f" {{#{label}}}"
        chapter = source.parent.name if re.match(r"^\d\d_", source.parent.name) else None
        lines = site_lines(body.splitlines(), chapter, self.chapters)
        nav = self.nav(label)
        head = [first, "", nav, ""]
        # A table of contents on every chapter page, and on other pages of three sections or more.
        sections = sum(1 for line in lines if re.match(r"^##+ ", line))
        lines = [line for line in lines if line.strip() != "[TOC]"]
        if chapter or sections >= 3:
            head += ["[TOC]", ""]
        if chapter:
            files = " &middot; ".join(f"[{name}]({example_page(name)})"
                                      for name in self.chapter_files(chapter)
                                      if not name.endswith(".cpp"))
            if files:
                head += [f"<b>Files:</b> {files}", ""]
        return "\n".join(head + lines + ["", "---", nav, ""])


def quote_title(title: str) -> str:
    """A page title as the text of @ref "...": no quotes, no Markdown."""
    return re.sub(r"[`*\"]", "", title)


def example_page(name: str) -> str:
    """Doxygen's page of an @example file: each . of the name becomes _8."""
    return name.replace(".", "_8") + "-example.html"


def describe(name: str, chapter_ref) -> str:
    of = f" of chapter {chapter_ref}" if chapter_ref else ""
    if name.endswith("_test.cu") or name.endswith("_test.cpp"):
        return f"The GoogleTest suite{of}."
    if name.endswith("_lab.cu"):
        return f"The lab{of}: the measurements beside the lesson, in full."
    if name.endswith("_model.hpp"):
        return f"The host-side model{of}, tested on the CPU."
    if name.endswith(".cu"):
        return f"A lesson{of}, in full."
    return f"A file{of}."


def site_lines(lines, chapter, chapters) -> list:
    """A page body's lines as the site reads them (see the fixes below)."""
    # Anchor lines above headings become heading labels; answer folds lose their blank lines.
    merged, in_fence, in_fold = [], False, False
    for n, line in enumerate(lines):
        if FENCE.match(line):
            in_fence = not in_fence
        if not in_fence:
            anchor = ANCHOR_LINE.match(line)
            if anchor and n + 1 < len(lines) and re.match(r"^#+ ", lines[n + 1]):
                lines[n + 1] = re.sub(r"\s*\{#[\w-]+\}\s*$", "", lines[n + 1]) + f" {{#{anchor.group(1)}}}"
                continue
            # Doxygen 1.9.4 ends a <details> at a blank line: the answer lands in a second, empty
            # fold. Without the blank line the answer stays inside its fold.
            if "<details>" in line and "</details>" not in line:
                in_fold = True
            elif "</details>" in line:
                in_fold = False
            elif in_fold and not line.strip():
                continue
        merged.append(line)
    # Text runs (between blank lines, headings and code blocks) get the inline fixes.
    out, run, in_fence = [], [], False

    def flush():
        if run:
            out.extend(site_text(run, chapter, chapters))
            run.clear()

    for line in merged:
        if FENCE.match(line):
            flush()
            in_fence = not in_fence
            out.append(line)
        elif in_fence:
            out.append(line)
        elif re.match(r"^#+ ", line):
            flush()
            out.append(site_heading(line))
        elif not line.strip():
            flush()
            out.append(line)
        else:
            run.append(line)
    flush()
    return out


def site_heading(line: str) -> str:
    """Doxygen 1.9.4 shows a heading's markup as text (<tt>, <em>, <strong>): keep only words."""
    label = re.search(r"\s*\{#([\w-]+)\}\s*$", line)
    if label:
        line = line[:label.start()]
    hashes, text = line.split(" ", 1)
    text = re.sub(r"`+([^`]*)`+", lambda m: escape_words(m.group(1)), text)
    text = re.sub(r"</?(b|strong|em|i|code|tt)>", "", text)
    text = re.sub(r"\*\*(.+?)\*\*|(?<![\w\\])\*(\S.*?)\*", lambda m: m.group(1) or m.group(2), text)
    text = re.sub(r"(?<![-\w\\])--(?=[A-Za-z])", r"\\--", text)
    return f"{hashes} {text}" + (f" {{#{label.group(1)}}}" if label else "")


def escape_words(code: str) -> str:
    """Code shown as plain text in a heading: Markdown characters escaped."""
    return re.sub(r"([_*<>\\])", r"\\\1", code)


def site_links(text: str, chapter) -> str:
    """Links between the pages (plain Markdown for GitHub) as Doxygen references."""
    # A label on a chapter page or a page of docs/: labels are unique across the site.
    text = re.sub(r"\[([^]\n]*)\]\((?:\.\./[0-9][0-9]_[a-z0-9_]+/|(?=README|REFERENCE))"
                  r"(?:README|REFERENCE)\.md#([\w-]+)\)", r'@ref \2 "\1"', text)
    text = re.sub(r"\[([^]\n]*)\]\((?:\.\./docs/|(?=[a-z0-9_]+\.md#))[a-z0-9_]+\.md#([\w-]+)\)", r'@ref \2 "\1"', text)
    # A page's title.
    text = re.sub(r"\[([^]\n]*)\]\(\.\./([0-9][0-9]_[a-z0-9_]+)/README\.md\)", r'@ref ch\2 "\1"', text)
    text = re.sub(r"\[([^]\n]*)\]\(\.\./([0-9][0-9]_[a-z0-9_]+)/REFERENCE\.md\)", r'@ref ch\2_reference "\1"', text)
    if chapter:
        text = re.sub(r"\[([^]\n]*)\]\(README\.md\)", rf'@ref ch{chapter} "\1"', text)
        text = re.sub(r"\[([^]\n]*)\]\(REFERENCE\.md\)", rf'@ref ch{chapter}_reference "\1"', text)
        text = re.sub(r"\[([^]\n]*)\]\(\.\./docs/([a-z0-9_]+)\.md\)", r'@ref \2 "\1"', text)
    else:
        text = re.sub(r"\[([^]\n]*)\]\(([a-z0-9_]+)\.md\)", r'@ref \2 "\1"', text)
    text = re.sub(r"\[([^]\n]*)\]\(#([\w-]+)\)", r'@ref \2 "\1"', text)
    # A chapter's file: its page under Examples; a file of the shared library: its source page.
    text = re.sub(r"\]\((?:\.\./[0-9][0-9]_[a-z0-9_]+/)?([A-Za-z0-9_]+\.(?:cu|cuh|hpp|cpp))\)",
                  lambda m: f"]({example_page(m.group(1))})", text)
    text = re.sub(r"\]\(\.\./common/course/([A-Za-z0-9_]+)\.(cuh|hpp)\)",
                  lambda m: f"]({m.group(1).replace('_', '__')}_8{m.group(2)}_source.html)", text)
    # Any other file of the checkout (the exercises, the library's tests, scripts) is not a page of
    # the site: its link keeps only the text.
    text = re.sub(r"(?<!!)\[([^]\n]*)\]\((?![a-z][a-z0-9+.-]*:|#)[^)\s]+(?<!\.html)(?:#[^)\s]*)?\)", r"\1", text)
    return text


def site_text(run, chapter, chapters) -> list:
    """The inline fixes of one run of text lines (a paragraph, a list, a table)."""
    # A line "124. more" inside a paragraph is text on GitHub; Doxygen starts a list at it.
    if not LIST_ITEM.match(run[0]):
        run = [run[0]] + [re.sub(r"^(\s*\d+)\.(\s)", r"\1\\.\2", line) for line in run[1:]]
    text = "\n".join(run)
    # A link's text or an image's caption over several lines: Doxygen 1.9.4 shows the image's
    # caption several times over and reads the rest of the page as text.
    text = re.sub(r"(!?)\[([^\[\]]*\n[^\[\]]*)\]\(", lambda m: f"{m.group(1)}[{m.group(2).replace(chr(10), ' ')}](", text)
    text = site_links(text, chapter)
    kept = []

    def keep(match):
        token = match.group(0)
        if match.group("code") and "'" in match.group("span") and len(match.group("ticks")) == 1:
            # Doxygen 1.9.4 reads `a 'b' c` as a quotation `...' (curly quotes, lost code);
            # two backquotes keep the span.
            token = f"`` {match.group('span')} ``"
        kept.append(token)
        return f"\0{len(kept) - 1}\0"

    text = PROTECTED.sub(keep, text)
    # Doxygen 1.9.4 prints HTML, emphasis and commands inside "double quotes" as text: the site's
    # copy quotes with typographic quotes instead.
    text = re.sub(r'"([^"]+)"', "\u201c\\1\u201d", text)
    # Bold and emphasis as HTML: Doxygen 1.9.4 prints the asterisks where the span holds code or
    # quotes, or is followed by a letter or a quote ('s).
    text = re.sub(r"\*\*(?=\S)(.+?)(?<=\S)\*\*", r"<b>\1</b>", text, flags=re.S)
    text = re.sub(r"(?<![\w*\\])\*(?=[^\s*])(.+?)(?<=[^\s*\\])\*(?![\w*])", r"<em>\1</em>", text, flags=re.S)
    # An option --name: Doxygen 1.9.4 turns -- into an en dash outside code.
    text = re.sub(r"(?<![-\w\\])--(?=[A-Za-z])", r"\\--", text)

    # "chapter 06", "chapters 03 and 04": each number links its chapter's page.
    def mention(match):
        def one(number):
            n = number.group(0)
            if n not in chapters or chapters[n] == chapter:
                return n
            return f'@ref ch{chapters[n]} "{n}"'
        numbers = match.group(3)
        single = re.fullmatch(r"\d\d", numbers)
        if single and numbers in chapters and chapters[numbers] != chapter:
            return f'@ref ch{chapters[numbers]} "{match.group(1)} {numbers}"'
        return match.group(1) + match.group(2) + re.sub(r"\d\d", one, numbers)

    text = MENTION.sub(mention, text)
    text = re.sub(r"\0(\d+)\0", lambda m: kept[int(m.group(1))], text)
    return text.split("\n")


def write_site(root: Path, out: Path, mainpage: Path) -> int:
    written = Site(root, out, mainpage).write()
    print(f"site: {len(written)} files in {out}")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description="Regenerate the code blocks of the chapter pages.")
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if a page is stale")
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parent.parent)
    parser.add_argument("--docs", action="store_true",
                        help="also turn the labels and references of the pages of docs/ into plain Markdown "
                             "(their code blocks are always written from the sources)")
    parser.add_argument("--site", type=Path, metavar="OUT",
                        help="write the site's copy of every page into OUT (for Doxygen), nothing else")
    parser.add_argument("--mainpage", type=Path, help="with --site: the main page (configured by CMake)")
    args = parser.parse_args()
    if args.site:
        if not args.mainpage or not args.mainpage.is_file():
            print("--site needs --mainpage=FILE, the configured main page", file=sys.stderr)
            return 2
        return write_site(args.root, args.site, args.mainpage)
    pages = chapter_pages(args.root)
    if not pages:
        print(f"no chapter pages under {args.root}", file=sys.stderr)
        return 1
    docs = sorted((args.root / "docs").glob("*.md"))
    stale, errors, blocks = [], 0, 0
    duplicates = []
    labels = labels_of(pages + docs, duplicates)
    # A page of docs/ is kept plain by --docs; its code blocks are kept equal to their sources always.
    pages = pages + docs
    chapter_set = set(chapter_pages(args.root))
    for duplicate in duplicates:
        print(duplicate, file=sys.stderr)
    errors += len(duplicates)
    for page in pages:
        try:
            new = render(page, labels, plain=page in chapter_set or args.docs)
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
