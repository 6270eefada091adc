"""The plugin's tests import Airflow in-process: give it a throwaway AIRFLOW_HOME (never ~/airflow)."""

from __future__ import annotations

import os
import tempfile

os.environ.setdefault("AIRFLOW_HOME", tempfile.mkdtemp(prefix="acidflow-test-airflow-home-"))
os.environ.setdefault("AIRFLOW__CORE__LOAD_EXAMPLES", "False")
