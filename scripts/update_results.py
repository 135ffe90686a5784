#!/usr/bin/env python3
"""Writes measured bandwidth into each chapter's pages (README.md and REFERENCE.md).

    scripts/update_results.py RESULTS_DIR [--check] [--root DIR]

Reads RESULTS_DIR/bench_<chapter>.csv (the chapter's lesson) and bench_<chapter>.<program>.csv
(its other programs: the lab, further lessons), as written by `scripts/gpu_check.sh RESULTS_DIR`
(a chapter program's `--bench --format=csv` report: a '# <device>' line, a header, one row
per variant and a last row for the cudaMemcpy_d2d baseline), and replaces the lines between
`<!-- results:begin -->` and `<!-- results:end -->` in <chapter>/README.md with a table (for another
program: `<!-- results:begin <program> -->` and `<!-- results:end <program> -->`, e.g. the page's
"Lab" section between `<!-- results:begin tma_1d_lab -->` and `<!-- results:end tma_1d_lab -->`).
A chapter's markers (tables, ncu tables, inline values) may sit on its core page README.md or
on its reference page REFERENCE.md: each table is written on the page that holds its markers.
Chapters whose pages have no markers are left untouched. For a chapter with ncu_metrics.txt it
also reads RESULTS_DIR/ncu_<chapter>_<n>.log (the n-th run that file lists) and replaces the
lines between `<!-- ncu:begin -->` and `<!-- ncu:end -->` with one row per run and one column
per metric (summed over the kernels a run profiled).

Numbers in a page's prose come from the same run, through inline value markers: an HTML comment
directly followed by the number it stands for,

    the ring reaches <!-- value:tma_1d:ring:ratio -->0.99 × `cudaMemcpy`

is the ratio of the row `ring` of the program `tma_1d`. PROGRAM is a program of the
page's chapter (LESSONS or LAB of its CMakeLists.txt: the lesson, a further lesson, the lab),
VARIANT one of that report's rows (cudaMemcpy_d2d is the baseline), FIELD one of ratio, gbps and
median_ms, written as the results table writes them, or speedup_over_OTHER: the median time of the
row OTHER of the same report divided by this row's (how many times faster this row ran), with two
decimals. The script replaces the number after each
marker. Both GitHub and Doxygen hide the comment; Doxygen drops the white space after a comment,
which is why the number follows the marker and no closing comment follows the number. A marker
that names a program outside the chapter, a variant its report lacks, an unknown field, or that
is not directly followed by a number, or that starts a line (Markdown would take the line for an
HTML block), or a malformed `<!-- value` comment, is an error naming the
page, its line and the marker: nothing is written and the exit status is 1. Markers of a
program with no report in RESULTS_DIR (a chapter not run, a program that skipped) keep their
numbers, as its table does.

One GPU's column per device: a table holds the measurements of the GPU its page was written from
(the one-device form: GB/s, ratio, median time). A run on another GPU adds that GPU's GB/s and ratio
columns beside them, each headed with the GPU's label (H100, H200, ...), and a line per GPU saying
what it was; a later run on a GPU replaces only that GPU's columns. The rows are the run's variants.
Inline value markers written without a device keep the page's own GPU's numbers: they are written
only from a run on the GPU of their table's first column; `<!-- value:PROGRAM:VARIANT:FIELD:H200 -->`
is written only from a run on an H200. The chart shows each variant's bar per GPU, the others
marked with their label.

All or nothing: every report, ncu log and page is read and checked first (the root is the course's
repository, each report names an existing chapter and program, is a UTF-8 file whose numbers
parse); any problem is one line on stderr naming the file and the field, the exit status is 1 and
no file is written or created. Otherwise each changed file is written whole (a temporary file
renamed over it).

--check writes nothing and exits 1 if any page (a table or an inline value) or chart would
change, naming each stale inline value. --root is the repository (default: the one holding this
script).
"""
import argparse
import csv
import os
import html
import textwrap
import re
import sys
from pathlib import Path

BEGIN, END = "<!-- results:begin -->", "<!-- results:end -->"
# A chapter's pages: the core page and the reference page; markers of either kind may sit in either.
PAGES = ("README.md", "REFERENCE.md")
NCU_BEGIN, NCU_END = "<!-- ncu:begin -->", "<!-- ncu:end -->"
# An ncu metric line: "    name.sum    [unit]    1,234.5"
NCU_METRIC = re.compile(r"^\s+([a-z0-9_]+(?:__[a-z0-9_]+)+\.[a-z_.]+)\s+(?:(\S+)\s+)?([\d,]+(?:\.\d+)?)\s*$")
HEADER = ["chapter", "variant", "size_bytes", "passed", "median_ms", "gbps", "ratio_to_memcpy"]
BASELINE = "cudaMemcpy_d2d"
# How the results table writes each measured column; an inline value is written the same way.
FORMATS = {"gbps": "{:.1f}", "ratio_to_memcpy": "{:.2f}", "median_ms": "{:.3f}"}
# An inline value: the marker and the number directly after it (see the docstring).
# A marker may name a device (<!-- value:PROGRAM:VARIANT:FIELD:H200 -->): filled only from a run on it.
VALUE = re.compile(r"<!-- value:([A-Za-z0-9_]+):([A-Za-z0-9_]+):([a-z0-9_]+)(?::([A-Z][A-Za-z0-9]*))? -->"
                   r"(\d+(?:\.\d+)?)?")
VALUE_START = re.compile(r"<!--\s*/?\s*value\b")  # anything that looks like a marker, well formed or not
# The field a marker names, and the column of the report it comes from.
FIELDS = {"ratio": "ratio_to_memcpy", "gbps": "gbps", "median_ms": "median_ms"}
# FIELD speedup_over_OTHER: how many times faster the row is than the row OTHER of the same report.
SPEEDUP, SPEEDUP_FORMAT = "speedup_over_", "{:.2f}"
CMAKE_KEYWORDS = ("LESSONS", "LAB", "MIN_ARCH", "PTX_ARCHS", "LIBRARIES")


def formatted(row, column):
    """A measured column of a report row, as the results table and the inline values write it
    ("—" for a row that was verified but not timed)."""
    return "—" if row.get("untimed") else FORMATS[column].format(float(row[column]))


def human_size(num_bytes):
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if num_bytes >= scale:
            return f"{num_bytes / scale:g} {unit}"
    return f"{num_bytes} B"


class Skipped(Exception):
    """The chapter skipped on the machine that measured (its GPU lacks a feature)."""


def read_report(path):
    """Returns (device line, iterations or None, rows as dicts).

    Raises Skipped for a chapter that skipped, ValueError for a report that cannot be published."""
    device, iters, rows, header_seen, status, reason = None, None, [], False, None, ""
    for line in path.read_text().splitlines():
        if line.startswith("SKIPPED:") and not rows:
            raise Skipped(line[len("SKIPPED:"):].strip())
        if line.startswith("#"):
            comment = line[1:].strip()
            if comment.startswith("status="):
                status = comment[len("status="):]
                continue
            if comment.startswith("reason="):
                reason = comment[len("reason="):]
                continue
            match = re.search(r"\b(?:iters|iterations)\s*[=:]\s*(\d+)|\bmedian of (\d+)", comment)
            if match:
                iters = int(match.group(1) or match.group(2))
            elif device is None:
                device = comment
        elif line.startswith("chapter,variant,"):
            if line.split(",") != HEADER:
                raise ValueError(f"unexpected header: {line}")
            header_seen = True
        elif header_seen and line.count(",") == len(HEADER) - 1:
            rows.append(dict(zip(HEADER, next(csv.reader([line])))))
    if status == "skipped" and not rows:
        raise Skipped(reason)
    if not rows:
        raise ValueError("no result rows (the chapter skipped or failed; see its bench log)")
    for n, row in enumerate(rows, 1):
        # A row a program verifies but does not time (a kernel too small to measure) has no numbers.
        if row["passed"] == "1" and not row["gbps"] and not row["median_ms"] and not row["ratio_to_memcpy"]:
            row["untimed"] = True
            continue
        if row["passed"] != "1" or not row["gbps"]:
            raise ValueError(f"variant {row['variant']} failed verification or was not timed")
        if not re.fullmatch(r"[A-Za-z0-9_]+", row["variant"]):
            raise ValueError(f"row {n}: field variant: {row['variant']!r} is not a variant name")
        if not re.fullmatch(r"[1-9][0-9]{0,15}", row["size_bytes"]):
            raise ValueError(f"variant {row['variant']}: field size_bytes: {row['size_bytes']!r} is not a whole number of bytes")
        for field in ("median_ms", "gbps", "ratio_to_memcpy"):
            if not re.fullmatch(r"[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?", row[field]) or float(row[field]) <= 0:
                raise ValueError(f"variant {row['variant']}: field {field}: {row[field]!r} is not a positive number")
    if rows[-1]["variant"] != BASELINE:
        raise ValueError(f"the last row is not the {BASELINE} baseline")
    return device, iters, rows


def short_device(device):
    """The GPU's name from a report's device line: "NVIDIA H200 (compute capability ...)" -> "NVIDIA H200"."""
    return (device or "unrecorded device").split(" (")[0]


def device_label(device):
    """A GPU's short label for a column header: "NVIDIA H100 80GB HBM3 (...)" -> "H100"."""
    name = short_device(device)
    match = re.search(r"\b([A-Z]{1,3}\d{2,4}[A-Za-z]*)\b", name)
    return match.group(1) if match else re.sub(r"^NVIDIA\s+", "", name).strip() or "GPU"


class Column:
    """One device's measurements in a results table: its label, device line, size text, iterations,
    and {variant: (GB/s, ratio, median ms or "")} as the table writes them."""

    def __init__(self, label, device, sizes, iters, values):
        self.label, self.device, self.sizes, self.iters, self.values = label, device, sizes, iters, values


def column_of_run(device, iters, rows):
    sizes = ", ".join(dict.fromkeys(human_size(int(row["size_bytes"])) for row in rows))
    values = {row["variant"]: (formatted(row, "gbps"), formatted(row, "ratio_to_memcpy"), formatted(row, "median_ms"))
              for row in rows}
    return Column(device_label(device), device, sizes, iters, values), [row["variant"] for row in rows]


def parse_block(text, begin_marker, end_marker):
    """The columns and the variant order of an existing results table (either form), or ([], [])."""
    lines = [line.strip() for line in text.splitlines()]
    if begin_marker not in lines or end_marker not in lines[lines.index(begin_marker) + 1:]:
        return [], []
    block = lines[lines.index(begin_marker) + 1: lines.index(end_marker, lines.index(begin_marker) + 1)]
    table = [line for line in block if line.startswith("|")]
    if len(table) < 3:
        return [], []
    header = [cell.strip() for cell in table[0].strip("|").split("|")]
    rows = [[cell.strip() for cell in line.strip("|").split("|")] for line in table[2:]]
    variant_of = lambda cell: BASELINE if cell.startswith("cudaMemcpy D2D") else cell.strip("`")  # noqa: E731
    order = [variant_of(row[0]) for row in rows]
    footer = " ".join(line for line in block if line and not line.startswith("|"))
    if header[1:] == ["GB/s", "× cudaMemcpy D2D", "median ms"]:
        match = re.search(r"Measured on (.*?), size ([^;]*?)(?:, median of (\d+) runs)?; GB/s", footer)
        if not match:
            return [], []
        values = {variant_of(row[0]): (row[1], row[2], row[3]) for row in rows if len(row) >= 4}
        return [Column(device_label(match.group(1)), match.group(1), match.group(2),
                       int(match.group(3)) if match.group(3) else None, values)], order
    labels = [cell[: -len(" GB/s")] for cell in header[1::2] if cell.endswith(" GB/s")]
    columns = []
    for k, label in enumerate(labels):
        match = re.search(r"\*\*" + re.escape(label) + r"\*\*: (.*?), size ([^;]*?)(?:, median of (\d+) runs)?\.(?: |$)",
                          "\n".join(block), re.M)
        device, sizes, iters = (match.group(1), match.group(2), int(match.group(3)) if match.group(3) else None) \
            if match else (label, "", None)
        values = {variant_of(row[0]): (row[1 + 2 * k], row[2 + 2 * k], "") for row in rows
                  if len(row) > 2 + 2 * k and row[1 + 2 * k] != "—"}
        columns.append(Column(label, device, sizes, iters, values))
    return columns, order


def merge_columns(old_columns, new_column):
    """The table's columns after a run: the run's device replaces its own column and keeps the others'."""
    merged = [column for column in old_columns if column.label != new_column.label]
    index = next((i for i, c in enumerate(old_columns) if c.label == new_column.label), len(merged))
    merged.insert(index, new_column)
    return merged


def table_block(columns, order):
    """The results table: the one-device form (with the median time), or one GB/s and one ratio
    column per device, each labelled with its device, and a line per device saying what it was."""
    if len(columns) == 1:
        column = columns[0]
        lines = ["| variant | GB/s | × cudaMemcpy D2D | median ms |", "| --- | ---: | ---: | ---: |"]
        for variant in order:
            gbps, ratio, ms = column.values[variant]
            name = "cudaMemcpy D2D (baseline)" if variant == BASELINE else f"`{variant}`"
            lines.append(f"| {name} | {gbps} | {ratio} | {ms} |")
        runs = f", median of {column.iters} runs" if column.iters else ""
        return lines + ["", f"Measured on {column.device or 'an unrecorded device'}, size {column.sizes}{runs}; "
                        "GB/s counts bytes read plus bytes written. Regenerate with `scripts/update_results.py <dir>` "
                        "after `scripts/gpu_check.sh <dir>`."]
    head = "| variant | " + " | ".join(f"{c.label} GB/s | {c.label} × cudaMemcpy" for c in columns) + " |"
    lines = [head, "| --- |" + " ---: | ---: |" * len(columns)]
    for variant in order:
        name = "cudaMemcpy D2D (baseline)" if variant == BASELINE else f"`{variant}`"
        cells = " | ".join(" | ".join(c.values[variant][:2]) if variant in c.values else "— | —" for c in columns)
        lines.append(f"| {name} | {cells} |")
    described = " ".join(f"**{c.label}**: {c.device}, size {c.sizes}"
                         f"{f', median of {c.iters} runs' if c.iters else ''}." for c in columns)
    return lines + ["", f"{described} GB/s counts bytes read plus bytes written; each ratio is to "
                    "`cudaMemcpy` device-to-device on the same GPU in the same run; a run replaces only its "
                    "own GPU's columns (`scripts/update_results.py`)."]


def results_block(device, iters, rows):
    lines = ["| variant | GB/s | × cudaMemcpy D2D | median ms |", "| --- | ---: | ---: | ---: |"]
    for row in rows:
        name = "cudaMemcpy D2D (baseline)" if row["variant"] == BASELINE else f"`{row['variant']}`"
        lines.append(f"| {name} | {formatted(row, 'gbps')} | {formatted(row, 'ratio_to_memcpy')} | "
                     f"{formatted(row, 'median_ms')} |")
    sizes = ", ".join(dict.fromkeys(human_size(int(row["size_bytes"])) for row in rows))
    runs = f", median of {iters} runs" if iters else ""
    lines += ["", f"Measured on {device or 'an unrecorded device'}, size {sizes}{runs}; GB/s counts bytes read "
              "plus bytes written. Regenerate with `scripts/update_results.py <dir>` after "
              "`scripts/gpu_check.sh <dir>`."]
    return lines


def chapter_programs(folder):
    """The programs of a chapter, its main lesson first: LESSONS and LAB of its CMakeLists.txt."""
    cmake = folder / "CMakeLists.txt"
    if not cmake.is_file():
        return []
    text = re.sub(r"#[^\n]*", "", cmake.read_text())
    call = re.search(r"\bcourse_add_chapter\s*\((.*?)\)", text, re.S)
    programs, keyword = [], None
    for token in call.group(1).split() if call else []:
        if token in CMAKE_KEYWORDS:
            keyword = token
        elif keyword in ("LESSONS", "LAB"):
            programs.append(token)
    return programs


def fill_values(text, page, programs, rows_of, labels_of=None, home_of=None):
    """Writes the measured number after every inline value marker of a page.

    programs: every program of the chapter; rows_of: {program: {variant: row}} for those measured
    in this run (the others keep their numbers); labels_of: {program: the run's device label};
    home_of: {program: the device label of the first column of its results table}. A marker that
    names a device is written only from a run on that device; one that names none only from a run on
    its table's first device (the page's own measurements), or where the program has no table yet.
    Returns (new text, errors, changes, kept): an error, a change (a stale number) and a kept marker
    are one line each, naming page and line."""
    labels_of, home_of = labels_of or {}, home_of or {}
    errors, changes, kept, out = [], [], [], []
    for number, line in enumerate(text.split("\n"), 1):
        where = f"{page}:{number}"
        wellformed = {match.start() for match in VALUE.finditer(line)}
        for start in (match.start() for match in VALUE_START.finditer(line)):
            if not line[:start].strip():
                errors.append(f"{where}: a line starts with a value marker, which Markdown takes for the start of an "
                              "HTML block: put a word of the sentence before it on the same line")
            if start not in wellformed:
                end = line.find("-->", start)
                comment = line[start:end + 3] if end >= 0 else line[start:]
                errors.append(f"{where}: {comment}: not a value marker; write <!-- value:PROGRAM:VARIANT:FIELD --> "
                              "directly followed by the number")

        def substitute(match):
            program, variant, field, label, old = match.groups()
            marker = match.group(0)[: len(match.group(0)) - len(old or "")]
            problem = None
            other = field[len(SPEEDUP):] if field.startswith(SPEEDUP) else None
            if field not in FIELDS and not other:
                problem = f"unknown field '{field}' (one of {', '.join(FIELDS)}, {SPEEDUP}VARIANT)"
            elif other and program in rows_of and other not in rows_of[program]:
                problem = (f"the report of {program} has no variant '{other}' to compare with "
                           f"(its variants: {', '.join(rows_of[program])})")
            elif program not in programs:
                problem = f"'{program}' is not a program of this chapter (its programs: {', '.join(sorted(programs)) or 'none'})"
            elif program in rows_of and variant not in rows_of[program]:
                problem = (f"the report of {program} has no variant '{variant}' "
                           f"(its variants: {', '.join(rows_of[program])})")
            elif program in rows_of and rows_of[program][variant].get("untimed"):
                problem = f"the report of {program} verifies '{variant}' but does not time it: no number to write"
            elif old is None:
                problem = "the marker is not directly followed by a number"
            if problem:
                errors.append(f"{where}: {marker}: {problem}")
                return match.group(0)
            run_label = labels_of.get(program)
            other_device = (label is not None and label != run_label) or \
                (label is None and home_of.get(program) not in (None, run_label))
            if program not in rows_of or other_device:
                kept.append(f"{where}: {marker}{old}")
                return match.group(0)
            if other:  # how many times faster than the other row: its time over this row's
                value = SPEEDUP_FORMAT.format(float(rows_of[program][other]["median_ms"]) /
                                              float(rows_of[program][variant]["median_ms"]))
            else:
                value = formatted(rows_of[program][variant], FIELDS[field])
            if value != old:
                changes.append(f"{where}: {marker} says {old}, the run gives {value}")
            return marker + value

        out.append(VALUE.sub(substitute, line))
    return "\n".join(out), errors, changes, kept


def ncu_runs(metrics_file):
    """The program arguments of each run that a chapter's ncu_metrics.txt lists, in order."""
    runs = []
    for line in metrics_file.read_text().splitlines():
        args, sep, metrics = line.partition("|")
        if sep and metrics.strip() and not args.startswith("#"):
            runs.append(args.strip())
    return runs


# Nsight Compute scales a metric's unit to its value (byte, Kbyte, Mbyte, ...; nsecond, usecond,
# ...), so two runs, or two kernels of one run, may report the same metric in different units.
NCU_SCALES = {}
for _base, _prefixes in (("byte", ("", "K", "M", "G", "T")), ("second", ("n", "u", "m", ""))):
    for _i, _prefix in enumerate(_prefixes):
        NCU_SCALES[_prefix + _base] = (_base, 1000.0 ** _i)
NCU_SCALES.update({short: NCU_SCALES[long] for short, long in
                   (("ns", "nsecond"), ("us", "usecond"), ("ms", "msecond"), ("s", "second"))})


def in_unit(value, unit, wanted, name):
    """`value` given in `unit`, expressed in `wanted` (both of one kind, e.g. Gbyte and Mbyte)."""
    if unit == wanted:
        return value
    have, want = NCU_SCALES.get(unit), NCU_SCALES.get(wanted)
    if have is None or want is None or have[0] != want[0]:
        raise ValueError(f"{name} is reported in {wanted!r} and in {unit!r}, which do not convert")
    return value * have[1] / want[1]


def read_ncu_log(path):
    """Returns {metric: (unit, value summed over the profiled kernels)}; ValueError if there is none."""
    values = {}
    for line in path.read_text(errors="replace").splitlines():
        match = NCU_METRIC.match(line)
        if match:
            name, unit, number = match.group(1), match.group(2) or "", float(match.group(3).replace(",", ""))
            old_unit, old = values.get(name, (unit, 0.0))
            if old_unit != unit:  # ncu picks a unit per kernel: sum in the first kernel's unit
                number = in_unit(number, unit, old_unit, name)
            values[name] = (old_unit, old + number)
    if not values:
        raise ValueError("no metric values (ncu failed or the run skipped; see the log)")
    return values


def ncu_block(runs, logs):
    """One row per run (its arguments), one column per metric, in the order of the first run."""
    columns = list(logs[0])
    header = ["run"] + [f"`{name}`" + (f" ({logs[0][name][0]})" if logs[0][name][0] else "") for name in columns]
    lines = ["| " + " | ".join(header) + " |", "| --- |" + " ---: |" * len(columns)]
    for args, values in zip(runs, logs):
        cells = []
        for name in columns:
            unit, value = values.get(name, (None, None))
            if value is not None:  # in the column's unit, the first run's
                value = in_unit(value, unit, logs[0][name][0], name)
            cells.append("-" if value is None else f"{value:,.0f}" if value == int(value) else f"{value:,.2f}")
        lines.append(f"| `{args}` | " + " | ".join(cells) + " |")
    lines += ["", "Written by `scripts/update_results.py <dir>` from the `ncu_<chapter>_<n>.log` files of "
              "`scripts/gpu_check.sh <dir>`; each row is one profiled run of `ncu_metrics.txt`."]
    return lines


CHART_WIDTH = 720     # user units: 12-unit text stays 6 px or more on a 390 px phone
CHART_COLOURS = {"lesson": "#76b900", "lab": "#4f8fc0", "library": "#b07cc6"}
# No copy through DRAM runs 1.5 times as fast as cudaMemcpy, which is itself DRAM-bound: a larger
# ratio counts bytes where they land (read once and served again from L1/L2, or multicast to
# several blocks), a different measurement, which the course chart draws apart.
DRAM_BOUND = 1.5


def chart_text(x, y, text, extra=""):
    return f'<text x="{x:.1f}" y="{y}"{extra}>{html.escape(text, quote=False)}</text>'


def chart_lines(text, width=95):
    """A note wrapped to lines that fit the chart's width."""
    return textwrap.wrap(text, width) or [""]


def bar_rows(bars, top, axis_max):
    """SVG elements of one panel of bars (label above each bar, value after it) with a dashed line at
    1.0 (cudaMemcpy); returns them and the panel's bottom."""
    left, row_h = 8, 34
    scale = (CHART_WIDTH - left - 80) / axis_max
    x1 = left + scale
    bottom = top + row_h * len(bars)
    out = [f'<line x1="{x1:.1f}" y1="{top + 14}" x2="{x1:.1f}" y2="{bottom}" stroke="#333" stroke-dasharray="4 3"/>']
    for i, (label, ratio, kind) in enumerate(bars):
        y = top + i * row_h
        out.append(chart_text(left, y + 13, label))
        out.append(f'<rect x="{left}" y="{y + 18}" width="{ratio * scale:.1f}" height="12" '
                   f'fill="{CHART_COLOURS.get(kind, "#888")}"/>')
        out.append(chart_text(left + ratio * scale + 4, y + 29, f"{ratio:.3f}"))
    anchor = ' text-anchor="middle"' if x1 > 80 else ""
    out.append(chart_text(x1 if x1 > 80 else left, bottom + 14, "1.0 = cudaMemcpy D2D", f'{anchor} fill="#333"'))
    return out, bottom + 24


def chart_svg(title, notes, body, bottom, kinds):
    """The whole chart: a viewBox and width 100% (it scales to its column), an opaque background
    (dark labels stay readable in a dark theme), title, notes, panels and a legend of the kinds."""
    lines = [line for note in notes for line in chart_lines(note)]
    shift = 36 + 16 * len(lines)
    height = bottom + shift + 22
    legend = " ".join(f'<tspan fill="{CHART_COLOURS[k]}">&#9632; {k}</tspan>' for k in sorted(kinds))
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {CHART_WIDTH} {height}" width="100%" '
           f'font-family="sans-serif" font-size="12">',
           f'<rect width="{CHART_WIDTH}" height="{height}" fill="#ffffff"/>',
           chart_text(8, 20, title, ' font-size="14" font-weight="bold"')]
    out += [chart_text(8, 38 + 16 * i, line, ' fill="#555"') for i, line in enumerate(lines)]
    out.append(f'<g transform="translate(0 {shift})">')
    out += body
    out.append("</g>")
    out.append(f'<text x="8" y="{height - 8}">{legend}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def bar_chart(title, bars, note):
    """An SVG of horizontal bars, one per (label, ratio, kind), with a line at 1.0 (cudaMemcpy)."""
    axis_max = 1.08 * max(1.1, max((ratio for _, ratio, _ in bars), default=1.0))
    body, bottom = bar_rows(bars, 0, axis_max)
    return chart_svg(title, [note], body, bottom, {kind for _, _, kind in bars})


def course_chart(bars, note):
    """The course's chart: each chapter's best variant, in two panels on their own scales: copies
    through DRAM (about 1.0 at best), and the rows above DRAM_BOUND, which count bytes where they land."""
    copies = [bar for bar in bars if bar[1] <= DRAM_BOUND]
    landed = [bar for bar in bars if bar[1] > DRAM_BOUND]
    body, y = [], 0
    for heading, detail, rows in (
            ("Copies through DRAM, x cudaMemcpy", "bytes read + written per second", copies),
            ("Bytes counted where they land, x cudaMemcpy",
             "not copies through DRAM: data read once and served again from L1/L2, or multicast to several "
             "blocks", landed)):
        if not rows:
            continue
        body.append(chart_text(8, y + 14, heading, ' font-weight="bold"'))
        y += 18
        for line in chart_lines(detail):
            body.append(chart_text(8, y + 14, line, ' fill="#555"'))
            y += 16
        axis_max = 1.08 * max(1.1, max(ratio for _, ratio, _ in rows))
        rows_out, y = bar_rows(rows, y + 4, axis_max)
        body += rows_out
        y += 8
    return chart_svg("The course: best variant per chapter", [note], body, y, {kind for _, _, kind in bars})


def write_atomically(path, text):
    """Writes a file whole or not at all: a temporary file beside it, then a rename over it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        temporary.write_text(text)
        os.replace(temporary, path)
    finally:
        if temporary.exists():
            temporary.unlink()


def read_text(path):
    """A file's text; ValueError with one line (the file and why) if it cannot be read as UTF-8 text."""
    try:
        return path.read_text(encoding="utf-8")
    except IsADirectoryError:
        raise ValueError(f"{path}: is a folder, not a file")
    except UnicodeDecodeError as error:
        raise ValueError(f"{path}: not UTF-8 text (byte {error.start})")
    except OSError as error:
        raise ValueError(f"{path}: cannot be read ({error.strerror})")


def page_with(texts, begin_marker, end_marker):
    """The name of the page (of {name: text}) that holds the two marker lines, or None."""
    for name, text in texts.items():
        stripped = [line.strip() for line in text.splitlines()]
        if begin_marker in stripped and end_marker in stripped[stripped.index(begin_marker) + 1:]:
            return name
    return None


def replace_block(text, block, begin_marker=BEGIN, end_marker=END):
    """Returns text with the lines between the markers replaced, or None if the markers are missing."""
    lines = text.splitlines()
    stripped = [line.strip() for line in lines]
    if begin_marker not in stripped or end_marker not in stripped:
        return None
    begin = stripped.index(begin_marker)
    end = stripped.index(end_marker, begin + 1) if end_marker in stripped[begin + 1:] else None
    if end is None:
        return None
    new_lines = lines[: begin + 1] + [""] + block + [""] + lines[end:]
    return "\n".join(new_lines) + ("\n" if text.endswith("\n") else "")


def is_repository(root):
    """Whether root is this course's repository (its top CMakeLists.txt names the project)."""
    try:
        return "project(async_copy_course" in (root / "CMakeLists.txt").read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return False


def plan(args):
    """Everything a run would write, computed before anything is written.

    Returns (outputs {path: new text} of the files that change, problems [one line each],
    changes [stale inline values, one line each])."""
    problems, outputs, changes = [], {}, []
    if not args.root.is_dir() or not is_repository(args.root):
        return {}, [f"--root {args.root}: not the course's repository (no CMakeLists.txt naming "
                    "project(async_copy_course))"], []
    if not args.results_dir.is_dir():
        return {}, [f"{args.results_dir}: not a folder of results (the OUTDIR of scripts/gpu_check.sh)"], []
    reports = sorted(args.results_dir.glob("bench_*.csv"))
    if not reports:
        return {}, [f"{args.results_dir}: no bench_*.csv in it"], []
    chapters = {path.parent.name for path in args.root.glob("[0-9][0-9]_*/CMakeLists.txt")}
    bars_of = {}      # chapter -> [(label, ratio, kind, device)]: the chapter's chart
    device_of = {}
    reports_of = {}   # chapter folder -> [(program, or "" for its lesson; report)]
    for report in reports:
        folder, _, program = report.stem[len("bench_"):].partition(".")
        if folder not in chapters:
            problems.append(f"{report}: '{folder}' is not a chapter of {args.root} (a folder NN_topic with a CMakeLists.txt)")
            continue
        if program and program not in chapter_programs(args.root / folder):
            problems.append(f"{report}: '{program}' is not a program of {folder} (its programs: "
                            f"{', '.join(chapter_programs(args.root / folder)) or 'none'})")
            continue
        reports_of.setdefault(folder, []).append((program, report))
    # Every chapter page is read: its inline values are checked (and kept) even when the run left it out.
    pages = {path.parent.name for name in PAGES for path in args.root.glob(f"[0-9][0-9]_*/{name}")}
    for folder in sorted(set(reports_of) | pages):
        programs = chapter_programs(args.root / folder)
        # The chapter's pages: its core page and, where it has one, its reference page.
        olds = {}
        for name in PAGES:
            if (args.root / folder / "README.md").is_file() and (args.root / folder / name).exists():
                try:
                    olds[name] = read_text(args.root / folder / name)
                except ValueError as error:
                    problems.append(str(error))
        measured, rows_of = [], {}  # [(program, device, iters, rows)] of the reports read; {program: {variant: row}}
        for program, report in reports_of.get(folder, []):
            chapter = f"{folder} ({program})" if program else folder
            try:
                read_text(report)
                device, iters, rows = read_report(report)
            except Skipped as reason:
                print(f"{chapter}: skipped on the measuring machine ({reason}); its table and values left untouched")
                continue
            except ValueError as error:
                problems.append(f"{report}: {error}" if not str(error).startswith(str(report)) else str(error))
                continue
            measured.append((program, device, iters, rows))
            rows_of[program or (programs[0] if programs else rows[0]["chapter"])] = {row["variant"]: row for row in rows}
            if not program or folder not in device_of:
                device_of[folder] = device  # the chart's device: the lesson's
            for row in rows:
                if row["variant"] == BASELINE or row.get("untimed"):
                    continue
                kind = "library" if "cublas" in row["variant"] else ("lab" if program.endswith("_lab") else "lesson")
                label = (f"{program}: " if program and not program.endswith("_lab") else "") + row["variant"]
                bars_of.setdefault(folder, []).append((label, float(row["ratio_to_memcpy"]), kind, device))
        if not olds:
            if measured:
                print(f"{folder}: no README.md at {args.root / folder / 'README.md'}; skipped")
            continue
        # Which device each measured program's table already holds first (its page's own numbers),
        # and the run's device: an unnamed value marker is written only from a run on the former.
        labels_of, home_of = {}, {}
        for program, device, iters, rows in measured:
            key = program or (programs[0] if programs else rows[0]["chapter"])
            begin, end = (f"<!-- results:begin {program} -->", f"<!-- results:end {program} -->") if program else (BEGIN, END)
            name = page_with(olds, begin, end)
            columns = parse_block(olds[name], begin, end)[0] if name else []
            labels_of[key] = device_label(device)
            home_of[key] = columns[0].label if columns else None
        # The values first, so that an error names the line of the page as it is.
        news, errors, kept = {}, [], []
        for name, old in olds.items():
            news[name], page_errors, page_changes, page_kept = fill_values(
                old, f"{folder}/{name}", set(programs) | set(rows_of), rows_of, labels_of, home_of)
            errors, changes, kept = errors + page_errors, changes + page_changes, kept + page_kept
        if errors:
            problems += errors
            continue
        pages_named = " or ".join(olds)
        for program, device, iters, rows in measured:
            chapter = f"{folder} ({program})" if program else folder
            begin, end = (f"<!-- results:begin {program} -->", f"<!-- results:end {program} -->") if program else (BEGIN, END)
            name = page_with(news, begin, end)
            if name is None:
                print(f"{chapter}: {pages_named} has no '{begin}' ... '{end}' lines; table not written")
                continue
            # The run's device replaces its own columns; another device's columns stay beside them.
            old_columns, _ = parse_block(news[name], begin, end)
            run_column, order = column_of_run(device, iters, rows)
            columns = merge_columns(old_columns, run_column)
            news[name] = replace_block(news[name], table_block(columns, order), begin, end)
            kind_of = lambda variant: "library" if "cublas" in variant else ("lab" if program.endswith("_lab") else "lesson")  # noqa: E731
            for column in columns:
                if column.label == run_column.label:
                    continue
                for variant in order:
                    if variant != BASELINE and variant in column.values and column.values[variant][1] != "—":
                        label = (f"{program}: " if program and not program.endswith("_lab") else "") + variant
                        bars_of.setdefault(folder, []).append(
                            (label, float(column.values[variant][1]), kind_of(variant), column.device))
            metrics_file = args.root / folder / "ncu_metrics.txt"
            if not program and metrics_file.is_file():
                runs_listed = ncu_runs(metrics_file) if metrics_file.is_file() else []
                if not any((args.results_dir / f"ncu_{folder}_{n}.log").is_file() for n in range(1, len(runs_listed) + 1)):
                    print(f"{chapter}: no ncu logs in this run (its ncu step did not run); ncu table left as it is")
                    continue
                try:
                    runs = ncu_runs(metrics_file)
                    logs = []
                    for n in range(1, len(runs) + 1):
                        log = args.results_dir / f"ncu_{folder}_{n}.log"
                        if not log.is_file():
                            raise ValueError(f"{log}: missing (ncu_metrics.txt lists {len(runs)} runs)")
                        try:
                            logs.append(read_ncu_log(log))
                        except ValueError as error:
                            raise ValueError(f"{log}: {error}")
                except (OSError, UnicodeDecodeError, ValueError) as error:
                    problems.append(f"{chapter}: ncu table: {error}")
                else:
                    ncu_page = page_with(news, NCU_BEGIN, NCU_END)
                    if ncu_page is None:
                        print(f"{chapter}: {pages_named} has no '{NCU_BEGIN}' ... '{NCU_END}' lines; ncu table not written")
                    else:
                        news[ncu_page] = replace_block(news[ncu_page], ncu_block(runs, logs), NCU_BEGIN, NCU_END)
        if kept and folder in reports_of:
            print(f"{folder}: {len(kept)} inline value(s) of programs without a report left as they are")
        for name, old in olds.items():
            if news[name] != old:
                outputs[args.root / folder / name] = news[name]
            elif folder in reports_of:
                print(f"{folder}: {name} already up to date")
    # Charts: one per chapter (every variant of lesson and lab), one for the course (each chapter's
    # best variant, and cuBLAS where a chapter measures it), from the same reports.
    charts, overview = {}, []
    for folder, bars in sorted(bars_of.items()):
        order = {"lesson": 0, "library": 1, "lab": 2}
        # A program measured on another device than the lesson's is marked on its bars: each ratio
        # is to cudaMemcpy on its own device, in its own run.
        home = device_of.get(folder)
        first_at = {}
        for index, (label, _, _, device) in enumerate(bars):
            first_at.setdefault(label, index)
        # Each variant's bars together: the run's device first, then other devices' measurements of it.
        ranked = sorted(bars, key=lambda b: (order[b[2]], first_at[b[0]], b[3] != home))
        bars = [(label if device == home else f"{label} [{device_label(device)}]", ratio, kind)
                for label, ratio, kind, device in ranked]
        note = f"x cudaMemcpy device-to-device, same run; {home or 'unrecorded device'}"
        if any(label.endswith("]") for label, _, _ in bars):
            note = (f"x cudaMemcpy device-to-device on the same GPU, same run; unmarked: {device_label(home)}; "
                    "[..]: that GPU")
        charts[args.root / folder / "figures" / f"results_{folder}.svg"] = bar_chart(
            f"{folder}: bandwidth of every variant", bars, note[:110])
        own = [b for b in bars if b[2] != "library"]
        if own:
            best = max(own, key=lambda b: b[1])
            overview.append((f"{folder} ({best[0]})", best[1], best[2]))
        overview += [(f"{folder} ({b[0]})", b[1], "library") for b in bars if b[2] == "library"]
    if overview and len(bars_of) > 1:
        note = "each chapter's best variant, x cudaMemcpy device-to-device in the same run"
        charts[args.root / "docs" / "results_course.svg"] = course_chart(overview, note)
    for path, text in charts.items():
        try:
            if not path.is_file() or read_text(path) != text:
                outputs[path] = text
        except ValueError as error:
            problems.append(str(error))
    return outputs, problems, changes


def main():
    parser = argparse.ArgumentParser(description="Write bench results into the chapter pages: the results "
                                     "tables, the ncu tables, the charts and the inline values of the prose "
                                     "(<!-- value:PROGRAM:VARIANT:FIELD -->NUMBER, FIELD one of "
                                     f"{', '.join(FIELDS)}).")
    parser.add_argument("results_dir", type=Path, help="the OUTDIR of scripts/gpu_check.sh")
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if a page (a table or an inline value) or a chart would change")
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parent.parent,
                        help="repository root (default: %(default)s)")
    args = parser.parse_args()
    # Everything is read and checked first; a problem anywhere writes nothing at all.
    outputs, problems, changes = plan(args)
    if problems:
        for problem in problems:
            print(problem + ("" if len(problems) > 1 else "; nothing written"), file=sys.stderr)
        if len(problems) > 1:
            print(f"nothing written: {len(problems)} problems", file=sys.stderr)
        return 1
    shown = lambda path: path.relative_to(args.root) if path.is_relative_to(args.root) else path  # noqa: E731
    for path, text in outputs.items():
        if args.check:
            folder = path.parent.name
            print(f"{folder}: {path.name} would change" if path.suffix == ".md" else f"{shown(path)}: would change")
            for change in changes:
                if change.startswith(f"{folder}/{path.name}:"):
                    print(f"  {change}")
        else:
            write_atomically(path, text)
            print(f"{shown(path)}: written")
    if not args.check:
        print(f"{len(outputs)} file(s) written, {len(changes)} inline value(s) changed")
    return 1 if args.check and outputs else 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        sys.exit(130)
    except Exception as error:  # a one-line answer for any input the checks above did not foresee
        print(f"update_results.py: {type(error).__name__}: {error}", file=sys.stderr)
        sys.exit(1)
