"""acidflow's JVM reader for ``format("hiveacid")``: its jar, built from the Java sources beside this file.

::

    jar_path()                        the jar for this pyspark (built with javac on first use, cached)
    python -m pyspark_hiveacid.jvm    print that path: spark-submit --jars "$(python -m pyspark_hiveacid.jvm)"

Why a JVM reader: any Python data source pays Spark's transport (Arrow from a Python worker, then
rows in the JVM), about 1.4x a plain ORC read before any ACID work (bench/RESULTS.md, issue 13). With
the jar on the class path, ``format("hiveacid")`` reads in the JVM (orc-core and Spark's own ORC
vectors, the delete merge as a selection) and hands writes, and reads with option
``engine='python'``, to the Python data source of the same name. Without it, the Python source does
everything.

The jar is compiled against the installed pyspark's jars (``pyspark/jars``), so it matches that
Spark exactly; the cache key is a digest of the sources and the pyspark version. Cache directory:
``$ACIDFLOW_JVM_CACHE``, else ``~/.cache/acidflow/jvm``. Building needs a JDK (``javac``, 17+).

Invariants: a cached jar is complete (written to a temporary name of its own, then renamed); a
change to a Java source builds a new jar; nothing in the cache directory but this build's own
temporary file and jar is ever written, replaced or removed.
Not here: the Java sources (``pyspark_hiveacid/jvm/src``), sessions (``session``).
Errors: ``StorageError`` (no javac, or javac failed: its first error line).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from acid_core.errors import StorageError

__all__ = ["SOURCE_DIR", "jar_path"]

SOURCE_DIR = Path(__file__).resolve().parent / "jvm" / "src"
CACHE_ENV = "ACIDFLOW_JVM_CACHE"
JAR_PREFIX = "acidflow-hiveacid-"


def _pyspark_jars() -> Path:
    import pyspark

    return Path(pyspark.__file__).resolve().parent / "jars"


def _sources() -> list[Path]:
    return sorted(p for p in SOURCE_DIR.rglob("*") if p.is_file())


def _digest() -> str:
    import pyspark

    h = hashlib.sha256(pyspark.__version__.encode())
    for path in _sources():
        h.update(str(path.relative_to(SOURCE_DIR)).encode())
        h.update(path.read_bytes())
    return h.hexdigest()[:16]


def _cache_dir() -> Path:
    configured = os.environ.get(CACHE_ENV)
    return Path(configured) if configured else Path.home() / ".cache" / "acidflow" / "jvm"


def _check_target(cache: Path, target: Path) -> None:
    """Refuse a cache that is not a directory, or a jar name taken by something that is not a file.

    Raises:
        StorageError: one line naming the path and what was expected; nothing is written.
    """
    if cache.exists() and not cache.is_dir():
        raise StorageError(
            f"the JVM reader's jar cache {str(cache)!r} is not a directory; expected a directory "
            f"(set ${CACHE_ENV} to one)"
        )
    if target.exists() and not target.is_file():
        raise StorageError(f"{str(target)!r} is not a file; expected the JVM reader's jar or nothing there")


def jar_path(build: bool = True) -> Path:
    """The jar of ``hiveacid``'s JVM reader, built first if it is not cached.

    Raises:
        StorageError: no ``javac`` on the PATH (install a JDK 17+, or read with the Python data
            source: leave the jar off the class path), javac failed (its first error line), or
            the cache is not a directory / the jar's name is taken by something else.
        FileNotFoundError: ``build=False`` and no jar is cached.
    """
    cache = _cache_dir()
    target = cache / f"{JAR_PREFIX}{_digest()}.jar"
    _check_target(cache, target)
    if target.is_file():
        return target
    if not build:
        raise FileNotFoundError(str(target))
    javac = shutil.which("javac")
    if javac is None:
        raise StorageError(
            "hiveacid's JVM reader needs javac to build its jar: no javac on the PATH; expected a JDK 17+ "
            "(or leave the jar off the class path: the Python data source then reads)"
        )
    cache.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="acidflow-jvm-") as scratch:
        classes = Path(scratch) / "classes"
        classes.mkdir()
        java = [str(p) for p in _sources() if p.suffix == ".java"]
        done = subprocess.run(
            [javac, "-nowarn", "--release", "17", "-cp", f"{_pyspark_jars()}/*", "-d", str(classes), *java],
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode != 0:
            first = next((line for line in done.stderr.splitlines() if "error" in line), done.stderr.strip())
            raise StorageError(f"javac failed building hiveacid's JVM reader: {first}")
        # The jar is written under a name of its own beside the target, then renamed onto it: the
        # only file this replaces is this build's own jar (same digest, same contents).
        partial = cache / f".{target.name}.{os.getpid()}.tmp"
        try:
            with zipfile.ZipFile(partial, "x", zipfile.ZIP_DEFLATED) as jar:
                jar.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\nCreated-By: acidflow\n\n")
                for path in sorted(classes.rglob("*.class")):
                    jar.write(path, str(path.relative_to(classes)))
                for path in _sources():
                    if path.suffix != ".java":
                        jar.write(path, str(path.relative_to(SOURCE_DIR)))
            partial.replace(target)
        except OSError as e:
            raise StorageError(f"cannot write hiveacid's JVM reader jar {str(target)!r}: {e}") from e
        finally:
            partial.unlink(missing_ok=True)  # this build's own temporary file, if the rename did not happen
    return target


def main() -> int:
    """Print the jar's path (building it first); exit 1 with one line when it cannot be built."""
    try:
        print(jar_path())
    except StorageError as e:
        print(f"acidflow: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
