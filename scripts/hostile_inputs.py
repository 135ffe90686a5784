#!/usr/bin/env python3
"""Runs the course's programs on hostile input and writes what they answer into a page.

    scripts/hostile_inputs.py BUILD_DIR [--write PAGE] [--check PAGE]

Every row below is run for real: a chapter program with a broken command line, a size that breaks
its chapter's rule, output that cannot be written, no usable GPU; the tensor-map rule check
(build/common/tensor_map_rules) with maps the driver or the course refuses; the configure-time
checks of the toolkit and of COURSE_CUDA_ARCHITECTURES; the codegen tests without cuobjdump.
Each row states the exit code it must give and a pattern its message must match (the rule
named); a row that answers otherwise fails the run. --write writes the table (input, exit code,
message) as a Markdown page; --check also fails when the page differs from what the rows
answered (messages that depend on the machine, such as why no GPU is usable, are left out of
that comparison). CTest runs --check against docs/hostile_inputs.md (test hostile_inputs).
"""
import argparse
import csv
import io
import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NO_GPU = {"CUDA_VISIBLE_DEVICES": ""}  # hides every GPU: the skip path on any machine


class Row:
    def __init__(self, topic, argv, code, pattern, env=None, stdout_to=None, parse=None, machine=False, note=""):
        self.topic, self.argv, self.code, self.pattern = topic, argv, code, pattern
        self.env, self.stdout_to, self.parse, self.machine, self.note = env or {}, stdout_to, parse, machine, note


def program_rows(programs):
    """Command-line rows spread over the chapters' lessons and labs (from the build's manifest)."""
    lessons = [p for p in programs if p[1] == "lesson"]
    labs = [p for p in programs if p[1] == "lab"]
    pick = lambda i, pool: pool[i % len(pool)][4]  # noqa: E731
    long_value = "9" * 100_000
    rows = []
    cli = [
        (["--size=0"], 2, r"--size"),
        (["--size=17T"], 2, r"TiB|at most"),
        (["--size=17179869183G"], 2, r"TiB|at most|too large"),
        (["--size=abc"], 2, r"--size"),
        (["--size=-5"], 2, r"--size"),
        (["--size=1.5M"], 2, r"--size"),
        (["--size="], 2, r"--size"),
        (["--variant=nope"], 2, r"variant"),
        (["--variant="], 2, r"variant"),
        (["--iters=5"], 2, r"--bench"),
        (["--bench", "--iters=0"], 2, r"--iters"),
        (["--bench", "--iters=x"], 2, r"--iters"),
        (["--format=xml"], 2, r"--format"),
        (["--bench", "--bench"], 2, r"twice|more than once|repeated"),
        (["--size=1M", "--size=2M"], 2, r"twice|more than once|repeated"),
        (["--frobnicate"], 2, r"unknown|not an option"),
        (["extra"], 2, r"unknown|not an option|argument"),
        (["--size=" + long_value], 2, r"--size"),
        (["--bench=1"], 2, r"takes no value"),
        (["--help=x"], 2, r"takes no value"),
        (["--variant=parity\u200b"], 2, r"variant.*\\x"),
        (["--variant=\udcff"], 2, r"variant.*\\x"),
        (["--help"], 0, r"--size"),
    ]
    for i, (args, code, pattern) in enumerate(cli):
        path = pick(i, lessons)
        note = "the 100,000-character value is cut when echoed" if len(args[0]) > 1000 else ""
        rows.append(Row("command line", [path, *args], code, pattern, note=note))
    for i, lab in enumerate(labs[:3]):
        rows.append(Row("command line", [lab[4], "--variant=nope"], 2, r"variant"))
    # A recording that cannot be written is refused before any GPU work (the labs that record one).
    recorders = [lab for lab in labs if lab[0] in ("04_pipeline", "05_warp_specialized", "06_tma_1d", "10_stas_cluster")]
    for target, note in (("/nonexistent/dir/t.csv", "the folder does not exist"), ("/dev/full", "a device, not a file")):
        if recorders:
            rows.append(Row("output", [recorders[0][4], f"--timeline={target}"], 2, r"--timeline must name",
                            note=note))
    rows.append(Row("output", [pick(1, lessons), "--help"], 1, r"write|stdout|No space", stdout_to="/dev/full",
                    note="stdout is /dev/full"))
    rows.append(Row("output", [pick(2, lessons), "--size=abc", "--format=json"], 2, r"--size", parse="json",
                    note="stdout stays parseable JSON with the status and reason"))
    rows.append(Row("output", [pick(3, lessons), "--variant=nope", "--format=csv"], 2, r"variant", parse="csv",
                    note="stdout stays CSV: the header, then the status and reason as comment lines"))
    # One size that breaks each chapter's rule (1000 bytes: no whole batch, tile, row or message),
    # on the chapter's main lesson (the manifest lists it first).
    seen = set()
    for lesson in lessons:
        if lesson[0] not in seen:
            seen.add(lesson[0])
            rows.append(Row("size rule", [lesson[4], "--size=1000"], 2, r"--size|bytes|multiple"))
    for i, path in enumerate([pick(0, lessons), pick(5, lessons), pick(11, lessons)]):
        rows.append(Row("no usable GPU", [path], 77, r"SKIPPED|skipped", env=NO_GPU, machine=True))
    rows.append(Row("no usable GPU", [pick(6, lessons), "--format=csv"], 77, r"skipped", env=NO_GPU, parse="csv",
                    machine=True, note="CSV on stdout: the header, then status skipped and the reason as comment lines"))
    rows.append(Row("no usable GPU", [pick(8, lessons), "--format=json"], 77, r"skipped", env=NO_GPU, parse="json",
                    machine=True, note="JSON on stdout with status skipped and the reason"))
    return rows


def tensor_map_rows():
    tool = "common/tensor_map_rules"
    cases = [
        ("--dims=1024,512 --box=64,32", 0, r"legal: .* 8192 bytes"),
        ("--dims=1024,512 --box=32,32 --swizzle=128", 0, r"legal"),
        ("--dims=1024,512 --box=64,32 --swizzle=128", 2, r"exceeds the 128-byte swizzle span"),
        ("--dims=1024 --box=3 --type=u8", 2, r"not a multiple of 16"),
        ("--dims=1024,512 --box=64,32 --address-offset=8", 2, r"not 16-byte aligned"),
        ("--dims=1000,512 --box=64,32 --strides=4008", 2, r"not a multiple of 16"),
        ("--dims=1024,512 --box=64,32 --strides=2048", 2, r"less than the 4096 bytes"),
        ("--dims=1024,512 --box=257,32", 2, r"outside 1..256"),
        ("--dims=1,1,1,1,1,1 --box=1,1,1,1,1,1", 2, r"at most 5 values"),
        ("--dims=1024,512 --box=64,32 --element-strides=1,9", 2, r"outside 1..8"),
        ("--dims=1024,512 --box=64,32 --type=u32 --oob=nan", 2, r"floating-point"),
        ("--dims=64,64,64 --box=8,8,8 --interleave=32 --swizzle=64", 2, r"32-byte interleave needs the 32-byte swizzle"),
        ("--dims=1024,512 --box=64,32 --interleave=16", 2, r"rank 3 or more"),
        ("--dims=4096,4096 --box=256,256", 2, r"at most 233472"),
        ("--dims=1024,512 --box=64,32 --cc=80", 2, r"compute capability 9.0"),
        ("--dims=1024,512 --box=64,32 --swizzle=96", 2, r"not one of"),
        ("--dims=1024,512 --box=64", 2, r"one per dimension"),
        ("--dims=1024,512 --box=64,32 --box=32,32", 2, r"given twice"),
    ]
    return [Row("tensor map", [tool, *shlex.split(args)], code, pattern) for args, code, pattern in cases]


def configure_rows():
    cmake_dir = ROOT / "cmake"
    arch = str(cmake_dir / "CourseArchitectures.cmake")
    cases = [
        (["-DCOURSE_CUDA_ARCHITECTURES=8.9", "-P", arch], r"write 8.9 as 89"),
        (["-DCOURSE_CUDA_ARCHITECTURES=89-rea", "-P", arch], r"'89-rea' is not valid"),
        (["-DCOURSE_CUDA_ARCHITECTURES=89foo", "-P", arch], r"'89foo' is not valid"),
        (["-DCOURSE_CUDA_ARCHITECTURES=", "-P", arch], r"is empty"),
        (["-DCOURSE_CUDA_ARCHITECTURES=70-real", "-P", arch], r"below"),
        (["-DCOURSE_CUDA_ARCHITECTURES=10-real", "-P", arch], r"below"),
        (["-DVERSION=12.4", "-P", str(cmake_dir / "CourseToolchain.cmake")], r"needs nvcc 12.8 or newer"),
    ]
    return [Row("configure", ["cmake", *args], 1, pattern) for args, pattern in cases]


def tool_rows(programs):
    tests = [p for p in programs if p[1] == "test" and p[0] == "03_barrier"]
    if not tests:
        return []
    return [Row("missing tool", [tests[0][4], "--gtest_filter=HostCodegen.MachineCode*"], 0, r"cuobjdump is not installed",
                env={"COURSE_CUOBJDUMP": "/nonexistent/cuobjdump"}, note="COURSE_CUOBJDUMP names a missing cuobjdump")]


def shown_argv(row, build):
    parts = []
    for i, arg in enumerate(row.argv):
        if i == 0:
            arg = os.path.relpath(arg, build) if os.path.isabs(arg) and arg.startswith(str(build)) else arg
            arg = os.path.relpath(arg, ROOT) if os.path.isabs(arg) else ("build/" + arg if arg != "cmake" else arg)
        elif arg.startswith(str(ROOT) + "/"):
            arg = arg[len(str(ROOT)) + 1:]  # the checkout's files by their path in it
        if len(arg) > 60:
            arg = arg[:24] + f"...({len(arg)} characters)"
        # invisible and undecodable characters written as the bytes they are, as the programs echo them
        if any(not c.isprintable() or "\udc80" <= c <= "\udcff" or c == "\u200b" for c in arg):
            raw = os.fsencode(arg)
            arg = "$'" + "".join(chr(b) if 32 <= b < 127 and chr(b) not in "'\\" else f"\\x{b:02x}" for b in raw) + "'"
            parts.append(arg)
            continue
        parts.append(shlex.quote(arg))
    env = " ".join(f"{k}={shlex.quote(v) if v else str()}" for k, v in row.env.items())
    redirect = f" > {row.stdout_to}" if row.stdout_to else ""
    return (env + " " if env else "") + " ".join(parts) + redirect


def run_row(row, build):
    argv = list(row.argv)
    if not os.path.isabs(argv[0]) and argv[0] != "cmake":
        argv[0] = str(build / argv[0])
    env = dict(os.environ, **row.env)
    stdout = open(row.stdout_to, "w") if row.stdout_to else subprocess.PIPE
    try:
        result = subprocess.run(argv, stdout=stdout, stderr=subprocess.PIPE, env=env, timeout=120, cwd=build)
    finally:
        if row.stdout_to:
            stdout.close()
    out = (result.stdout or b"").decode(errors="replace") if not row.stdout_to else ""
    err = result.stderr.decode(errors="replace")
    return result.returncode, out, err


def judge(row, code, out, err):
    """The row's problems (empty when it answers as it must) and the message shown in the table."""
    problems = []
    text = err + out
    if code != row.code:
        problems.append(f"exit code {code}, expected {row.code}")
    if not re.search(row.pattern, text):
        problems.append(f"no message matching /{row.pattern}/")
    if row.parse == "json":
        try:
            record = json.loads(out)
            if "status" not in json.dumps(record):
                problems.append("JSON without a status")
        except ValueError as error:
            problems.append(f"stdout is not JSON ({error})")
    elif row.parse == "csv":
        # The header, then any rows; the outcome rides along as comment lines ("# status=...").
        rows = [r for r in csv.reader(io.StringIO(out)) if r and not r[0].startswith("#")]
        status = [line for line in out.splitlines() if line.startswith("# status=")]
        if not rows or rows[0][:2] != ["chapter", "variant"] or len(status) != 1:
            problems.append("stdout is not CSV (a header, then '# status=...' and '# reason=...' lines)")
    if len(text) > 4000:
        problems.append(f"{len(text)} characters of output: a value was echoed whole")
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    hit = next((line for line in lines if re.search(row.pattern, line)), lines[0] if lines else "")
    if len(hit) > 200:
        hit = hit[:200] + "..."
    return problems, hit


def markdown(results, build):
    out = [
        "# Hostile input",
        "",
        "What the course's programs and tools answer to input that is wrong on purpose. Every row is",
        "run by `scripts/hostile_inputs.py` (CTest test `hostile_inputs`), which fails when a row gives",
        "another exit code or no message naming the rule, and when this page differs from what the rows",
        "answered. Exit codes: 0 pass, 1 fail, 2 bad input, 77 skipped (the GPU lacks a feature).",
        "Rows marked (machine) were recorded on a machine without a usable GPU; the reason differs",
        "between machines, the exit code does not.",
    ]
    topic = None
    for i, (row, code, message) in enumerate(results, 1):
        if row.topic != topic:  # one table per topic
            topic = row.topic
            out += ["", f"## {topic[0].upper() + topic[1:]}", "", "| # | input | exit | message |", "| ---: | --- | ---: | --- |"]
        cell = message.replace("\\", "\\\\").replace("|", "\\|").replace("`", "'")  # a backslash shown, not a command
        note = f" ({row.note})" if row.note else ""
        machine = " (machine)" if row.machine else ""
        out.append(f"| {i}{machine} | `{shown_argv(row, build)}`{note} | {code} | {cell} |")
    out.append("")
    return "\n".join(out)


def comparable(text):
    """The page without the messages of machine-dependent rows."""
    return "\n".join(re.sub(r"\|[^|]*\|\s*$", "|", line) if "(machine) |" in line else line for line in text.splitlines())


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("build")
    parser.add_argument("--write", type=Path)
    parser.add_argument("--check", type=Path)
    args = parser.parse_args()
    build = Path(args.build).resolve()
    manifest = build / "course_programs.txt"
    if not manifest.exists():
        sys.exit(f"hostile_inputs: {manifest} is missing: configure the build first")
    programs = [line.split() for line in manifest.read_text().splitlines() if line.strip()]
    missing = [p[4] for p in programs if not Path(p[4]).exists()]
    if missing or not (build / "common" / "tensor_map_rules").exists():
        sys.exit("hostile_inputs: build every program first (cmake --build); missing: "
                 + ", ".join(missing[:5] or ["common/tensor_map_rules"]))
    rows = program_rows(programs) + tensor_map_rows() + configure_rows() + tool_rows(programs)
    results, failures = [], []
    for row in rows:
        code, out, err = run_row(row, build)
        problems, message = judge(row, code, out, err)
        results.append((row, code, message))
        if problems:
            failures.append(f"{shown_argv(row, build)}: " + "; ".join(problems))
    page = markdown(results, build)
    print(f"{len(rows)} hostile inputs run; {len(rows) - len(failures)} answered as they must")
    for failure in failures:
        print("  FAILED " + failure)
    if args.write:
        args.write.write_text(page)
    if args.check:
        old = args.check.read_text() if args.check.exists() else ""
        if comparable(old) != comparable(page):
            print(f"{args.check} is stale: run scripts/hostile_inputs.py {args.build} --write {args.check}")
            return 1
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
