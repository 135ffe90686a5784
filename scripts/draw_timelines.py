#!/usr/bin/env python3
"""Draws the per-stage timeline a lab records with --timeline=FILE as an SVG picture.

    scripts/draw_timelines.py CSV SVG               draw one timeline
    scripts/draw_timelines.py --check [CSV ...]     each CSV's SVG (same name, .svg) must be its drawing
    scripts/draw_timelines.py --from-results OUTDIR copy OUTDIR/timeline_<chapter>.csv into
                                                    <chapter>/figures/ and draw the SVG beside it

The CSV (course/timeline.hpp) has '#' lines naming the program, variant, size, device and
toolkit, then `block,sm,role,stage,iteration,kind,t_ns` rows; kind is issue (the producer starts
the copy of a stage, or a message is sent), land (the consumer's wait on the stage's full
barrier returned), consume (its compute on the stage finished) or release (it handed the stage
back). The picture has one lane per block and role, time on x in microseconds from the first
event, and per stage one colour:

  consumer lane   a bar from land to release (the stage is held), a tick where compute ended,
                  a dashed line from a release to the next land (waiting for the next stage);
  producer lane   a marker at each issue and a thin bar from the issue to the land of the same
                  iteration (the copy in flight); with '# peer: ring N' an issue of block b lands
                  in the right neighbour of its ring of N blocks (chapter 10), else in block b.

The same CSV always gives the same bytes. --check (CTest: timeline.<chapter>) exits 1 naming each
SVG that is missing or differs from its drawing. Refused, with one line and exit 1: a CSV that is
not UTF-8, a negative number, time stamps of one lane and iteration out of order (land, consume,
release), events spanning more than 10 s, more than 10,000 events, a drawing larger than 4 MiB; with exit 2, an SVG path
that is the CSV itself (or the same file) or does not end in .svg. The SVG is written whole or not
at all. --root is the repository (default: the one
holding this script). Python 3, standard library only.
"""
import argparse
import html
import os
import shutil
import sys
from pathlib import Path

COLUMNS = ["block", "sm", "role", "stage", "iteration", "kind", "t_ns"]
KINDS = ("issue", "land", "consume", "release")
# One colour per stage (a palette that stays distinct for colour-blind readers).
STAGE_COLOURS = ["#4477aa", "#ee6677", "#228833", "#ccbb44", "#66ccee", "#aa3377", "#bbbbbb", "#332288"]
# Roles that issue copies come first in a block's lanes.
ROLE_ORDER = {"producer": 0, "sender": 0, "consumer": 1, "receiver": 1}

WIDTH = 1100
LEFT = 190  # lane labels
RIGHT = 24
LANE_H = 24
LANE_GAP = 6


# What a timeline may span and how large its drawing may be: a recording of a few blocks' first
# stages spans micro- to milliseconds; a larger span is a corrupt time stamp, not a measurement.
MAX_SPAN_NS = 10 * 1000 ** 3      # 10 s
MAX_SVG_BYTES = 4 * 1024 * 1024   # 4 MiB
MAX_EVENTS = 10_000               # a lab records a few blocks' first 16 stages: a few hundred
# Within one lane and iteration the events come in this order (a later kind never earlier).
LANE_ORDER = {"land": 0, "consume": 1, "release": 2}


class TimelineError(Exception):
    """A CSV that is not a timeline; the message names the file and the line."""


def parse(path):
    """Returns (meta, events): meta maps '#' keys to lists of values, events are dicts."""
    meta, events, header_seen = {}, [], False
    try:
        text = Path(path).read_bytes().decode("utf-8")
    except UnicodeDecodeError as error:
        raise TimelineError(f"{path}: not UTF-8 text (byte {error.start}): not a timeline CSV")
    except IsADirectoryError:
        raise TimelineError(f"{path}: is a folder, not a timeline CSV")
    if True:
        for number, line in enumerate(text.splitlines(), 1):
            if line.startswith("#"):
                key, _, value = line[1:].strip().partition(":")
                meta.setdefault(key.strip(), []).append(value.strip())
                continue
            if not line.strip():
                continue
            if not header_seen:
                if line.split(",") != COLUMNS:
                    raise TimelineError(f"{path}:{number}: expected the column line '{','.join(COLUMNS)}', got '{line[:80]}'")
                header_seen = True
                continue
            cells = line.split(",")
            if len(cells) != len(COLUMNS):
                raise TimelineError(f"{path}:{number}: {len(cells)} cells, a row has {len(COLUMNS)}")
            row = dict(zip(COLUMNS, cells))
            try:
                for key in ("block", "sm", "stage", "iteration", "t_ns"):
                    row[key] = int(row[key])
            except ValueError:
                raise TimelineError(f"{path}:{number}: block, sm, stage, iteration and t_ns are whole numbers: '{line[:80]}'")
            if row["kind"] not in KINDS:
                raise TimelineError(f"{path}:{number}: kind is one of {', '.join(KINDS)} (got '{row['kind'][:20]}')")
            if min(row[key] for key in ("block", "sm", "stage", "iteration", "t_ns")) < 0:
                raise TimelineError(f"{path}:{number}: a negative number: '{line[:80]}'")
            row["line"] = number
            events.append(row)
    if not header_seen:
        raise TimelineError(f"{path}: no column line '{','.join(COLUMNS)}': not a timeline CSV")
    if not events:
        raise TimelineError(f"{path}: no events")
    if len(events) > MAX_EVENTS:
        raise TimelineError(f"{path}: {len(events)} events, more than the {MAX_EVENTS:,} a drawing may show "
                            "(record fewer blocks or stages)")
    # One lane's events of one iteration come in order: land, then consume, then release.
    seen = {}
    for e in events:
        if e["kind"] in LANE_ORDER:
            seen.setdefault((e["block"], e["role"], e["iteration"]), []).append(e)
    for (block, role, iteration), group in seen.items():
        group = sorted(group, key=lambda e: LANE_ORDER[e["kind"]])
        for earlier, later in zip(group, group[1:]):
            if later["t_ns"] < earlier["t_ns"]:
                raise TimelineError(f"{path}:{later['line']}: block {block} {role} iteration {iteration}: "
                                    f"{later['kind']} at {later['t_ns']} ns is before its {earlier['kind']} at "
                                    f"{earlier['t_ns']} ns (line {earlier['line']}): time stamps out of order")
    t0, t1 = min(e["t_ns"] for e in events), max(e["t_ns"] for e in events)
    if t1 - t0 > MAX_SPAN_NS:
        raise TimelineError(f"{path}: the events span {(t1 - t0) / 1e9:.3g} s, more than the "
                            f"{MAX_SPAN_NS / 1e9:g} s a timeline may span (a corrupt time stamp?)")
    return meta, events


def peer_of(meta):
    """The block an issue of block b lands in: b itself, or its right neighbour in a ring of N."""
    peer = (meta.get("peer") or [""])[0].split()
    if not peer:
        return lambda block: block
    if len(peer) == 2 and peer[0] == "ring" and peer[1].isdigit() and int(peer[1]) > 0:
        n = int(peer[1])
        return lambda block: block - block % n + (block % n + 1) % n
    raise TimelineError(f"'# peer: {' '.join(peer)}' is not understood: write '# peer: ring N'")


def esc(text):
    return html.escape(text, quote=False).replace('"', "&quot;")  # apostrophes stay as they are


def nice_step(span_us):
    """A tick step of 1, 2 or 5 times a power of ten giving at most 12 ticks, and its decimals."""
    for exponent in range(-3, 9):
        for mantissa in (1, 2, 5):
            step = mantissa * 10.0 ** exponent
            if span_us / step <= 12:
                return step, max(0, -exponent)
    return 10.0 ** 9, 0


def fmt(value):
    """Coordinates with one decimal, no '-0.0'."""
    text = f"{value:.1f}"
    return "0.0" if text == "-0.0" else text


def draw(meta, events):
    """The SVG text of one timeline."""
    lands_in = peer_of(meta)
    t0 = min(e["t_ns"] for e in events)
    t1 = max(e["t_ns"] for e in events)
    span_us = max((t1 - t0) / 1000.0, 0.001)
    plot_w = WIDTH - LEFT - RIGHT

    def x(t_ns):
        return LEFT + (t_ns - t0) / 1000.0 / span_us * plot_w

    by_key = {}  # (block, role, iteration, kind) -> event
    for e in events:
        by_key[(e["block"], e["role"], e["iteration"], e["kind"])] = e
    land_of = {}  # (block, iteration) -> land event, whatever the role that recorded it
    for e in events:
        if e["kind"] == "land":
            land_of[(e["block"], e["iteration"])] = e
    lanes = sorted({(e["block"], e["role"]) for e in events},
                   key=lambda lane: (lane[0], ROLE_ORDER.get(lane[1], 2), lane[1]))
    stages = sorted({e["stage"] for e in events})

    title = (meta.get("timeline") or ["timeline"])[0]
    device = (meta.get("device") or ["device not named"])[0]
    notes = meta.get("note", [])
    top = 52 + 15 * len(notes)
    # A lane that issues copies has one row per stage, so that copies in flight at once stack up.
    issuing = {(e["block"], e["role"]) for e in events if e["kind"] == "issue"}
    row_h = 6
    flight_rows = max(stages) + 1

    def lane_height(lane):
        return max(LANE_H, 6 + row_h * flight_rows) if lane in issuing else LANE_H

    lanes_h = sum(lane_height(lane) + LANE_GAP for lane in lanes)
    axis_y = top + lanes_h + 4
    legend_y = axis_y + 44
    height = legend_y + 64

    # A viewBox and a relative width: the picture scales to its column (the site lets a phone
    # scroll it sideways in its box rather than shrink it); an opaque background for dark pages.
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="100%" '
           f'viewBox="0 0 {WIDTH} {height}" font-family="sans-serif" font-size="12">',
           f"<title>{esc(title)}</title>",
           f'<rect x="0" y="0" width="{WIDTH}" height="{height}" fill="#ffffff"/>',
           f'<text x="8" y="20" font-size="14" font-weight="bold">{esc(title)}</text>',
           f'<text x="8" y="37" font-size="11" fill="#555">{esc(device)}</text>']
    for i, note in enumerate(notes):
        out.append(f'<text x="8" y="{52 + 15 * i}" font-size="11" fill="#555">{esc(note)}</text>')

    # Grid lines and the time axis.
    step, decimals = nice_step(span_us)
    for i in range(int(span_us / step + 1e-9) + 1):
        tick = i * step
        tx = LEFT + tick / span_us * plot_w
        out.append(f'<line class="grid" x1="{fmt(tx)}" y1="{top - 4}" x2="{fmt(tx)}" y2="{axis_y}" stroke="#e4e4e4"/>')
        out.append(f'<text x="{fmt(tx)}" y="{axis_y + 14}" font-size="10" text-anchor="middle" fill="#333">'
                   f"{tick:.{decimals}f}</text>")
    out.append(f'<line x1="{LEFT}" y1="{axis_y}" x2="{WIDTH - RIGHT}" y2="{axis_y}" stroke="#333"/>')
    out.append(f'<text x="{LEFT + plot_w / 2:.1f}" y="{axis_y + 30}" text-anchor="middle" fill="#333">'
               f"time since the first event (\u00b5s)</text>")

    y = top - LANE_H - LANE_GAP
    lane_h = LANE_H
    for block, role in lanes:
        y += lane_h + LANE_GAP
        lane_h = lane_height((block, role))
        mid = y + lane_h / 2
        mine = sorted((e for e in events if e["block"] == block and e["role"] == role),
                      key=lambda e: (e["iteration"], KINDS.index(e["kind"]), e["t_ns"]))
        sms = sorted({e["sm"] for e in mine})
        sm_text = "SM " + ", ".join(str(s) for s in sms)
        out.append(f'<g class="lane" data-block="{block}" data-role="{esc(role)}">')
        out.append(f'<rect x="{LEFT}" y="{y}" width="{plot_w}" height="{lane_h}" fill="#f7f7f7"/>')
        out.append(f'<text x="{LEFT - 8}" y="{fmt(mid + 4)}" text-anchor="end">block {block} {esc(role)} '
                   f'<tspan fill="#777" font-size="10">({esc(sm_text)})</tspan></text>')
        iterations = sorted({e["iteration"] for e in mine})
        previous_release = None
        for it in iterations:
            land = by_key.get((block, role, it, "land"))
            consume = by_key.get((block, role, it, "consume"))
            release = by_key.get((block, role, it, "release"))
            issue = by_key.get((block, role, it, "issue"))
            if issue is not None:
                colour = STAGE_COLOURS[issue["stage"] % len(STAGE_COLOURS)]
                row_y = y + 3 + row_h * issue["stage"]
                ix = x(issue["t_ns"])
                target = land_of.get((lands_in(block), it))
                if target is not None and target["t_ns"] >= issue["t_ns"]:
                    out.append(f'<rect class="flight" x="{fmt(ix)}" y="{fmt(row_y)}" '
                               f'width="{fmt(max(x(target["t_ns"]) - ix, 0.5))}" height="{row_h - 1}" '
                               f'fill="{colour}" fill-opacity="0.6"/>')
                out.append(f'<rect class="issue" x="{fmt(ix - 1)}" y="{fmt(row_y - 1)}" width="2" height="{row_h + 1}" '
                           f'fill="#111"/>')
            if land is not None:
                wait_from = previous_release["t_ns"] if previous_release is not None else None
                if wait_from is None:  # the first stage: from the block's first recorded event
                    wait_from = min(e["t_ns"] for e in events if e["block"] == block)
                if land["t_ns"] > wait_from:
                    out.append(f'<line class="wait" x1="{fmt(x(wait_from))}" y1="{fmt(mid)}" x2="{fmt(x(land["t_ns"]))}" '
                               f'y2="{fmt(mid)}" stroke="#444" stroke-width="1.2" stroke-dasharray="3,2"/>')
            if land is not None and release is not None:
                colour = STAGE_COLOURS[land["stage"] % len(STAGE_COLOURS)]
                x0, x1 = x(land["t_ns"]), x(release["t_ns"])
                out.append(f'<rect class="hold" x="{fmt(x0)}" y="{y + 3}" width="{fmt(max(x1 - x0, 0.5))}" '
                           f'height="{LANE_H - 6}" fill="{colour}" stroke="#222" stroke-width="0.4"/>')
                if consume is not None:
                    cx = x(consume["t_ns"])
                    out.append(f'<line class="consume" x1="{fmt(cx)}" y1="{y + 3}" x2="{fmt(cx)}" y2="{y + LANE_H - 3}" '
                               f'stroke="#111" stroke-width="1.2"/>')
                if x1 - x0 >= 14:
                    out.append(f'<text x="{fmt((x0 + x1) / 2)}" y="{fmt(mid + 3.5)}" font-size="9" '
                               f'text-anchor="middle" fill="#fff">{it}</text>')
            if release is not None:
                previous_release = release
        out.append("</g>")

    # Legend: the stage colours, then one line per mark.
    lx = 8
    for s in stages:
        colour = STAGE_COLOURS[s % len(STAGE_COLOURS)]
        out.append(f'<rect x="{lx}" y="{legend_y - 10}" width="12" height="12" fill="{colour}"/>')
        out.append(f'<text x="{lx + 16}" y="{legend_y}">stage {s}</text>')
        lx += 72
    line = legend_y + 18
    out.append(f'<rect x="8" y="{line - 8}" width="2" height="7" fill="#111"/>')
    out.append(f'<rect x="10" y="{line - 7}" width="24" height="5" fill="#888" fill-opacity="0.6"/>')
    out.append(f'<text x="40" y="{line}">issue, then the copy in flight until the consumer sees it land (one row per stage)</text>')
    line += 18
    out.append(f'<rect x="8" y="{line - 10}" width="26" height="12" fill="#888" stroke="#222" stroke-width="0.4"/>')
    out.append(f'<line x1="24" y1="{line - 10}" x2="24" y2="{line + 2}" stroke="#111" stroke-width="1.2"/>')
    out.append(f'<text x="40" y="{line}">stage held by the consumer, from land to release; tick: its compute '
               f"ended; number: iteration</text>")
    line += 18
    out.append(f'<line x1="8" y1="{line - 4}" x2="34" y2="{line - 4}" stroke="#444" stroke-width="1.2" '
               f'stroke-dasharray="3,2"/>')
    out.append(f'<text x="40" y="{line}">consumer waiting for its next stage, from a release to the next land</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def same_file(a, b):
    """Whether two paths name one file (the same path, or links to one file)."""
    a, b = Path(a), Path(b)
    if a.resolve() == b.resolve():
        return True
    return a.exists() and b.exists() and os.path.samefile(a, b)


def draw_file(csv_path, svg_path):
    """Draws a CSV into an SVG file, written whole (a temporary file renamed over it) or not at all."""
    meta, events = parse(csv_path)
    svg = draw(meta, events)
    if len(svg.encode("utf-8")) > MAX_SVG_BYTES:
        raise TimelineError(f"{csv_path}: the drawing would be {len(svg) / 2**20:.1f} MiB, more than "
                            f"{MAX_SVG_BYTES / 2**20:g} MiB: record fewer blocks or stages")
    svg_path = Path(svg_path)
    temporary = svg_path.with_name(f".{svg_path.name}.{os.getpid()}.tmp")
    try:
        temporary.write_text(svg, encoding="utf-8")
        os.replace(temporary, svg_path)
    finally:
        if temporary.exists():
            temporary.unlink()


def committed_csvs(root):
    return sorted(root.glob("[0-9][0-9]_*/figures/timeline_*.csv"))


def check(paths):
    stale = []
    for csv_path in paths:
        svg_path = csv_path.with_suffix(".svg")
        meta, events = parse(csv_path)
        drawn = draw(meta, events)
        if not svg_path.exists():
            stale.append(f"{svg_path}: missing (draw it: scripts/draw_timelines.py {csv_path} {svg_path})")
        elif svg_path.read_text(encoding="utf-8") != drawn:
            stale.append(f"{svg_path}: differs from the drawing of {csv_path.name} "
                         f"(redraw: scripts/draw_timelines.py {csv_path} {svg_path})")
    for line in stale:
        print(line)
    print(f"draw_timelines: {len(paths)} timeline(s) checked, {len(stale)} stale")
    return 1 if stale else 0


def from_results(outdir, root):
    written = 0
    for csv_path in sorted(outdir.glob("timeline_*.csv")):
        chapter = csv_path.stem[len("timeline_"):]
        folder = root / chapter
        if not (folder / "CMakeLists.txt").exists():
            print(f"{csv_path}: '{chapter}' is not a chapter folder of {root}: left out")
            continue
        parse(csv_path)  # a broken file is reported before anything is copied
        if same_file(csv_path, folder / "figures" / csv_path.name):
            print(f"{csv_path}: is already the chapter's copy: redraw it with --check's command instead")
            continue
        (folder / "figures").mkdir(exist_ok=True)
        target = folder / "figures" / csv_path.name
        shutil.copyfile(csv_path, target)
        draw_file(target, target.with_suffix(".svg"))
        print(f"wrote {target} and {target.with_suffix('.svg').name}")
        written += 1
    if written == 0:
        print(f"draw_timelines: no timeline_<chapter>.csv in {outdir}")
        return 1
    return 0


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="*", help="CSV SVG, or with --check the CSVs (default: every committed one)")
    parser.add_argument("--check", action="store_true")
    parser.add_argument("--from-results", metavar="OUTDIR", type=Path)
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parent.parent)
    args = parser.parse_args(argv)
    try:
        if args.from_results is not None:
            if args.check or args.files:
                parser.error("--from-results takes no other files and no --check")
            return from_results(args.from_results, args.root)
        if args.check:
            return check([Path(p) for p in args.files] or committed_csvs(args.root))
        if len(args.files) != 2:
            parser.error("give a CSV and the SVG to write (or --check, or --from-results OUTDIR)")
        if same_file(args.files[0], args.files[1]):
            print(f"draw_timelines: the SVG to write, {args.files[1]}, is the CSV it would be drawn from",
                  file=sys.stderr)
            return 2
        if not args.files[1].endswith(".svg"):
            print(f"draw_timelines: the SVG to write, {args.files[1]}, does not end in .svg", file=sys.stderr)
            return 2
        draw_file(args.files[0], args.files[1])
        return 0
    except (TimelineError, OSError) as error:
        print(f"draw_timelines: {error}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
