"""Open the metastore a URL names: the embedded SQLite file, a SQLAlchemy URL (PostgreSQL).

``open_metastore(None, warehouse)`` is the embedded default, ``<warehouse>/.acidflow/metastore.sqlite``.

Not here: the adapters themselves (``sql``), configuration parsing (the command line).
Errors: whatever the adapter raises on open (``MetastoreError`` for an unreachable database).
"""

from __future__ import annotations

from pathlib import Path

from acid_core.metastore.port import METASTORE_DIR_NAME
from acid_core.metastore.sql import SqlMetastore

__all__ = ["default_metastore_url", "open_metastore"]


def default_metastore_url(warehouse: str) -> str:
    """``sqlite:///<warehouse>/.acidflow/metastore.sqlite`` (absolute)."""
    return f"sqlite:///{Path(warehouse).resolve() / METASTORE_DIR_NAME / 'metastore.sqlite'}"


def open_metastore(url: str | None, warehouse: str) -> SqlMetastore:
    """Open (and migrate) the metastore at ``url``, or the embedded SQLite file of ``warehouse``."""
    if url is None:
        (Path(warehouse).resolve() / METASTORE_DIR_NAME).mkdir(parents=True, exist_ok=True)
    return SqlMetastore(url or default_metastore_url(warehouse), warehouse=str(Path(warehouse).resolve()))
