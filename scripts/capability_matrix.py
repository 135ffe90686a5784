#!/usr/bin/env python3
"""Writes the table of which GPU runs which chapter and exercise into docs/instructor.md.

    scripts/capability_matrix.py [--check] [--root DIR]

Read from the build's own lists: each chapter's MIN_ARCH (NN_topic/CMakeLists.txt: 75, 80, 90 or
90a) and the suite names of its exercise tests (NN_topic/exercises/*_test.cpp|.cu: Host... runs on
the CPU, Sm<cc>[a]_... needs that compute capability). The table goes between the lines
<!-- capabilities:begin --> and <!-- capabilities:end -->. With --check it writes nothing and exits
1 when the page is stale (CTest: capabilities.fresh).
"""
import argparse
import re
import sys
from pathlib import Path

CAPABILITIES = [75, 80, 86, 89, 90, 100, 120]
BEGIN, END = "<!-- capabilities:begin -->", "<!-- capabilities:end -->"
SUITE = re.compile(r"\b(?:TEST|TEST_F|TEST_P|TYPED_TEST)\s*\(\s*(\w+)|\bclass\s+(Sm\w+)\s*:")
NEED = re.compile(r"^Sm(\d+)(a?)_")


def cell(need, exact):
    def at(cc):
        if need is None:
            return "yes"  # a CPU exercise runs everywhere
        if exact:
            return "yes" if cc == need else "CPU"
        if cc < need:
            return "CPU"
        return "yes" if cc <= 90 else "yes*"
    return at


def needs_of(text):
    """(capability, arch-specific) the GPU suites of a test source need; None when all are Host."""
    needs = []
    for match in SUITE.finditer(text):
        name = match.group(1) or match.group(2)
        found = NEED.match(name)
        if found:
            needs.append((int(found.group(1)), found.group(2) == "a"))
    return max(needs) if needs else None


def table(root):
    header = "| chapter or exercise | runs on | " + " | ".join(f"{cc // 10}.{cc % 10}" for cc in CAPABILITIES) + " |"
    lines = [header, "| --- | --- | " + " | ".join("---" for _ in CAPABILITIES) + " |"]
    for chapter in sorted(p for p in root.glob("[0-9][0-9]_*") if (p / "CMakeLists.txt").exists()):
        found = re.search(r"\bMIN_ARCH\s+(\d+)(a?)", (chapter / "CMakeLists.txt").read_text())
        if not found:
            continue
        need, exact = int(found.group(1)), found.group(2) == "a"
        at = cell(need, exact)
        lines.append(f"| **{chapter.name}** (lesson, lab, GPU tests) | {need // 10}.{need % 10}{'a' if exact else ''} | "
                     + " | ".join(at(cc) for cc in CAPABILITIES) + " |")
        for test in sorted(list((chapter / "exercises").glob("*_test.cpp")) + list((chapter / "exercises").glob("*_test.cu"))):
            name = re.sub(r"_test\.(cpp|cu)$", "", test.name)
            gpu = needs_of(test.read_text())
            at = cell(gpu[0] if gpu else None, gpu[1] if gpu else False)
            where = "CPU" if gpu is None else f"{gpu[0] // 10}.{gpu[0] % 10}{'a' if gpu[1] else ''}"
            lines.append(f"| &nbsp;&nbsp;exercise `{name}` | {where} | " + " | ".join(at(cc) for cc in CAPABILITIES) + " |")
    lines.append("")
    lines.append("\\* through the 9.0 PTX that the default build includes (`90-virtual`); the course is "
                 "checked on 9.0 (H100) only.")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true")
    parser.add_argument("--root", default=str(Path(__file__).resolve().parent.parent))
    args = parser.parse_args()
    root = Path(args.root)
    page = root / "docs" / "instructor.md"
    text = page.read_text()
    if BEGIN not in text or END not in text:
        sys.exit(f"{page}: the lines {BEGIN} and {END} are missing")
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    new = head + BEGIN + "\n" + table(root) + "\n" + END + tail
    if args.check:
        if new != text:
            print(f"{page} is stale: run scripts/capability_matrix.py")
            return 1
        return 0
    page.write_text(new)
    return 0


if __name__ == "__main__":
    sys.exit(main())
