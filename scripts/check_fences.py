#!/usr/bin/env python3
"""Checks every kernel of the course for the proxy fence between barrier initialisation and TMA.

    scripts/check_fences.py BUILD_DIR

An mbarrier is initialised by ordinary (generic-proxy) stores; a bulk or tensor copy (TMA) that
completes on it updates it through the async proxy. The PTX memory model orders two proxies only
through a proxy fence, so every kernel in the build's PTX (NN_topic/*.compute_90*.ptx) that issues
a copy completing on an mbarrier (`cp.async.bulk...mbarrier::complete_tx`) must execute
`fence.proxy.async` or `fence.mbarrier_init` after its `mbarrier.init` and before that copy. The
check reads the kernel's text in order: the fence must sit between the first mbarrier.init and the
first such copy. Exits 1 naming each kernel that lacks it (CTest: ptx.fences).

The exercises are held to the same rule: BUILD_DIR/exercise_solutions_ptx holds every exercise
solution's PTX for 9.0 (NN_topic/<name>.compute_90.ptx, made by common/CMakeLists.txt with
nvcc -ptx), and the check run on that folder is CTest ptx.fences_exercises. Its fixture
(common/tests/fences_exercise, CTest ptx.fences_exercise_fixture) is exercise 03.3's solution
before its fences, which the check must name.
"""
import re
import sys
from pathlib import Path

ENTRY = re.compile(r"^\.(?:visible|weak)?\s*\.entry\s+(\S+?)\(", re.M)
COPY = re.compile(r"^\s*cp\.async\.bulk(?:\.tensor\.\w+)?\.shared::(?:cta|cluster)\.global\S*mbarrier::complete_tx", re.M)
INIT = re.compile(r"^\s*mbarrier\.init\b", re.M)
FENCE = re.compile(r"^\s*fence\.(?:proxy\.async|mbarrier_init)\b", re.M)


def kernels(ptx):
    starts = [(m.start(), m.group(1)) for m in ENTRY.finditer(ptx)]
    for i, (start, name) in enumerate(starts):
        end = starts[i + 1][0] if i + 1 < len(starts) else len(ptx)
        yield name, ptx[start:end]


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: check_fences.py BUILD_DIR")
    build = Path(sys.argv[1])
    files = sorted(build.glob("[0-9][0-9]_*/*.compute_90*.ptx"))
    if not files:
        print(f"check_fences: no 9.0 PTX under {build} (no chapter built for 9.0): nothing to check")
        return 0
    checked, missing = 0, []
    for path in files:
        for name, body in kernels(path.read_text()):
            copy = COPY.search(body)
            init = INIT.search(body)
            if not copy or not init or init.start() > copy.start():
                continue  # no TMA completing on a barrier, or a barrier initialised elsewhere
            checked += 1
            fence = FENCE.search(body, init.start())
            if not fence or fence.start() > copy.start():
                missing.append(f"{path.relative_to(build)}: {name}")
    print(f"check_fences: {checked} kernels initialise an mbarrier and complete a TMA copy on it; "
          f"{checked - len(missing)} fence between the two")
    for kernel in missing:
        print(f"  no fence.proxy.async (or fence.mbarrier_init) between mbarrier.init and the first bulk copy: {kernel}")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
