"""Plan ``ALTER TABLE t SET|UNSET TBLPROPERTIES``: the change, validated as Hive validates it.

::

    current TBLPROPERTIES ─┐
    SET ('k'='v', ..)      ─┼─> plan_set_table_properties / plan_unset_table_properties
    UNSET [IF EXISTS] (..) ─┘        └─> TablePropertiesChange(set_properties, unset)  (or an error)
                                         .apply(current) -> the new TBLPROPERTIES

Keys are matched case-insensitively (acidflow's CREATE TABLE stores them in lower case, Hive's
readers of ``NO_AUTO_COMPACTION`` and ``transactional`` ignore case): SET stores a key in lower
case and replaces every spelling of it; UNSET removes every spelling.

Rules (Hive's ``DDLSemanticAnalyzer.analyzeAlterTableProps`` and the metastore's
``TransactionalValidationListener``, plus the initiator's own checks):

- ``compactorthreshold.<hive setting>`` overrides must parse as the initiator parses them
  (``InitiatorConfig.with_table_properties``), so a bad threshold is refused here, not later by
  every initiator cycle; ``NO_AUTO_COMPACTION`` must be ``true`` or ``false`` (any case).
- ``numRows`` and ``rawDataSize`` must be integers (Hive: "AlterTable numRows failed with value").
- ``transactional``: once ``true`` it stays ``true`` (Hive: "TBLPROPERTIES with
  'transactional'='true' cannot be unset"); set to any other value it must equal the old one. A
  plain managed table may become transactional (Hive's conversion); an EXTERNAL one may not.
- ``transactional_properties`` of a table that already has ``transactional`` cannot change (Hive:
  "cannot be altered after the table is created").
- ``EXTERNAL`` is refused: acidflow does not turn a managed table into an external one or back
  (a managed table's DROP deletes its data, an external one's does not).
- UNSET of a key the table lacks, without IF EXISTS, raises (Hive's ALTER_TBL_UNSET_NON_EXIST_PROPERTY).

Invariants: pure (values in, values out); a change that is returned passes every rule above.
Not here: storing the change (``Metastore.alter_table_properties``), locks, parsing SQL.
Errors: ``InvalidCompactionConfigError`` for a bad compactor override, ``InvalidTablePropertyError``
for any other refused value or change, ``NoSuchTablePropertyError`` for UNSET of a missing key.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final

from acid_core.compaction.initiator import NO_AUTO_COMPACTION, InitiatorConfig
from acid_core.errors import InvalidTablePropertyError, NoSuchTablePropertyError

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

__all__ = [
    "TablePropertiesChange",
    "plan_set_table_properties",
    "plan_unset_table_properties",
]

_TRANSACTIONAL: Final = "transactional"
_TRANSACTIONAL_PROPERTIES: Final = "transactional_properties"
_EXTERNAL: Final = "external"
_STATS_KEYS: Final = frozenset({"numrows", "rawdatasize"})


@dataclass(frozen=True, slots=True)
class TablePropertiesChange:
    """What an ALTER TABLE SET/UNSET TBLPROPERTIES does to the stored properties.

    Attributes:
        table: ``db.table``.
        set_properties: keys (lower case) to store with their values.
        unset: stored keys to remove (every spelling of an unset or replaced key).
    """

    table: str
    set_properties: Mapping[str, str] = field(default_factory=dict)
    unset: tuple[str, ...] = ()

    def apply(self, current: Mapping[str, str]) -> dict[str, str]:
        """The properties after the change.

        >>> TablePropertiesChange("db.t", {"a": "1"}, ("A", "b")).apply({"A": "0", "b": "2", "c": "3"})
        {'c': '3', 'a': '1'}
        """
        removed = set(self.unset)
        return {k: v for k, v in current.items() if k not in removed} | dict(self.set_properties)


def _spellings(current: Mapping[str, str], key: str) -> tuple[str, ...]:
    return tuple(k for k in current if k.lower() == key.lower())


def _value(properties: Mapping[str, str], key: str) -> str | None:
    found = [v for k, v in properties.items() if k.lower() == key]
    return found[-1] if found else None


def _check_values(table: str, properties: Mapping[str, str]) -> None:
    """The values the initiator and Hive's analyzer check, for the keys being set."""
    InitiatorConfig().with_table_properties(properties)  # raises InvalidCompactionConfigError
    for key, value in properties.items():
        if key == NO_AUTO_COMPACTION and value.strip().lower() not in ("true", "false"):
            raise InvalidTablePropertyError(
                table,
                key,
                value,
                "'true' or 'false'",
                "NO_AUTO_COMPACTION='true' stops automatic compaction of the table",
            )
        if key in _STATS_KEYS:
            try:
                int(value.strip())
            except ValueError:
                raise InvalidTablePropertyError(
                    table, key, value, "an integer (a table statistic)", "give the row or byte count"
                ) from None


def _check_transition(
    table: str, before: Mapping[str, str], after: Mapping[str, str], external: bool
) -> None:
    """Hive's TransactionalValidationListener on the old and new properties, and acidflow's EXTERNAL rule."""
    if _value(before, _EXTERNAL) != _value(after, _EXTERNAL):
        raise InvalidTablePropertyError(
            table,
            "EXTERNAL",
            _value(after, _EXTERNAL),
            "no change of EXTERNAL (acidflow does not convert between managed and external tables)",
            "CREATE [EXTERNAL] TABLE a new table and INSERT .. SELECT the rows into it",
        )
    old, new = _value(before, _TRANSACTIONAL), _value(after, _TRANSACTIONAL)
    if new is not None and new.lower() == "true":
        if external:
            raise InvalidTablePropertyError(
                table,
                _TRANSACTIONAL,
                new,
                f"a managed table: {table} cannot be declared transactional because it's an external table",
                "transactional tables are managed tables (Hive's rule)",
            )
    elif (old or "").lower() != (new or "").lower() or (old is None) != (new is None):
        raise InvalidTablePropertyError(
            table,
            _TRANSACTIONAL,
            new,
            "'true': TBLPROPERTIES with 'transactional'='true' cannot be unset"
            if (old or "").lower() == "true"
            else f"'true', or {'no value' if old is None else repr(old)} as before",
            "a transactional table stays transactional (Hive's rule); copy the rows into a new table",
        )
    old_kind, new_kind = _value(before, _TRANSACTIONAL_PROPERTIES), _value(after, _TRANSACTIONAL_PROPERTIES)
    if old is not None and new_kind is not None and (old_kind or "").lower() != new_kind.lower():
        raise InvalidTablePropertyError(
            table,
            _TRANSACTIONAL_PROPERTIES,
            new_kind,
            f"{'no value' if old_kind is None else repr(old_kind)}: TBLPROPERTIES with "
            "'transactional_properties' cannot be altered after the table is created",
            "create a new table with the transactional_properties you need",
        )


def plan_set_table_properties(
    table: str, current: Mapping[str, str], properties: Mapping[str, str], *, external: bool = False
) -> TablePropertiesChange:
    """``ALTER TABLE table SET TBLPROPERTIES (properties)`` on a table with ``current`` properties.

    Args:
        table: ``db.table`` (for messages).
        current: the table's stored TBLPROPERTIES.
        properties: the statement's ``'k'='v'`` pairs.
        external: whether the table is EXTERNAL.

    Returns:
        The change: the keys in lower case, replacing every stored spelling.

    Raises:
        InvalidCompactionConfigError: a compactor override that does not parse.
        InvalidTablePropertyError: a value or a change that Hive (or acidflow) refuses.

    >>> plan_set_table_properties("db.t", {"NO_AUTO_COMPACTION": "true"}, {"No_Auto_Compaction": "false"})
    TablePropertiesChange(table='db.t', set_properties={'no_auto_compaction': 'false'}, unset=('NO_AUTO_COMPACTION',))
    """
    lowered = {key.lower(): value for key, value in properties.items()}
    _check_values(table, lowered)
    replaced = tuple(k for key in lowered for k in _spellings(current, key) if k != key)
    change = TablePropertiesChange(table, lowered, replaced)
    _check_transition(table, current, change.apply(current), external)
    return change


def plan_unset_table_properties(
    table: str, current: Mapping[str, str], keys: Iterable[str], *, if_exists: bool = False
) -> TablePropertiesChange:
    """``ALTER TABLE table UNSET TBLPROPERTIES [IF EXISTS] (keys)`` on a table with ``current`` properties.

    Raises:
        NoSuchTablePropertyError: a key the table lacks, without ``if_exists``.
        InvalidTablePropertyError: a change that Hive (or acidflow) refuses (``transactional``).

    >>> plan_unset_table_properties("db.t", {"a": "1", "b": "2"}, ["A"]).apply({"a": "1", "b": "2"})
    {'b': '2'}
    """
    unset: list[str] = []
    for key in keys:
        found = _spellings(current, key)
        if not found and not if_exists:
            raise NoSuchTablePropertyError(table, key, tuple(current))
        unset.extend(k for k in found if k not in unset)
    change = TablePropertiesChange(table, {}, tuple(unset))
    _check_transition(table, current, change.apply(current), external=False)
    return change
