"""The one way a benchmark reports a goal of issue 14: ratio, target, PASS or MISS, and the command.

Every benchmark that checks a goal calls :func:`report` once per goal; ``python -m bench`` gathers
the lines into a summary table at the end. Ratios are measured side by side in one run, never
against an absolute time; ``--smoke`` runs (CI) print the same lines with ``SMOKE`` instead of a
verdict, because a CI-sized input proves only that the benchmark still works.

    GOAL 1a major compaction vs bare pyarrow read+write: 0.93x target <=1.00x PASS | python -m bench.bench_compaction
"""

from __future__ import annotations

from dataclasses import dataclass

REPORTED: list[Goal] = []


@dataclass(frozen=True)
class Goal:
    goal: str
    what: str
    ratio: float
    target: float
    higher_is_better: bool
    command: str
    smoke: bool

    @property
    def verdict(self) -> str:
        if self.smoke:
            return "SMOKE"
        met = self.ratio >= self.target if self.higher_is_better else self.ratio <= self.target
        return "PASS" if met else "MISS"

    def line(self) -> str:
        op = ">=" if self.higher_is_better else "<="
        return (
            f"GOAL {self.goal} {self.what}: {self.ratio:.2f}x target {op}{self.target:.2f}x "
            f"{self.verdict} | {self.command}"
        )


def report(
    goal: str,
    what: str,
    ratio: float,
    target: float,
    *,
    command: str,
    higher_is_better: bool = False,
    smoke: bool = False,
) -> Goal:
    """Print and remember one goal's measured ratio against its target."""
    entry = Goal(goal, what, ratio, target, higher_is_better, command, smoke)
    REPORTED.append(entry)
    print(entry.line(), flush=True)
    return entry


def summary() -> str:
    """Every goal reported in this process, one line each, for the end of ``python -m bench``."""
    return "\n".join(g.line() for g in REPORTED)
