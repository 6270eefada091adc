"""The single-process model (hypothesis state machine): every rule checked against the model.

Quick by default (a few short sequences); ``ACIDFLOW_SOAK=long`` (``make soak``) runs many long
ones. A failure prints the minimal sequence of rules, i.e. the reproduction.
"""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, settings
from hypothesis.stateful import run_state_machine_as_test

from tests.reliability.machine import SoakMachine

pytestmark = pytest.mark.slow

LONG = os.environ.get("ACIDFLOW_SOAK") == "long"


@pytest.mark.timeout(3600 if LONG else 240)
def test_soak_machine_random_writes_compactions_cleans_leases_match_the_model():
    """SELECT and every live lease equal the model after every write, compaction, clean and lease."""
    run_state_machine_as_test(
        SoakMachine,
        settings=settings(
            max_examples=30 if LONG else 4,
            stateful_step_count=40 if LONG else 18,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
            database=None,
        ),
    )
