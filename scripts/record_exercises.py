#!/usr/bin/env python3
"""Records what scripts/exercise.py prints for each GPU exercise on this machine's GPU.

    scripts/record_exercises.py [NAME ...] [--chapters=LIST] [--out DIR] [--configure-arg ARG ...]
                                [--jobs N] [--keep]

Run on a GPU machine from the course's tree. For each GPU exercise (its test a .cu file with a GPU
suite, Sm<cc>[a]_...), or for the NAMEs given, or for those of --chapters (comma-separated chapter
folders), it makes two copies of the tree in a temporary folder (the files git tracks or would
track): one as it is, one with each exercise's solution copied over its starter. In each copy it
configures build-exercises/ as the exercises preset does (with the --configure-arg arguments, such
as -DCOURSE_CUDA_ARCHITECTURES=90-real), builds the exercises, and runs scripts/exercise.py NAME
there, so that both runs print exactly what a student's run prints, paths included. Then it writes
NN_topic/exercises/recorded/NAME.txt: a header (the date, the GPU, its compute capability, the
driver, the toolkit, the commit, and the SHA-256 of each of the exercise's sources with one hash of
them all; scripts/recordings_fresh.py says which files those are), then the untouched starter's
output and the solution's output, verbatim, each after a line
"== starter (untouched): exit N, K lines" or "== solution: exit N, K lines".

A recording is written (a temporary file renamed over it, never half-written) only when the starter
is graded and fails (exit 1, every GPU check run) and the solution is graded and passes (exit 0);
otherwise the exercise is reported and left as it was. Written into the tree (the default), the
recorded exercises' lines leave scripts/recordings_pending.txt. --out DIR writes under DIR instead (DIR/NN_topic/exercises/
recorded/NAME.txt, for scripts/gpu_check.sh, which brings them back with its results); --keep keeps
the temporary copies and names their folder.

Exit status: 0 every exercise recorded; 1 one was not (or a copy did not configure); 2 a bad
command line (a NAME that is no GPU exercise, a chapter that is no chapter, no solution: a students'
copy cannot record); 77 this machine cannot grade them (no GPU visible, or a GPU without the
compute capability an exercise needs), said in one line before anything is built or written.
"""
import argparse
import datetime
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from exercise import cache_value, starter_of  # noqa: E402
from recordings_fresh import (PENDING, combined, gpu_exercises, needs, read_pending, recording_path,  # noqa: E402
                              source_lines, write_atomically)

ROOT = Path(__file__).resolve().parent.parent
SKIP_CODE = 77
RUN_TIMEOUT_S = 1800  # exercise.py stops a run of the tests after 900 s itself


def say(line):
    print(f"record_exercises: {line}", flush=True)


def capability_text(need):
    cc, exact = need
    return f"{cc // 10}.{cc % 10}{'a' if exact else ''}"


def query_gpu():
    """(name, driver, capability as 90) of the GPU the runs will use, or a string saying why none."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    index = []
    if visible is not None:
        first = visible.split(",")[0].strip()
        if not first or first.startswith("-"):
            return f"no GPU visible (CUDA_VISIBLE_DEVICES='{visible}')"
        index = ["-i", first]
    try:
        result = subprocess.run(["nvidia-smi", *index, "--query-gpu=name,driver_version,compute_cap",
                                 "--format=csv,noheader"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"no GPU visible (nvidia-smi: {error.strerror if isinstance(error, OSError) else 'timed out'})"
    line = result.stdout.strip().splitlines()[0] if result.stdout.strip() else ""
    fields = [f.strip() for f in line.split(",")]
    if result.returncode != 0 or len(fields) != 3 or not re.fullmatch(r"\d+\.\d", fields[2]):
        return f"no GPU visible (nvidia-smi said: '{line[:120]}')"
    major, minor = fields[2].split(".")
    return fields[0], fields[1], int(major) * 10 + int(minor)


def grades(capability, need):
    cc, exact = need
    return capability == cc if exact else capability >= cc


def tree_files(root):
    try:
        listing = subprocess.run(["git", "-C", str(root), "ls-files", "-co", "--exclude-standard", "-z"],
                                 capture_output=True, check=True)
        return [name for name in listing.stdout.decode("utf-8").split("\0") if name]
    except (OSError, subprocess.CalledProcessError):
        skip = ("build", ".git", "out", "node_modules", "__pycache__")
        return [str(p.relative_to(root)) for p in root.rglob("*")
                if p.is_file() and not any(part.startswith(skip) for part in p.relative_to(root).parts)]


def copy_tree(root, files, to):
    for name in files:
        source = root / name
        if source.is_file():
            (to / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, to / name)


def toolkit(build):
    nvcc = cache_value(build, "CMAKE_CUDA_COMPILER")
    if not nvcc:
        return "unknown (no CUDA compiler in the build's cache)"
    try:
        text = subprocess.run([nvcc, "--version"], stdout=subprocess.PIPE, text=True, timeout=60).stdout
    except (OSError, subprocess.TimeoutExpired):
        return f"unknown ({nvcc} --version failed)"
    found = re.search(r"release (\d+\.\d+), (V[\d.]+)", text)
    return f"CUDA {found[1]} (nvcc {found[2]})" if found else "unknown (nvcc --version printed no release)"


def commit(root):
    try:
        head = subprocess.run(["git", "-C", str(root), "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(root), "diff", "--quiet", "HEAD"]).returncode != 0
        return head + (" (with uncommitted changes)" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown (not a git checkout)"


def run_exercise(tree, name):
    """(exit status, output lines) of scripts/exercise.py NAME in a copy of the tree."""
    env = dict(os.environ)
    env.pop("COURSE_WAIT_LIMIT_MS", None)  # the default bound, as a student's run has it
    try:
        result = subprocess.run([sys.executable, str(tree / "scripts" / "exercise.py"), name], cwd=tree, env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace",
                                timeout=RUN_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return None, [f"(exercise.py did not finish within {RUN_TIMEOUT_S} s)"]
    return result.returncode, result.stdout.splitlines()


def configure_and_build(tree, chapters, targets, configure_args, jobs):
    """Configures and builds build-exercises/ in a copy; None, or the lines saying why configuring failed."""
    build = tree / "build-exercises"
    command = ["cmake", "--preset", "exercises", "-B", str(build),
               "-DCOURSE_ONLY_CHAPTERS=" + ";".join(chapters), *configure_args]
    result = subprocess.run(command, cwd=tree, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if result.returncode != 0:
        return ([f"configuring {tree.name}/build-exercises failed ({' '.join(command)}):"]
                + result.stdout.splitlines()[-15:])
    # Built up front, all at once; a target that fails here is built again by exercise.py, which
    # prints the compiler's error as a student would see it.
    targets_args = [arg for target in targets for arg in ("--target", target)]
    subprocess.run(["cmake", "--build", str(build), "-j", str(jobs), *targets_args], cwd=tree,
                   stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    return None


def recording_text(name, chapter, gpu, capability, driver, toolkit_line, commit_line, sources_lines, runs):
    today = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")
    lines = [f"# What scripts/exercise.py {name} printed on a GPU that grades it (written by "
             "scripts/record_exercises.py; do not edit)",
             f"exercise: {chapter}/exercises/{name}",
             f"date: {today}",
             f"gpu: {gpu}",
             f"compute capability: {capability // 10}.{capability % 10}",
             f"driver: {driver}",
             f"toolkit: {toolkit_line}",
             f"commit: {commit_line}",
             f"sources: {combined(sources_lines)}",
             *sources_lines]
    for which, title in (("starter", "starter (untouched)"), ("solution", "solution")):
        code, output = runs[which]
        lines.append(f"== {title}: exit {code}, {len(output)} line{'s' if len(output) != 1 else ''}")
        lines += output
    return "\n".join(lines) + "\n"


def drop_pending(root, names):
    """Removes the recorded exercises' lines from the pending list; returns the names removed."""
    path = root / PENDING
    pending, _ = read_pending(path)
    gone = [n for n in names if n in pending]
    if gone:
        kept = [line for line in path.read_text().splitlines(keepends=True)
                if line.split("#")[0].strip() not in gone]
        write_atomically(path, "".join(kept))
    return gone


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="GPU exercises to record (default: all of them)")
    parser.add_argument("--chapters", default="", help="comma-separated chapter folders: their GPU exercises")
    parser.add_argument("--out", type=Path, default=None, help="write the recordings under DIR instead of the tree")
    parser.add_argument("--configure-arg", action="append", default=[],
                        help="extra argument for configuring, e.g. -DCOURSE_CUDA_ARCHITECTURES=90-real")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 4)
    parser.add_argument("--keep", action="store_true", help="keep the temporary copies of the tree")
    parser.add_argument("--root", type=Path, default=ROOT, help=argparse.SUPPRESS)
    args = parser.parse_args()
    root = args.root.resolve()

    # Everything is checked before anything is copied, built or written.
    gpu_tests = gpu_exercises(root)
    for name in args.names:
        if name not in gpu_tests:
            say(f"'{name}' is not a GPU exercise (the stem of an NN_topic/exercises/NAME_test.cu with an "
                f"Sm<cc>_ suite); the GPU exercises: {', '.join(sorted(gpu_tests)) or 'none'}")
            return 2
    chapters_asked = [c for c in args.chapters.split(",") if c]
    for chapter in chapters_asked:
        if not re.fullmatch(r"\d\d_[a-z0-9_]+", chapter) or not (root / chapter / "CMakeLists.txt").is_file():
            say(f"--chapters: '{chapter}' is not a chapter folder (NN_topic with a CMakeLists.txt)")
            return 2
    chosen = {n: t for n, t in gpu_tests.items()
              if (not args.names or n in args.names)
              and (not chapters_asked or t.parent.parent.name in chapters_asked)}
    if not chosen:
        say(f"no GPU exercise in {', '.join(chapters_asked)}: nothing to record")
        return 0
    for name, test in sorted(chosen.items()):
        starter = starter_of(test)
        if starter is None or not (test.parent / "solutions" / starter.name).is_file():
            say(f"{name}: no solution in {test.parent.relative_to(root)}/solutions/ (a students' copy cannot record)")
            return 2
    gpu = query_gpu()
    if isinstance(gpu, str):
        say(f"{gpu}: this machine cannot grade the GPU exercises; nothing recorded")
        return SKIP_CODE
    gpu_name, driver, capability = gpu
    cannot = [f"{n} ({capability_text(needs(t))})" for n, t in sorted(chosen.items())
              if not grades(capability, needs(t))]
    if cannot:
        say(f"the GPU ({gpu_name}, compute capability {capability // 10}.{capability % 10}) cannot grade "
            f"{', '.join(cannot)}; nothing recorded (name the others to record them)")
        return SKIP_CODE
    out = args.out.resolve() if args.out else root

    order = sorted(chosen, key=lambda n: (chosen[n].parent.parent.name, n))
    chapters = sorted({chosen[n].parent.parent.name for n in order})
    targets = [f"{chosen[n].parent.parent.name}_exercise_{n}" for n in order]
    work = Path(tempfile.mkdtemp(prefix="record_exercises_"))
    problems, written = [], []
    try:
        files = tree_files(root)
        trees = {"starter": work / "starters", "solution": work / "solutions"}
        for tree in trees.values():
            copy_tree(root, files, tree)
        for name in order:
            starter = starter_of(chosen[name])
            rel = starter.relative_to(root)
            shutil.copy2(trees["solution"] / rel.parent / "solutions" / rel.name, trees["solution"] / rel)
        say(f"{gpu_name} (compute capability {capability // 10}.{capability % 10}, driver {driver}): "
            f"{len(order)} exercises of {', '.join(chapters)}; building in {work}")
        for which, tree in trees.items():
            failure = configure_and_build(tree, chapters, targets, args.configure_arg, args.jobs)
            if failure:
                for line in failure:
                    say(line)
                return 1
        toolkit_line = toolkit(trees["starter"] / "build-exercises")
        commit_line = commit(root)
        for name in order:
            test = trees["starter"] / chosen[name].relative_to(root)
            runs = {which: run_exercise(tree, name) for which, tree in trees.items()}
            (starter_code, starter_out), (solution_code, solution_out) = runs["starter"], runs["solution"]
            why = []
            if starter_code != 1:
                why.append(f"the untouched starter exited {starter_code}, not 1 (to do): "
                           f"'{(starter_out or [''])[0][:160]}'")
            elif any("not graded here" in line for line in starter_out):
                why.append("some of the starter's GPU checks were not graded on this GPU")
            if solution_code != 0:
                why.append(f"the solution exited {solution_code}, not 0 (done): '{(solution_out or [''])[0][:160]}'")
            if why:
                problems.append(f"{name}: not recorded: {'; '.join(why)}")
                say(problems[-1])
                continue
            chapter = chosen[name].parent.parent.name
            text = recording_text(name, chapter, gpu_name, capability, driver, toolkit_line, commit_line,
                                  source_lines(trees["starter"], test), runs)
            target = out / recording_path(chosen[name]).relative_to(root)
            write_atomically(target, text)
            written.append(name)
            say(f"{name}: recorded (starter exit 1, {len(starter_out)} lines; solution exit 0, "
                f"{len(solution_out)} lines): {target}")
    finally:
        if args.keep:
            say(f"the copies are kept in {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    if out == root and written:
        gone = drop_pending(root, written)
        if gone:
            say(f"{PENDING}: removed {', '.join(gone)} (recorded now)")
    missed = ", ".join(problem.split(":")[0] for problem in problems)
    say(f"{len(written)} of {len(order)} recorded{'; not recorded: ' + missed if problems else ''}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
