"""Run a compaction's bucket tasks on Spark through ``spark-submit`` (the large-table executor).

::

    execute_compaction(..., options=WorkerOptions(large_runner=SparkSubmitRunner(...)))
        driver (this process): plan, then
            tasks.jsonl ──> spark-submit [--master local[*]] spark_jobs/compact.py
                                --tasks-file tasks.jsonl --results-file results.jsonl
                            one Spark task per (partition, bucket): compact_bucket (same code)
            results.jsonl <──
        then verify, rename, commit here, as with the embedded runner.

acid_core never imports pyspark: ``spark-submit`` is found next to the installed pyspark package
(without importing it) or taken from ``$SPARK_HOME/bin``. ``PYSPARK_PYTHON`` defaults to this
interpreter. The job ships this acid_core to its executors as a zip (``build_code_zip``, added with
``SparkContext.addPyFile`` as ``--py-files`` would), so executors on other hosts run the driver's
code; they need only Python with pyarrow at the path ``PYSPARK_PYTHON`` names.

Not here: the Spark job itself (``spark_jobs/compact.py``).
Errors: ``MissingDependencyError`` when no spark-submit is found; ``AcidError`` naming the exit
code and the tail of the job's log when the job fails.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import tempfile
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Final

from acid_core.errors import AcidError, MissingDependencyError

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from acid_core.compaction.bucket_merge import BucketResult, BucketTask

__all__ = [
    "DEFAULT_SPARK_MASTER",
    "SparkSubmitRunner",
    "build_code_zip",
    "find_spark_submit",
    "spark_job_path",
]

DEFAULT_SPARK_MASTER: Final = "local[*]"
_POLL_SECONDS: Final = 1.0


def find_spark_submit() -> str:
    """The ``spark-submit`` script: ``$SPARK_HOME/bin`` or the installed pyspark package's ``bin``.

    Raises:
        MissingDependencyError: neither exists.
    """
    home = os.environ.get("SPARK_HOME")
    candidates = [Path(home) / "bin" / "spark-submit"] if home else []
    spec = importlib.util.find_spec("pyspark")
    if spec is not None and spec.submodule_search_locations:
        candidates.extend(Path(p) / "bin" / "spark-submit" for p in spec.submodule_search_locations)
    for candidate in candidates:
        if candidate.exists():
            return str(candidate)
    raise MissingDependencyError(
        "spark-submit (from $SPARK_HOME/bin or the pyspark package)", "the Spark compaction executor", "spark"
    )


def spark_job_path() -> str:
    """The path of ``spark_jobs/compact.py`` next to the acid_core package."""
    return str(Path(__file__).resolve().parents[2] / "spark_jobs" / "compact.py")


def build_code_zip(directory: str) -> str:
    """Zip the ``acid_core`` package this module belongs to (its ``.py`` files) into ``directory``.

    What a user passes to ``spark-submit --py-files`` so that executors on other hosts import the
    driver's acid_core: Python puts the zip ahead of site-packages in each Python worker.

    Args:
        directory: an existing directory to write ``acid_core.zip`` into.

    Returns:
        The zip's path.
    """
    package = Path(__file__).resolve().parents[1]
    target = Path(directory) / "acid_core.zip"
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(package.rglob("*.py")):
            if "__pycache__" not in path.parts:
                archive.write(path, str(path.relative_to(package.parent)))
    return str(target)


@dataclass(frozen=True, slots=True)
class SparkSubmitRunner:
    """A task runner for ``execute_compaction`` that submits the tasks to Spark.

    Attributes:
        master: the Spark master (``local[*]`` by default; any master URL).
        extra_args: more ``spark-submit`` arguments (``--conf k=v``, ``--executor-memory``, ...).
        timeout_seconds: give up (and fail the compaction) after this long.
    """

    master: str = DEFAULT_SPARK_MASTER
    extra_args: tuple[str, ...] = ()
    timeout_seconds: float = 6 * 3600.0

    def __call__(self, tasks: Sequence[BucketTask], heartbeat: Callable[[], None]) -> list[BucketResult]:
        """Run the tasks as one Spark job; heartbeat the compaction txn while it runs."""
        with tempfile.TemporaryDirectory(prefix="acidflow-spark-") as scratch:
            tasks_file = Path(scratch) / "tasks.jsonl"
            results_file = Path(scratch) / "results.jsonl"
            log_file = Path(scratch) / "spark.log"
            tasks_file.write_text("".join(task.to_json() + "\n" for task in tasks))
            command = [
                find_spark_submit(),
                "--master",
                self.master,
                *self.extra_args,
                spark_job_path(),
                "--tasks-file",
                str(tasks_file),
                "--results-file",
                str(results_file),
            ]
            env = dict(os.environ)
            env.setdefault("PYSPARK_PYTHON", sys.executable)
            env.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
            root = str(Path(__file__).resolve().parents[2])
            env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
            started = time.monotonic()
            with log_file.open("wb") as log:
                process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env)
                while process.poll() is None:
                    if time.monotonic() - started > self.timeout_seconds:
                        process.kill()
                        process.wait()
                        break
                    heartbeat()
                    time.sleep(_POLL_SECONDS)
            if process.returncode != 0:
                tail = log_file.read_text(errors="replace")[-3000:]
                raise AcidError(
                    f"Spark compaction job failed with exit code {process.returncode} ({' '.join(command)}); "
                    f"expected exit code 0; the job's log ends with:\n{tail}"
                )
            from acid_core.compaction.bucket_merge import BucketResult  # pyarrow: only once tasks ran

            return [BucketResult.from_json(line) for line in results_file.read_text().splitlines() if line]
