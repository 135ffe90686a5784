#!/usr/bin/env python3
"""Writes measured bandwidth into each chapter's README.md.

    scripts/update_results.py RESULTS_DIR [--check] [--root DIR]

Reads RESULTS_DIR/bench_<chapter>.csv (the chapter's lesson) and bench_<chapter>.<program>.csv
(its other programs: the lab, further lessons), as written by `scripts/gpu_check.sh RESULTS_DIR`
(a chapter program's `--bench --format=csv` report: a '# <device>' line, a header, one row
per variant and a last row for the cudaMemcpy_d2d baseline), and replaces the lines between
`<!-- results:begin -->` and `<!-- results:end -->` in <chapter>/README.md with a table (for another
program: `<!-- results:begin <program> -->` and `<!-- results:end <program> -->`, e.g. the page's
"Lab" section between `<!-- results:begin tma_1d_lab -->` and `<!-- results:end tma_1d_lab -->`).
Chapters whose README has no markers are left untouched. For a chapter with ncu_metrics.txt it
also reads RESULTS_DIR/ncu_<chapter>_<n>.log (the n-th run that file lists) and replaces the
lines between `<!-- ncu:begin -->` and `<!-- ncu:end -->` with one row per run and one column
per metric (summed over the kernels a run profiled). --check writes nothing and exits 1
if any README would change. --root is the repository (default: the one holding this script).
"""
import argparse
import csv
import re
import sys
from pathlib import Path

BEGIN, END = "<!-- results:begin -->", "<!-- results:end -->"
NCU_BEGIN, NCU_END = "<!-- ncu:begin -->", "<!-- ncu:end -->"
# An ncu metric line: "    name.sum    [unit]    1,234.5"
NCU_METRIC = re.compile(r"^\s+([a-z0-9_]+(?:__[a-z0-9_]+)+\.[a-z_.]+)\s+(?:(\S+)\s+)?([\d,]+(?:\.\d+)?)\s*$")
HEADER = ["chapter", "variant", "size_bytes", "passed", "median_ms", "gbps", "ratio_to_memcpy"]
BASELINE = "cudaMemcpy_d2d"


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
    for row in rows:
        if row["passed"] != "1" or not row["gbps"]:
            raise ValueError(f"variant {row['variant']} failed verification or was not timed")
    if rows[-1]["variant"] != BASELINE:
        raise ValueError(f"the last row is not the {BASELINE} baseline")
    return device, iters, rows


def results_block(device, iters, rows):
    lines = ["| variant | GB/s | × cudaMemcpy D2D | median ms |", "| --- | ---: | ---: | ---: |"]
    for row in rows:
        name = "cudaMemcpy D2D (baseline)" if row["variant"] == BASELINE else f"`{row['variant']}`"
        lines.append(f"| {name} | {float(row['gbps']):.1f} | {float(row['ratio_to_memcpy']):.2f} | "
                     f"{float(row['median_ms']):.3f} |")
    sizes = ", ".join(dict.fromkeys(human_size(int(row["size_bytes"])) for row in rows))
    runs = f", median of {iters} runs" if iters else ""
    lines += ["", f"Measured on {device or 'an unrecorded device'}, size {sizes}{runs}; GB/s counts bytes read "
              "plus bytes written. Regenerate with `scripts/update_results.py <dir>` after "
              "`scripts/gpu_check.sh <dir>`."]
    return lines


def ncu_runs(metrics_file):
    """The program arguments of each run that a chapter's ncu_metrics.txt lists, in order."""
    runs = []
    for line in metrics_file.read_text().splitlines():
        args, sep, metrics = line.partition("|")
        if sep and metrics.strip() and not args.startswith("#"):
            runs.append(args.strip())
    return runs


def read_ncu_log(path):
    """Returns {metric: (unit, value summed over the profiled kernels)}; ValueError if there is none."""
    values = {}
    for line in path.read_text(errors="replace").splitlines():
        match = NCU_METRIC.match(line)
        if match:
            name, unit, number = match.group(1), match.group(2) or "", float(match.group(3).replace(",", ""))
            old_unit, old = values.get(name, (unit, 0.0))
            if old_unit != unit:
                raise ValueError(f"{name} is reported in {old_unit!r} and in {unit!r}")
            values[name] = (unit, old + number)
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
            value = values.get(name, (None, None))[1]
            cells.append("-" if value is None else f"{value:,.0f}" if value == int(value) else f"{value:,.2f}")
        lines.append(f"| `{args}` | " + " | ".join(cells) + " |")
    lines += ["", "Written by `scripts/update_results.py <dir>` from the `ncu_<chapter>_<n>.log` files of "
              "`scripts/gpu_check.sh <dir>`; each row is one profiled run of `ncu_metrics.txt`."]
    return lines


def bar_chart(title, bars, note):
    """An SVG of horizontal bars, one per (label, ratio, kind), with a line at 1.0 (cudaMemcpy)."""
    label_w, bar_w, row_h, top = 330, 380, 22, 46
    scale = bar_w / max(1.1, max((ratio for _, ratio, _ in bars), default=1.0))
    height = top + row_h * len(bars) + 40
    colours = {"lesson": "#76b900", "lab": "#4f8fc0", "library": "#b07cc6"}
    esc = lambda t: t.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{label_w + bar_w + 70}" height="{height}" '
           f'font-family="sans-serif" font-size="12">',
           f'<text x="8" y="20" font-size="14" font-weight="bold">{esc(title)}</text>',
           f'<text x="8" y="36" fill="#555">{esc(note)}</text>']
    for i, (label, ratio, kind) in enumerate(bars):
        y = top + i * row_h
        out.append(f'<text x="{label_w - 6}" y="{y + 15}" text-anchor="end">{esc(label)}</text>')
        out.append(f'<rect x="{label_w}" y="{y + 4}" width="{ratio * scale:.1f}" height="{row_h - 8}" '
                   f'fill="{colours.get(kind, "#888")}"/>')
        out.append(f'<text x="{label_w + ratio * scale + 4:.1f}" y="{y + 15}">{ratio:.3f}</text>')
    x1 = label_w + scale
    out.append(f'<line x1="{x1:.1f}" y1="{top - 4}" x2="{x1:.1f}" y2="{top + row_h * len(bars)}" stroke="#333" '
               f'stroke-dasharray="4 3"/>')
    out.append(f'<text x="{x1:.1f}" y="{top + row_h * len(bars) + 16}" text-anchor="middle" fill="#333">'
               f'1.0 = cudaMemcpy D2D</text>')
    legend = " ".join(f'<tspan fill="{colours[k]}">&#9632; {k}</tspan>' for k in sorted({k for _, _, k in bars}))
    out.append(f'<text x="8" y="{height - 6}">{legend}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def write_if_changed(path, text, check, stale):
    if path.is_file() and path.read_text() == text:
        return
    if check:
        print(f"{path}: would change")
        stale.append(str(path))
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    print(f"{path}: written")


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


def main():
    parser = argparse.ArgumentParser(description="Write bench results into the chapter READMEs.")
    parser.add_argument("results_dir", type=Path, help="the OUTDIR of scripts/gpu_check.sh")
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if a README would change")
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parent.parent,
                        help="repository root (default: %(default)s)")
    args = parser.parse_args()

    reports = sorted(args.results_dir.glob("bench_*.csv"))
    if not reports:
        print(f"no bench_*.csv in {args.results_dir}", file=sys.stderr)
        return 1
    problems, stale = 0, []
    bars_of = {}      # chapter -> [(label, ratio, kind)]: the chapter's chart
    device_of = {}
    for report in reports:
        chapter, _, program = report.stem[len("bench_"):].partition(".")
        readme = args.root / chapter / "README.md"
        begin, end = (f"<!-- results:begin {program} -->", f"<!-- results:end {program} -->") if program else (BEGIN, END)
        if program:
            chapter = f"{chapter} ({program})"
        try:
            device, iters, rows = read_report(report)
        except Skipped as reason:
            print(f"{chapter}: skipped on the measuring machine ({reason}); README.md left untouched")
            continue
        except ValueError as error:
            print(f"{chapter}: not updated: {report.name}: {error}", file=sys.stderr)
            problems += 1
            continue
        folder = report.stem[len("bench_"):].partition(".")[0]
        device_of[folder] = device
        for row in rows:
            if row["variant"] == BASELINE:
                continue
            kind = "library" if "cublas" in row["variant"] else ("lab" if program.endswith("_lab") else "lesson")
            label = (f"{program}: " if program and not program.endswith("_lab") else "") + row["variant"]
            bars_of.setdefault(folder, []).append((label, float(row["ratio_to_memcpy"]), kind))
        if not readme.is_file():
            print(f"{chapter}: no README.md at {readme}; skipped")
            continue
        old = readme.read_text()
        new = replace_block(old, results_block(device, iters, rows), begin, end)
        metrics_file = args.root / chapter / "ncu_metrics.txt"
        if new is not None and not program and metrics_file.is_file():
            runs = ncu_runs(metrics_file)
            try:
                logs = [read_ncu_log(args.results_dir / f"ncu_{chapter}_{n}.log") for n in range(1, len(runs) + 1)]
            except (OSError, ValueError) as error:
                print(f"{chapter}: ncu table not updated: {error}", file=sys.stderr)
                problems += 1
            else:
                with_ncu = replace_block(new, ncu_block(runs, logs), NCU_BEGIN, NCU_END)
                if with_ncu is None:
                    print(f"{chapter}: README.md has no '{NCU_BEGIN}' ... '{NCU_END}' lines; ncu table not written")
                else:
                    new = with_ncu
        if new is None:
            print(f"{chapter}: README.md has no '{begin}' ... '{end}' lines; left untouched")
        elif new == old:
            print(f"{chapter}: README.md already up to date")
        elif args.check:
            print(f"{chapter}: README.md would change")
            stale.append(chapter)
        else:
            readme.write_text(new)
            print(f"{chapter}: README.md updated ({len(rows) - 1} variants and the baseline)")
    # Charts: one per chapter (every variant of lesson and lab), one for the course (each chapter's
    # best variant, and cuBLAS where a chapter measures it), from the same reports.
    overview = []
    for folder, bars in sorted(bars_of.items()):
        order = {"lesson": 0, "library": 1, "lab": 2}
        bars = sorted(bars, key=lambda b: order[b[2]])
        note = f"x cudaMemcpy device-to-device, same run; {device_of.get(folder) or 'unrecorded device'}"
        write_if_changed(args.root / folder / "figures" / f"results_{folder}.svg",
                         bar_chart(f"{folder}: bandwidth of every variant", bars, note[:110]), args.check, stale)
        own = [b for b in bars if b[2] != "library"]
        if own:
            best = max(own, key=lambda b: b[1])
            overview.append((f"{folder} ({best[0]})", best[1], best[2]))
        overview += [(f"{folder} ({b[0]})", b[1], "library") for b in bars if b[2] == "library"]
    if overview and len(bars_of) > 1:
        note = "each chapter's best variant, x cudaMemcpy device-to-device in the same run"
        write_if_changed(args.root / "docs" / "results_course.svg", bar_chart("The course: best variant per chapter", overview, note),
                         args.check, stale)
    return 1 if problems or stale else 0


if __name__ == "__main__":
    sys.exit(main())
