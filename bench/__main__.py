"""Run every benchmark module (bench/bench_*.py), or the ones named: python -m bench state read."""

from __future__ import annotations

import importlib
import pkgutil
import sys

import bench
from bench import goals


def main(argv: list[str]) -> int:
    names = sorted(m.name for m in pkgutil.iter_modules(bench.__path__) if m.name.startswith("bench_"))
    wanted = [f"bench_{n.removeprefix('bench_')}" for n in argv] or names
    for name in wanted:
        print(f"== {name}", flush=True)
        module = importlib.import_module(f"bench.{name}")
        code = module.main([])
        if code:
            return int(code)
    if goals.REPORTED:
        print("== goals (issue 14)", flush=True)
        print(goals.summary(), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
