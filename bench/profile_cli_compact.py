"""Goal 23e: where the time of ``acidflow compact`` goes, as its own process, phase by phase and thread by thread.

    python -m bench.profile_cli_compact [--rows 4000000] [--repeat 3] [--warehouse DIR]

Not a goal benchmark (no ``bench_`` prefix: ``python -m bench`` and the smoke test skip it); the
measurement behind the "where the time goes" table of goal 23e in ``bench/RESULTS.md``. Input:
``bench.bench_compaction.build`` (``--rows`` rows in 50 insert deltas + 10 delete deltas deleting
10%, one bucket), or an existing ``--warehouse`` built by it. Each round copies the warehouse,
queues one major compaction and runs the console script's ``main()`` in a fresh process, as
``bench_compaction --cli-only`` does, with a probe around it that only observes: the wall and the
process CPU at the end of each phase (the metastore open; the bucket's task built, after the
recovery, the claim and the plan; the first ``ORCWriter.write`` of events (pyarrow's pandas shim
imports pandas in this phase); the last one; the output's verification; ``main`` returning), the CPU of each Python
thread by name as it ends, and of the threads still alive at the end (Arrow's pools). The
process wall (fork to exit) is measured outside, next to a bare ``read_stripe`` rewrite of the
same input (``bench/bare_orc_rewrite.py``). Medians of ``--repeat`` rounds. ``--block-pandas`` is a
counterfactual, not the product: the probed process cannot import pandas, which shows what
pyarrow's pandas shim (it imports pandas on the first ``pa.array``-like call) costs.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile

from acid_core.metastore import CompactionType, open_metastore
from bench.bench_compaction import _BARE_SCRIPT, _copy, _timed_process, build, compile_acid_core

_PROBE = r"""
import json, os, sys, threading, time
T0 = time.perf_counter()
phases = []
def mark(label):
    phases.append((label, time.perf_counter() - T0, time.process_time()))
threads = {}
_run = threading.Thread.run
def run(self):
    try:
        _run(self)
    finally:
        threads[self.name] = threads.get(self.name, 0.0) + time.thread_time()
threading.Thread.run = run
if os.environ.get("ACIDFLOW_PROFILE_BLOCK_PANDAS") == "1":
    class NoPandas:  # the counterfactual of --block-pandas: pyarrow's shim finds no pandas
        def find_spec(self, name, path=None, target=None):
            if name.partition(".")[0] == "pandas":
                raise ModuleNotFoundError(name)
    sys.meta_path.insert(0, NoPandas())
import acid_core.cli.options as options, acid_core.cli.compact as compact
_open = options.open_existing_metastore
def open_existing(args):
    result = _open(args)
    mark("metastore open")
    _patch_data_path()  # imported here, where the command imports them (after the metastore)
    return result
compact.open_existing_metastore = open_existing
def _patch_data_path():
    import pyarrow.orc as orc
    import acid_core.orc.writer as writer, acid_core.compaction.bucket_merge as merge
    _write = orc.ORCWriter.write
    def write(self, table):
        if table.num_rows and not any(p[0] == "first events encoded" for p in phases):
            mark("first events encoded")
        _write(self, table)
    orc.ORCWriter.write = write
    def marked_after(function, label):
        def call(*args, **kwargs):
            try:
                return function(*args, **kwargs)
            finally:
                mark(label)
        return call
    writer._write_events = marked_after(writer._write_events, "last events encoded")
    merge.verify_output_file = marked_after(merge.verify_output_file, "output verified")
    _compact_bucket = merge.compact_bucket
    def compact_bucket(*args, **kwargs):
        mark("claimed, bucket task built")
        return _compact_bucket(*args, **kwargs)
    merge.compact_bucket = compact_bucket
from acid_core.cli import main
sys.argv = ["acidflow", *sys.argv[1:]]
code = main()
mark("main returned")
alive = {}
for tid in os.listdir("/proc/self/task"):
    if int(tid) == threading.get_native_id():
        continue
    with open(f"/proc/self/task/{tid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    alive[tid] = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
threads["MainThread"] = time.thread_time()
threads["Arrow pool threads (alive at the end)"] = sum(alive.values())
print(json.dumps({"phases": phases, "threads": threads, "code": code}), file=sys.stderr)
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="profile_cli_compact", description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=4_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--warehouse", default=None, help="a warehouse bench_compaction.build made")
    parser.add_argument(
        "--block-pandas",
        action="store_true",
        help="counterfactual, not the product: the probed process cannot import pandas (what pyarrow's "
        "pandas shim costs on the critical path)",
    )
    args = parser.parse_args(argv)
    warehouse = args.warehouse or tempfile.mkdtemp(prefix="acidflow-profile-cli-")
    if args.warehouse is None:
        build(warehouse, args.rows, 50, 0.1, 1)
    compile_acid_core()
    print(f"uptime: {os.getloadavg()}", flush=True)
    rounds, bare = [], []
    try:
        for _ in range(args.repeat):
            rounds.append(_probe_round(warehouse, args.block_pandas))
            out = tempfile.mkdtemp(prefix="acidflow-profile-bare-")
            try:
                wall, cpu, _ = _timed_process(
                    [sys.executable, str(_BARE_SCRIPT), os.path.join(warehouse, "b"), f"{out}/b", "stripe"]
                )
            finally:
                shutil.rmtree(out, ignore_errors=True)
            bare.append((wall, cpu))
    finally:
        if args.warehouse is None:
            shutil.rmtree(warehouse, ignore_errors=True)
    _report(rounds, bare)
    print(f"uptime: {os.getloadavg()}", flush=True)
    return 0


def _probe_round(warehouse: str, block_pandas: bool = False) -> dict[str, object]:
    """One fresh ``acidflow compact`` process with the probe; its phases, threads, wall and CPU."""
    import resource
    import subprocess
    import time

    copy = _copy(warehouse, "profile")
    try:
        metastore = open_metastore(None, copy)
        metastore.enqueue_compaction("default.b", None, CompactionType.MAJOR)
        metastore.close()
        repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join(filter(None, [repo, os.environ.get("PYTHONPATH")])),
        }
        env["ACIDFLOW_PROFILE_BLOCK_PANDAS"] = "1" if block_pandas else "0"
        command = [sys.executable, "-c", _PROBE, "compact", "--warehouse", copy, "--executor", "embedded"]
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        done = subprocess.run([*command, "--json"], capture_output=True, text=True, env=env, check=False)
        wall = time.perf_counter() - started
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if done.returncode != 0:
            raise SystemExit(f"acidflow compact failed ({done.returncode}):\n{done.stderr[-3000:]}")
        outcome = json.loads(done.stdout.strip().splitlines()[-1])
        if outcome["status"] != "compacted":
            raise SystemExit(f"acidflow compact did not compact: {done.stdout}")
        report = json.loads(done.stderr.strip().splitlines()[-1])
    finally:
        shutil.rmtree(copy, ignore_errors=True)
    cpu = after.ru_utime + after.ru_stime - usage.ru_utime - usage.ru_stime
    return {**report, "wall": wall, "cpu": cpu}


def _report(rounds: list[dict[str, object]], bare: list[tuple[float, float]]) -> None:
    def median(values: list[float]) -> float:
        return statistics.median(values)

    print(f"{len(rounds)} round(s), medians; wall and process CPU in seconds since the probe started")
    labels = [label for label, _, _ in rounds[0]["phases"]]  # type: ignore[index,misc]
    previous_wall = previous_cpu = 0.0
    for position, label in enumerate(labels):
        wall = median([r["phases"][position][1] for r in rounds])  # type: ignore[index]
        cpu = median([r["phases"][position][2] for r in rounds])  # type: ignore[index]
        print(
            f"  {label:<22} at {wall:6.3f} s (cpu {cpu:6.3f} s): this phase {wall - previous_wall:6.3f} s wall, "
            f"{cpu - previous_cpu:6.3f} s cpu = {(cpu - previous_cpu) / max(wall - previous_wall, 1e-9):.2f} cores"
        )
        previous_wall, previous_cpu = wall, cpu
    print("  CPU by thread:")
    names = sorted({name for r in rounds for name in r["threads"]})  # type: ignore[attr-defined]
    for name in names:
        print(f"    {name:<40} {median([r['threads'].get(name, 0.0) for r in rounds]):6.3f} s")  # type: ignore[attr-defined]
    wall, cpu = median([r["wall"] for r in rounds]), median([r["cpu"] for r in rounds])  # type: ignore[misc]
    bare_wall, bare_cpu = median([w for w, _ in bare]), median([c for _, c in bare])
    print(f"  acidflow compact process: wall {wall:.2f} s, cpu {cpu:.2f} s")
    print(f"  bare read_stripe rewrite: wall {bare_wall:.2f} s, cpu {bare_cpu:.2f} s")
    print(f"  ratio: {wall / bare_wall:.2f}x wall, {cpu / bare_cpu:.2f}x cpu")


if __name__ == "__main__":
    sys.exit(main())
