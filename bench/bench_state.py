"""`acidflow state` logic on one partition of 100,000 directories vs a bare os.scandir.

    python -m bench.bench_state [--dirs 100000] [--repeat 5]

Baseline: ``[(e.name, e.is_dir()) for e in os.scandir(d)]``, the least any directory-state
computation must do (names, and which are directories). Measured: ``load_directory_state`` with
the local FileIO (listing through the port, parsing, Hive's selection) for a committed snapshot and
for a snapshot with open and aborted write IDs. Best of --repeat runs each, interleaved so all see
the same machine load; wall-clock and process CPU time are both reported (CPU time is the steadier
of the two on a busy machine). Target (issue 2): under 3x.
"""

from __future__ import annotations

import argparse
import os
import random
import tempfile
import time
from typing import TYPE_CHECKING

from acid_core.directory import load_directory_state
from acid_core.fs import LocalFileIO
from acid_core.writeids import ValidWriteIdList, parse_valid_write_id_list

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence


def make_partition(root: str, dirs: int, seed: int = 7) -> None:
    """A realistic busy partition: a base, streaming and per-statement deltas, delete deltas, aborts."""
    rng = random.Random(seed)
    os.mkdir(os.path.join(root, "base_0000100"))
    made, write_id = 1, 101
    while made < dirs:
        kind = rng.random()
        if kind < 0.6:
            names = [f"delta_{write_id:07d}_{write_id:07d}_0000"]
        elif kind < 0.9:
            names = [
                f"delta_{write_id:07d}_{write_id:07d}_0000",
                f"delete_delta_{write_id:07d}_{write_id:07d}_0000",
            ]
        else:
            names = [f"delta_{write_id:07d}_{write_id + 9:07d}"]
            write_id += 9
        for name in names[: dirs - made]:
            os.mkdir(os.path.join(root, name))
            made += 1
        write_id += 1
    for i in range(3):
        with open(os.path.join(root, f"00000{i}_0"), "wb") as f:
            f.write(b"x")


def measure(fn: Callable[[], object]) -> tuple[float, float]:
    """(wall seconds, CPU seconds of this process) of one call."""
    wall, cpu = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - wall, time.process_time() - cpu


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--dirs", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="acidflow-bench-state-") as root:
        make_partition(root, args.dirs)
        file_io = LocalFileIO()
        committed = ValidWriteIdList(table_name="db.t")
        hwm = 100 + args.dirs
        busy = parse_valid_write_id_list(
            f"db.t:{hwm}:{hwm - 50}:{hwm - 50},{hwm - 20}:{','.join(str(i) for i in range(200, 2000, 7))}"
        )

        def baseline() -> object:
            with os.scandir(root) as it:
                return [(e.name, e.is_dir()) for e in it]

        runs: dict[str, Callable[[], object]] = {
            "scandir (baseline)": baseline,
            "state (all committed)": lambda: load_directory_state(file_io, root, committed),
            "state (open+aborted)": lambda: load_directory_state(file_io, root, busy),
        }
        results: dict[str, list[tuple[float, float]]] = {label: [] for label in runs}
        for _ in range(args.repeat):  # interleaved, so every variant sees the same machine load
            for label, fn in runs.items():
                results[label].append(measure(fn))
        state = load_directory_state(file_io, root, committed)
        base_wall = min(wall for wall, _ in results["scandir (baseline)"])
        base_cpu = min(cpu for _, cpu in results["scandir (baseline)"])
        print(f"partition: {args.dirs} directories; state reads {state.base} + {len(state.deltas)} deltas")
        print(
            f"{'':24s} {'wall ms':>9s} {'ratio':>7s} {'cpu ms':>9s} {'ratio':>7s}   (best of {args.repeat})"
        )
        for label, samples in results.items():
            wall = min(w for w, _ in samples)
            cpu = min(c for _, c in samples)
            print(
                f"{label:24s} {wall * 1000:9.1f} {wall / base_wall:6.2f}x {cpu * 1000:9.1f} {cpu / base_cpu:6.2f}x"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
