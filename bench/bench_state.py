"""`acidflow state` logic on one partition of 100,000 directories vs a bare os.scandir.

    python -m bench.bench_state [--dirs 100000] [--repeat 5]

Baseline: ``[(e.name, e.is_dir()) for e in os.scandir(d)]``, the least any directory-state
computation must do (names, and which are directories). Measured: ``load_directory_state`` with
the local FileIO (listing through the port, parsing, Hive's selection) for a committed snapshot and
for a snapshot with open and aborted write IDs. Best of --repeat runs each, interleaved so both see
the same machine load. Target (issue 2): under 3x.
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


def best_of(fn: Callable[[], object], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


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

        results: dict[str, list[float]] = {
            "scandir": [],
            "state (all committed)": [],
            "state (open+aborted)": [],
        }
        for _ in range(args.repeat):
            results["scandir"].append(best_of(baseline, 1))
            results["state (all committed)"].append(
                best_of(lambda: load_directory_state(file_io, root, committed), 1)
            )
            results["state (open+aborted)"].append(
                best_of(lambda: load_directory_state(file_io, root, busy), 1)
            )
        state = load_directory_state(file_io, root, committed)
        base = min(results["scandir"])
        print(
            f"partition: {args.dirs} directories; state reads base {state.base} + {len(state.deltas)} deltas"
        )
        for label, times in results.items():
            print(f"{label:24s} {min(times) * 1000:8.1f} ms   ratio {min(times) / base:5.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
