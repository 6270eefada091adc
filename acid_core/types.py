"""Identifier types shared by every layer.

Write IDs are per table (Hive 3+), transaction IDs are global; statement IDs number the statements
of one transaction; bucket IDs number the files of one directory. Keeping them apart as ``NewType``
lets mypy catch a transaction ID passed where a write ID belongs.

Not here: parsing (see ``paths`` and ``writeids``), validation.
"""

from __future__ import annotations

from typing import NewType

__all__ = ["BucketId", "StatementId", "TxnId", "WriteId"]

WriteId = NewType("WriteId", int)
TxnId = NewType("TxnId", int)
StatementId = NewType("StatementId", int)
BucketId = NewType("BucketId", int)
