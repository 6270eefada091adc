"""``pyspark_hiveacid.jvm``: the JVM reader's jar, built with javac into its own cache.

What it may touch: only its own temporary file and jar in the cache directory. The tests put
other files there (and point the cache at a file, or at a jar name taken by a directory) and
check that nothing else is written, replaced or removed, and that a refusal is one line.
"""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from acid_core.errors import StorageError
from pyspark_hiveacid import jvm


def _snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_build_writes_only_its_jar_and_reuses_it(tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "notes.txt").write_text("someone else's")
    (cache / "acidflow-hiveacid-0000000000000000.jar").write_bytes(b"an older build")
    before = _snapshot(cache)
    monkeypatch.setenv(jvm.CACHE_ENV, str(cache))

    jar = jvm.jar_path()

    assert jar.parent == cache
    assert jar.name.startswith(jvm.JAR_PREFIX)
    after = _snapshot(cache)
    assert {k: v for k, v in after.items() if k != jar.name} == before  # nothing else touched
    with zipfile.ZipFile(jar) as archive:
        names = archive.namelist()
    assert "acidflow/spark/HiveAcidProvider.class" in names
    assert "META-INF/services/org.apache.spark.sql.sources.DataSourceRegister" in names
    stamp = jar.stat().st_mtime_ns
    assert jvm.jar_path() == jar
    assert jar.stat().st_mtime_ns == stamp  # cached: not built again


def test_cache_that_is_a_file_is_refused_and_left_alone(tmp_path, monkeypatch):
    cache = tmp_path / "not-a-directory"
    cache.write_text("keep me")
    monkeypatch.setenv(jvm.CACHE_ENV, str(cache))
    with pytest.raises(StorageError, match=r"is not a directory; expected a directory"):
        jvm.jar_path()
    assert cache.read_text() == "keep me"


def test_jar_name_taken_by_a_directory_is_refused_and_left_alone(tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    monkeypatch.setenv(jvm.CACHE_ENV, str(cache))
    taken = cache / f"{jvm.JAR_PREFIX}{jvm._digest()}.jar"
    taken.mkdir(parents=True)
    (taken / "inside").write_text("keep me")
    with pytest.raises(StorageError, match=r"is not a file; expected the JVM reader's jar"):
        jvm.jar_path()
    assert (taken / "inside").read_text() == "keep me"


def test_without_javac_the_command_says_so_in_one_line_and_writes_nothing(tmp_path):
    cache = tmp_path / "cache"
    env = {**os.environ, jvm.CACHE_ENV: str(cache), "PATH": str(tmp_path / "empty-bin")}
    root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join([root, os.environ.get("PYTHONPATH", "")])
    done = subprocess.run(
        [sys.executable, "-m", "pyspark_hiveacid.jvm"], env=env, capture_output=True, text=True, check=False
    )
    assert done.returncode == 1
    assert done.stdout == ""
    assert done.stderr.splitlines() == [
        "acidflow: hiveacid's JVM reader needs javac to build its jar: no javac on the PATH; expected a "
        "JDK 17+ (or leave the jar off the class path: the Python data source then reads)"
    ]
    assert not cache.exists()
