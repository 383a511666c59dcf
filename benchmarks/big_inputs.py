"""How long ncclgen takes to answer a hostile-sized input, as a ratio to a one-line input.

Why: issue 15 asked that a 1 MiB input (the fuzz corpus's BIG_INPUTS, tests/test_fuzz_entry.py) be answered
within 2 s, the linter's shell reader be linear (an unclosed quote in 16,000 lines took 14-25 s before) and
an alias bomb be refused at once. Those were timed assertions inside the tests, which fail on a loaded
machine and say nothing on a fast one; issue 19 moved them here. The tests keep what each input must
produce; this script keeps the time, in-process (ncclgen.cli.main, as the tests call it), as the median
of N runs and its ratio to the same command on a tiny input.

    python benchmarks/big_inputs.py [--runs N]

Exit status 1 when a case's median is over its goal (2 s for a 1 MiB input, 0.2 s for the alias bomb).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from ncclgen.load import descriptor, yamlio  # noqa: E402
from tests import test_fuzz_entry as fe  # noqa: E402  (the inputs are the tests' own)

GOAL_S = 2.0
BOMB_GOAL_S = 0.2


def _median(fn, runs: int) -> float:
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def _bomb() -> None:
    try:
        descriptor.load(str(ROOT / "tests" / "data" / "bad" / "alias-bomb.yaml"))
    except yamlio.UserError:
        return
    raise SystemExit("alias bomb was not refused")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    ok = True
    print(f"{'case':<24} {'median s':>9} {'tiny s':>8} {'ratio':>7}  goal")
    with tempfile.TemporaryDirectory() as tmp:
        for case in sorted(fe.BIG_INPUTS):
            name, make, command = fe.BIG_INPUTS[case]
            big = fe.write(Path(tmp) / f"big-{name}", make())
            tiny = fe.write(Path(tmp) / f"tiny-{name}", make()[:200].rsplit("\n", 1)[0] + "\n")
            t_big = _median(lambda p=big, c=command: fe.call([*c, p]), args.runs)
            t_tiny = _median(lambda p=tiny, c=command: fe.call([*c, p]), args.runs)
            met = t_big < GOAL_S
            ok &= met
            print(
                f"{case:<24} {t_big:9.3f} {t_tiny:8.3f} {t_big / t_tiny:7.1f}  < {GOAL_S} s {'met' if met else 'MISSED'}"
            )
    t = _median(_bomb, args.runs)
    ok &= t < BOMB_GOAL_S
    print(f"{'alias-bomb':<24} {t:9.3f} {'':>8} {'':>7}  < {BOMB_GOAL_S} s {'met' if t < BOMB_GOAL_S else 'MISSED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
