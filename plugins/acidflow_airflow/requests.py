"""Manual compaction requests: ``ALTER TABLE db.t [PARTITION (k='v', ...)] COMPACT 'minor'|'major'|'rebalance'``.

A rebalance may add ``CLUSTERED INTO n BUCKETS`` and ``ORDER BY c [ASC|DESC], ..`` (Hive 4); the
form's ``buckets`` and ``order_by`` fields say the same. The ORDER BY columns are checked against
the table by ``operators.validate_targets``.

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
    r"COMPACT\s+(?P<quote>['\"])(?P<type>[^'\"]*)(?P=quote)(?P<clauses>.*?)\s*;?\s*$",
    re.IGNORECASE | re.DOTALL,
)
_SPEC_ITEM: Final = re.compile(
    r"^\s*(?P<key>[A-Za-z_][A-Za-z0-9_]*)\s*=\s*(?:'(?P<s>[^']*)'|\"(?P<d>[^\"]*)\"|(?P<n>-?\d+))\s*$"
)
_TYPES: Final = ("minor", "major", "rebalance")
_CLAUSE: Final = re.compile(
    r"\s*(?:CLUSTERED\s+INTO\s+(?P<buckets>\S+)\s+BUCKETS|ORDER\s+BY\s+(?P<order>(?:(?!\s+CLUSTERED\s).)+))",
    re.IGNORECASE | re.DOTALL,
)


@dataclass(frozen=True, slots=True)
class CompactRequest:
    """One manual compaction: table, partition spec in the statement's order, type."""

    table: str
    partition_spec: tuple[tuple[str, str], ...]
    compaction_type: str
    number_of_buckets: int = 0
    order_by: str | None = None

    @property
    def partition(self) -> str | None:
        """Hive's partition name ``k=v/k2=v2`` (unescaped), or None."""
        return "/".join(f"{k}={v}" for k, v in self.partition_spec) or None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (XCom)."""
        data: dict[str, Any] = {
            "table": self.table,
            "partition": self.partition,
            "compaction_type": self.compaction_type,
        }
        if self.number_of_buckets:
            data["number_of_buckets"] = self.number_of_buckets
        if self.order_by:
            data["order_by"] = self.order_by
        return data


def _type(statement: str, text: str) -> str:
    kind = text.strip().lower()
    if kind not in _TYPES:
        raise InvalidCompactStatementError(
            statement, f"compaction type {text!r} is not 'minor', 'major' or 'rebalance'"
        )
    return kind


def _buckets(statement: str, value: object) -> int:
    text = str(value).strip()
    if not text.isdigit() or not 1 <= int(text) <= 4096:
        raise InvalidCompactStatementError(
            statement, f"number of buckets {value!r} is not an integer from 1 to 4096"
        )
    return int(text)


def _rebalance_clauses(statement: str, kind: str, text: str) -> tuple[int, str | None]:
    number_of_buckets, order_by, position = 0, None, 0
    text = text.strip()
    while position < len(text):
        clause = _CLAUSE.match(text, position)
        if clause is None or clause.end() == position:
            raise InvalidCompactStatementError(
                statement, f"{text[position:].strip()!r} is not CLUSTERED INTO n BUCKETS or ORDER BY ..."
            )
        if clause.group("buckets") is not None:
            number_of_buckets = _buckets(statement, clause.group("buckets"))
        else:
            order_by = "ORDER BY " + clause.group("order").strip()
        position = clause.end()
    if kind != "rebalance" and (number_of_buckets or order_by):
        raise InvalidCompactStatementError(
            statement, "CLUSTERED INTO n BUCKETS and ORDER BY go only with COMPACT 'rebalance'"
        )
    return number_of_buckets, order_by


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
    kind = _type(statement, match.group("type"))
    number_of_buckets, order_by = _rebalance_clauses(statement, kind, match.group("clauses") or "")
    return CompactRequest(_table(statement, match.group("table")), spec, kind, number_of_buckets, order_by)


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
    kind = _type(what, str(params.get("type") or ""))
    buckets = params.get("buckets")
    order_by = (params.get("order_by") or "").strip()
    number_of_buckets = 0 if buckets in (None, "", 0) else _buckets(what, buckets)
    if kind != "rebalance" and (number_of_buckets or order_by):
        raise InvalidCompactStatementError(what, "buckets and order_by go only with type 'rebalance'")
    if order_by and not re.match(r"(?i)\s*ORDER\s+BY\s", order_by):
        order_by = "ORDER BY " + order_by
    return CompactRequest(_table(what, table), spec, kind, number_of_buckets, order_by or None)
