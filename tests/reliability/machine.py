"""The single-process model: a hypothesis ``RuleBasedStateMachine`` over the soak writer's steps.

Rules: every ``SoakWriter`` step (SQL and Python writes, streaming, aborted writes, lease take and
release), ``acidflow compact --type minor|major``, ``acidflow clean`` (plain or ``--quarantine``).
After every rule the invariant runs: SELECT equals the model and every live lease reads the rows
it read when taken (``SoakWriter.check``). Hypothesis shrinks a failure to a minimal sequence of
rules, which is the reproduction to report.
"""

from __future__ import annotations

import contextlib
import io
import random
import shutil
import tempfile

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from acid_core.cli import main as acidflow
from tests.reliability.writer import STEP_KINDS, TABLE, SoakWriter, create_soak_table

WRITE_KINDS = tuple(k for k in STEP_KINDS if not k.startswith("lease"))


class SoakMachine(RuleBasedStateMachine):
    """One warehouse (embedded SQLite metastore) per example; see the module docstring."""

    metastore_url: str | None = None

    def __init__(self) -> None:
        super().__init__()
        self.directory = tempfile.mkdtemp(prefix="acidflow-soak-")
        self.warehouse = f"{self.directory}/wh"
        create_soak_table(self.warehouse, self.metastore_url)
        self.writer = SoakWriter.open(self.warehouse, self.metastore_url, f"{self.directory}/journal.jsonl")

    def teardown(self) -> None:
        self.writer.close()
        shutil.rmtree(self.directory, ignore_errors=True)

    def _cli(self, *argv: str) -> str:
        args = [*argv, "--warehouse", self.warehouse]
        if self.metastore_url:
            args += ["--metastore", self.metastore_url]
        out = io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            code = acidflow(args)
        assert code == 0, f"acidflow {' '.join(argv)} exited {code}: {out.getvalue()}"
        return out.getvalue()

    @rule(kind=st.sampled_from(WRITE_KINDS), seed=st.integers(0, 2**16))
    def write(self, kind: str, seed: int) -> None:
        self.writer.step(kind, random.Random(seed))

    @rule(seed=st.integers(0, 2**16))
    def take_lease(self, seed: int) -> None:
        self.writer.step("lease_take", random.Random(seed))

    @rule(seed=st.integers(0, 2**16))
    def release_lease(self, seed: int) -> None:
        self.writer.step("lease_release", random.Random(seed))

    @rule(kind=st.sampled_from(["minor", "major"]))
    def compact(self, kind: str) -> None:
        self._cli("compact", "--table", TABLE, "--type", kind, "--executor", "embedded")

    @rule(quarantine=st.booleans())
    def clean(self, quarantine: bool) -> None:
        self._cli("clean", *(["--quarantine"] if quarantine else []))

    @invariant()
    def model_holds(self) -> None:
        self.writer.check("the last rule")
