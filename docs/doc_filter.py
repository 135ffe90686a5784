#!/usr/bin/env python3
"""Doxygen's input filter for the shared library's headers (FILTER_PATTERNS in Doxyfile.in).

    docs/doc_filter.py FILE      writes FILE to standard output, its documentation comments fixed

Doxygen 1.9.4 prints the -- of an option written in a comment (`/// with --bench`) as an en dash
(with –bench). In documentation comments (///, //!, /** ... */) every -- that starts an option
outside a `code span` becomes \\--, which Doxygen prints as two hyphens. Code and line numbers are
unchanged; the source pages show the file itself (FILTER_SOURCE_FILES is off).
"""
import re
import sys

OPTION = re.compile(r"(?<![-\w\\`])--(?=[A-Za-z])")


def fix(text: str) -> str:
    """The -- of options in a comment's text, outside its code spans."""
    parts = re.split(r"(`[^`]*`)", text)
    return "".join(part if part.startswith("`") else OPTION.sub(r"\\--", part) for part in parts)


def main() -> int:
    with open(sys.argv[1], encoding="utf-8") as source:
        lines = source.read().split("\n")
    in_block = False
    for n, line in enumerate(lines):
        if in_block:
            end = line.find("*/")
            lines[n] = fix(line) if end < 0 else fix(line[:end]) + line[end:]
            in_block = end < 0
            continue
        doc = re.search(r"///<?|//!<?|/\*\*<?|/\*!<?", line)
        if not doc:
            continue
        head, tail = line[:doc.end()], line[doc.end():]
        if doc.group(0).startswith("/*"):
            end = tail.find("*/")
            in_block = end < 0
            tail = fix(tail) if end < 0 else fix(tail[:end]) + tail[end:]
        else:
            tail = fix(tail)
        lines[n] = head + tail
    sys.stdout.write("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
