#!/usr/bin/env python3
"""Tests scripts/draw_timelines.py on made-up timelines in a temporary directory (CTest:
scripts.draw_timelines). The CSVs here are synthetic, written for the test; they are never
measurements. Exits 1 naming each failed check."""
import subprocess
import sys
import tempfile
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent / "draw_timelines.py"
HEADER = "block,sm,role,stage,iteration,kind,t_ns\n"


def synthetic_csv(peer=""):
    """Two blocks, a producer and a consumer each, three iterations of a 2-stage ring. Block 1's
    consumer finds iteration 2 landed when it releases iteration 1 (no wait drawn there)."""
    lines = ["# timeline: synthetic_lab, variant ring_2, size 65536 bytes (64.00 KiB)\n",
             "# device: no device (synthetic test data)\n",
             "# note: made up for scripts/draw_timelines_test.py\n"]
    if peer:
        lines.append(f"# peer: {peer}\n")
    lines.append(HEADER)
    rows = []
    for block in (0, 1):
        base = 1_000_000 + 37 * block
        for it in range(3):
            issue = base + 900 * it
            land = base + 1500 + 1000 * it
            release = land + 700
            if block == 1 and it == 2:
                land = base + 1500 + 1000 * 1 + 700  # equal to the previous release
                release = land + 700
            rows.append((block, "producer", it, "issue", issue))
            rows.append((block, "consumer", it, "land", land))
            rows.append((block, "consumer", it, "consume", land + 400))
            rows.append((block, "consumer", it, "release", release))
    for block, role, it, kind, t in sorted(rows, key=lambda r: (r[4], r[0], r[1], r[2])):
        lines.append(f"{block},{10 + block},{role},{it % 2},{it},{kind},{t}\n")
    return "".join(lines)


def run(*args):
    return subprocess.run([sys.executable, str(SCRIPT), *map(str, args)], capture_output=True, text=True)


def main():
    failures = []

    def expect(condition, what):
        if not condition:
            failures.append(what)

    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        csv_path, svg_path, again = tmp / "t.csv", tmp / "t.svg", tmp / "again.svg"
        csv_path.write_text(synthetic_csv())
        r = run(csv_path, svg_path)
        if r.returncode != 0 or not svg_path.exists():
            print(f"FAILED: drawing a synthetic timeline: {r.stderr.strip()}")
            return 1
        run(csv_path, again)
        svg = svg_path.read_text()
        expect(svg == again.read_text(), "the same CSV gave two different SVGs")
        expect(svg.startswith("<svg ") and svg.endswith("</svg>\n"), "not one SVG element")
        head = svg.splitlines()[0]
        expect('width="100%"' in head and " height=" not in head and 'viewBox="0 0 1100 ' in head,
               f"the picture scales to its column (a viewBox, width 100%, no fixed height): {head}")
        expect(svg.splitlines()[2].startswith('<rect x="0" y="0" width="1100" ') and 'fill="#ffffff"' in svg.splitlines()[2],
               "an opaque background first, so that the labels show on a dark page")
        counts = {name: svg.count(f'class="{name}"') for name in ("lane", "hold", "consume", "issue", "flight", "wait")}
        expected = {"lane": 4, "hold": 6, "consume": 6, "issue": 6, "flight": 6, "wait": 5}
        expect(counts == expected, f"elements {counts}, expected {expected}")
        expect("synthetic_lab, variant ring_2" in svg, "the title names program and variant")
        expect("no device (synthetic test data)" in svg, "the device line is shown")
        expect(svg.index('data-block="0" data-role="producer"') < svg.index('data-block="0" data-role="consumer"')
               < svg.index('data-block="1" data-role="producer"'), "lanes: by block, the producer first")

        # In a ring of 2, block 0's issues land in block 1 and block 1's in block 0.
        ring = tmp / "ring.csv"
        ring.write_text(synthetic_csv(peer="ring 2"))
        r = run(ring, tmp / "ring.svg")
        expect(r.returncode == 0, f"drawing a ring failed: {r.stderr}")
        expect((tmp / "ring.svg").read_text().count('class="flight"') == 6, "ring: every issue finds its land")
        far = tmp / "far.csv"
        far.write_text(synthetic_csv(peer="ring 4"))  # block 1 sends to block 2, which was not recorded
        run(far, tmp / "far.svg")
        expect((tmp / "far.svg").read_text().count('class="flight"') == 3, "ring of 4: only block 0's sends land here")
        bad_peer = tmp / "bad_peer.csv"
        bad_peer.write_text(synthetic_csv(peer="left"))
        r = run(bad_peer, tmp / "bad_peer.svg")
        expect(r.returncode == 1 and "peer" in r.stderr, f"a peer line it cannot read is refused: {r.stderr}")

        # --check: equal passes, a changed byte or a missing SVG fails, naming the file.
        r = run("--check", csv_path)
        expect(r.returncode == 0, f"--check of a fresh drawing: {r.stdout}")
        svg_path.write_text(svg.replace("stage 0", "stage 9", 1))
        r = run("--check", csv_path)
        expect(r.returncode == 1 and "t.svg: differs" in r.stdout, f"--check of a changed SVG: {r.stdout}")
        svg_path.unlink()
        r = run("--check", csv_path)
        expect(r.returncode == 1 and "t.svg: missing" in r.stdout, f"--check without an SVG: {r.stdout}")

        # Broken input: one line naming the file and the line.
        broken = tmp / "broken.csv"
        broken.write_text("# timeline: x\nblock,sm,role\n")
        r = run(broken, tmp / "broken.svg")
        expect(r.returncode == 1 and "broken.csv:2: expected the column line" in r.stderr, f"bad header: {r.stderr}")
        broken.write_text(HEADER + "0,1,consumer,0,0,landed,5\n")
        r = run(broken, tmp / "broken.svg")
        expect(r.returncode == 1 and "broken.csv:2: kind is one of" in r.stderr, f"bad kind: {r.stderr}")
        broken.write_text(HEADER)
        r = run(broken, tmp / "broken.svg")
        expect(r.returncode == 1 and "no events" in r.stderr, f"no rows: {r.stderr}")
        expect(not (tmp / "broken.svg").exists(), "nothing is written for a broken CSV")

        # Hostile input: one line, exit 1 (2 for a bad command line), and no file written or changed.
        def refused(args, code, text, what):
            before = {str(f): f.read_bytes() for f in sorted(tmp.rglob("*")) if f.is_file()}
            r = run(*args)
            after = {str(f): f.read_bytes() for f in sorted(tmp.rglob("*")) if f.is_file()}
            lines = r.stderr.splitlines()
            expect(r.returncode == code and len(lines) == 1 and text in r.stderr and "Traceback" not in r.stderr,
                   f"{what}: exit {r.returncode}, stderr {r.stderr!r}")
            expect(before == after, f"{what}: a file was written or changed")

        recording = tmp / "recording.csv"
        recording.write_text(synthetic_csv())
        refused([recording, recording], 2, "is the CSV it would be drawn from", "the SVG path is the CSV")
        refused([recording, tmp / "." / "recording.csv"], 2, "is the CSV it would be drawn from", "the same file by another path")
        link = tmp / "link.svg"
        link.symlink_to(recording)
        refused([recording, link], 2, "is the CSV it would be drawn from", "a link to the CSV")
        refused([recording, tmp / "out.png"], 2, "does not end in .svg", "an output that is not an SVG")
        negative = tmp / "negative.csv"
        negative.write_text(synthetic_csv().replace(",land,1001500\n", ",land,-5\n", 1))
        refused([negative, tmp / "negative.svg"], 1, "negative.csv:9: a negative number", "a negative time stamp")
        backwards = tmp / "backwards.csv"
        backwards.write_text(synthetic_csv().replace(",release,1002200\n", ",release,1001000\n", 1))
        refused([backwards, tmp / "backwards.svg"], 1, "release at 1001000 ns is before its consume",
                "a release before its consume")
        far_apart = tmp / "far_apart.csv"
        far_apart.write_text(synthetic_csv() + "1,11,producer,1,3,issue,99000000000\n")
        refused([far_apart, tmp / "far_apart.svg"], 1, "more than the 10 s a timeline may span", "a span of 99 s")
        huge = tmp / "huge.csv"
        huge.write_text(HEADER + "".join(f"{b},{b},consumer,0,{i},land,{1000 + i}\n" for b in range(5) for i in range(2001)))
        refused([huge, tmp / "huge.svg"], 1, "10005 events, more than the 10,000", "a drawing of too many events")
        binary = tmp / "binary.csv"
        binary.write_bytes(synthetic_csv().encode().replace(b"synthetic_lab", b"synth\xffetic"))
        refused([binary, tmp / "binary.svg"], 1, "binary.csv: not UTF-8 text (byte", "a non-UTF-8 byte")
        refused([tmp, tmp / "folder.svg"], 1, "is a folder", "a folder for the CSV")

        # --from-results: a results directory's timeline goes into its chapter's figures folder.
        root, results = tmp / "repo", tmp / "results"
        (root / "99_fake").mkdir(parents=True)
        (root / "99_fake" / "CMakeLists.txt").write_text("")
        results.mkdir()
        (results / "timeline_99_fake.csv").write_text(synthetic_csv())
        (results / "timeline_98_gone.csv").write_text(synthetic_csv())
        r = run("--from-results", results, "--root", root)
        figure = root / "99_fake" / "figures" / "timeline_99_fake.svg"
        expect(r.returncode == 0 and figure.exists(), f"--from-results: {r.stdout} {r.stderr}")
        expect("98_gone" in r.stdout and "left out" in r.stdout, "a CSV of no chapter is named and left out")
        r = run("--check", "--root", root)
        expect(r.returncode == 0 and "1 timeline(s) checked, 0 stale" in r.stdout, f"--check of the copy: {r.stdout}")
        empty = tmp / "empty"
        empty.mkdir()
        r = run("--from-results", empty, "--root", root)
        expect(r.returncode == 1, "--from-results with no timeline fails")

    for failure in failures:
        print(f"FAILED: {failure}")
    print(f"draw_timelines_test: {'all checks passed' if not failures else f'{len(failures)} check(s) failed'}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
