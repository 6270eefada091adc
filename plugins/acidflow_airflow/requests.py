"""Manual compaction requests: ``ALTER TABLE db.t [PARTITION (k='v', ...)] COMPACT 'minor'|'major'``.

::

    parse_compact_statement("ALTER TABLE sales.orders PARTITION (ds='2024-01-01') COMPACT 'major'")
        -> CompactRequest(table="sales.orders", partition_spec=(("ds", "2024-01-01"),), compaction_type="major")
    request_from_params({"table": ..., "partition": ..., "type": ..., "statement": ...}) -> CompactRequest

Pure: no metastore access (``operators`` checks that the table and partition exist).
Errors: ``InvalidCompactStatementError`` naming the statement and what is wrong.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Final

from acid_core.errors import InvalidCompactStatementError

__all__ = ["CompactRequest", "parse_compact_statement", "parse_partition_name", "request_from_params"]

_IDENT: Final = r"`?[A-Za-z_][A-Za-z0-9_]*`?"
_STATEMENT: Final = re.compile(
    rf"^\s*ALTER\s+TABLE\s+(?P<table>{_IDENT}(?:\.{_IDENT})?)\s*"
    r"(?:PARTITION\s*\((?P<spec>[^)]*)\)\s*)?"
    r"COMPACT\s+(?P<quote>['\"])(?P<type>[^'\"]*)(?P=quote)\s*;?\s*$",
    re.IGNORECASE | re.DOTALL,
)
_SPEC_ITEM: Final = re.compile(
    r"^\s*(?P<key>[A-Za-z_][A-Za-z0-9_]*)\s*=\s*(?:'(?P<s>[^']*)'|\"(?P<d>[^\"]*)\"|(?P<n>-?\d+))\s*$"
)
_TYPES: Final = ("minor", "major")


@dataclass(frozen=True, slots=True)
class CompactRequest:
    """One manual compaction: table, partition spec in the statement's order, type."""

    table: str
    partition_spec: tuple[tuple[str, str], ...]
    compaction_type: str

    @property
    def partition(self) -> str | None:
        """Hive's partition name ``k=v/k2=v2`` (unescaped), or None."""
        return "/".join(f"{k}={v}" for k, v in self.partition_spec) or None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (XCom)."""
        return {"table": self.table, "partition": self.partition, "compaction_type": self.compaction_type}


def _type(statement: str, text: str) -> str:
    kind = text.strip().lower()
    if kind not in _TYPES:
        raise InvalidCompactStatementError(statement, f"compaction type {text!r} is not 'minor' or 'major'")
    return kind


def _table(statement: str, text: str) -> str:
    name = text.replace("`", "").strip().lower()
    if not re.fullmatch(r"[a-z_][a-z0-9_]*(\.[a-z_][a-z0-9_]*)?", name):
        raise InvalidCompactStatementError(statement, f"table name {text!r} is not db.table or table")
    return name if "." in name else f"default.{name}"


def parse_partition_name(statement: str, text: str) -> tuple[tuple[str, str], ...]:
    """``k=v/k2=v2`` or ``k='v', k2='v2'`` into (key, value) pairs."""
    separator = "/" if "/" in text or "," not in text else ","
    spec = []
    for item in text.split(separator):
        match = _SPEC_ITEM.match(item) or re.match(
            r"^\s*(?P<key>[A-Za-z_][A-Za-z0-9_]*)=(?P<s>[^=]+?)\s*$", item
        )
        if match is None:
            raise InvalidCompactStatementError(
                statement, f"partition spec item {item.strip()!r} is not k='v'"
            )
        value = next(v for v in (match.groupdict().get(g) for g in ("s", "d", "n")) if v is not None)
        spec.append((match.group("key").lower(), value))
    keys = [k for k, _ in spec]
    if len(set(keys)) != len(keys):
        raise InvalidCompactStatementError(statement, f"partition key repeated in {text!r}")
    return tuple(spec)


def parse_compact_statement(statement: str) -> CompactRequest:
    """Parse Hive's ``ALTER TABLE ... [PARTITION (...)] COMPACT 'type'`` statement.

    Raises:
        InvalidCompactStatementError: not that statement, a bad table name, spec or type.
    """
    match = _STATEMENT.match(statement or "")
    if match is None:
        raise InvalidCompactStatementError(statement, "it is not an ALTER TABLE ... COMPACT statement")
    spec = parse_partition_name(statement, match.group("spec")) if match.group("spec") is not None else ()
    return CompactRequest(
        _table(statement, match.group("table")), spec, _type(statement, match.group("type"))
    )


def request_from_params(params: dict[str, Any]) -> CompactRequest:
    """The request of the compaction DAG's form: ``statement``, or ``table`` + ``partition`` + ``type``.

    Raises:
        InvalidCompactStatementError: neither given, both given, or an invalid value.
    """
    statement = (params.get("statement") or "").strip()
    table = (params.get("table") or "").strip()
    if statement and table:
        raise InvalidCompactStatementError(
            statement, f"give either a statement or a table (got table {table!r} too)"
        )
    if statement:
        return parse_compact_statement(statement)
    if not table:
        raise InvalidCompactStatementError("", "no statement and no table")
    what = f"table={table!r} type={params.get('type')!r}"
    partition = (params.get("partition") or "").strip()
    spec = parse_partition_name(what, partition) if partition else ()
    return CompactRequest(_table(what, table), spec, _type(what, str(params.get("type") or "")))
