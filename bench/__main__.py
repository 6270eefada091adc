"""Run every benchmark module (bench/bench_*.py), or the ones named: python -m bench state read.

A benchmark that fails is reported (its traceback goes to stderr) and the others still run; the
exit status is non-zero when any failed, and the goal summary names the ones that did.
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
import traceback

import bench
from bench import goals


def main(argv: list[str]) -> int:
    names = sorted(m.name for m in pkgutil.iter_modules(bench.__path__) if m.name.startswith("bench_"))
    wanted = [f"bench_{n.removeprefix('bench_')}" for n in argv] or names
    failed: list[str] = []
    for name in wanted:
        print(f"== {name}", flush=True)
        try:
            module = importlib.import_module(f"bench.{name}")
            code = module.main([])
        except Exception:  # one broken benchmark must not hide the others' figures
            traceback.print_exc()
            code = 1
        if code:
            failed.append(name)
            print(f"== {name} FAILED (exit {code})", flush=True)
    if goals.REPORTED:
        print("== goals (issue 14)", flush=True)
        print(goals.summary(), flush=True)
    if failed:
        print(f"== failed: {', '.join(failed)}", flush=True)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
