"""ALTER TABLE SET/UNSET TBLPROPERTIES planning, against Hive's rules.

Expected values come from Hive: ``TransactionalValidationListener.handleAlterTableTransactionalProp``
(2.3: 'transactional'='true' cannot be unset, 'transactional_properties' cannot be altered, an
external table cannot be declared transactional), ``DDLSemanticAnalyzer.analyzeAlterTableProps``
(UNSET of a missing key without IF EXISTS: ALTER_TBL_UNSET_NON_EXIST_PROPERTY; numRows and
rawDataSize must be longs) and the initiator's parsing of ``compactorthreshold.*`` overrides.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from acid_core.errors import (
    InvalidCompactionConfigError,
    InvalidTablePropertyError,
    NoSuchTablePropertyError,
)
from acid_core.table_properties import (
    TablePropertiesChange,
    plan_set_table_properties,
    plan_unset_table_properties,
)

ACID = {"transactional": "true", "bucketing_version": "2"}
PLAIN = {"bucketing_version": "2"}
THRESHOLD = "compactorthreshold.hive.compactor.delta.num.threshold"


@pytest.mark.parametrize(
    ("current", "given", "external", "after"),
    [
        (ACID, {"NO_AUTO_COMPACTION": "true"}, False, {**ACID, "no_auto_compaction": "true"}),
        (
            {**ACID, "NO_AUTO_COMPACTION": "true"},
            {"no_auto_compaction": "FALSE"},
            False,
            {**ACID, "no_auto_compaction": "FALSE"},
        ),
        (
            ACID,
            {THRESHOLD: "3", "compactorthreshold.hive.compactor.aborted.txn.time.threshold": "2h"},
            False,
            {**ACID, THRESHOLD: "3", "compactorthreshold.hive.compactor.aborted.txn.time.threshold": "2h"},
        ),
        (ACID, {"Transactional": "TRUE"}, False, {"transactional": "TRUE", "bucketing_version": "2"}),
        (PLAIN, {"transactional": "true"}, False, {**PLAIN, "transactional": "true"}),
        (
            PLAIN,
            {"transactional": "true", "transactional_properties": "insert_only"},
            False,
            {**PLAIN, "transactional": "true", "transactional_properties": "insert_only"},
        ),
        (
            {**ACID, "transactional_properties": "default"},
            {"transactional_properties": "DEFAULT"},
            False,
            {**ACID, "transactional_properties": "DEFAULT"},
        ),
        (PLAIN, {"numRows": "12", "comment": "x"}, True, {**PLAIN, "numrows": "12", "comment": "x"}),
    ],
    ids=[
        "no-auto-compaction",
        "replaces-every-spelling",
        "compactor-overrides",
        "transactional-true-again",
        "plain-to-acid",
        "plain-to-insert-only",
        "same-transactional-properties",
        "stats-on-external",
    ],
)
def test_plan_set_table_properties_valid_change_gives_hive_properties(current, given, external, after):
    change = plan_set_table_properties("db.t", current, given, external=external)
    assert change.apply(current) == after


@pytest.mark.parametrize(
    ("current", "given", "external", "error", "message"),
    [
        (
            ACID,
            {THRESHOLD: "ten"},
            False,
            InvalidCompactionConfigError,
            f"Invalid compaction setting {THRESHOLD}='ten'; expected a non-negative integer; hint: fix or unset "
            "it with ALTER TABLE ... SET/UNSET TBLPROPERTIES",
        ),
        (
            ACID,
            {"compactorthreshold.hive.compactor.delta.pct.threshold": "-1"},
            False,
            InvalidCompactionConfigError,
            "Invalid compaction setting compactorthreshold.hive.compactor.delta.pct.threshold='-1'; expected a "
            "non-negative number such as 0.1; hint: fix or unset it with ALTER TABLE ... SET/UNSET TBLPROPERTIES",
        ),
        (
            ACID,
            {"NO_AUTO_COMPACTION": "yes"},
            False,
            InvalidTablePropertyError,
            "Invalid table property no_auto_compaction='yes' for table db.t; expected 'true' or 'false'; hint: "
            "NO_AUTO_COMPACTION='true' stops automatic compaction of the table",
        ),
        (
            ACID,
            {"numRows": "many"},
            False,
            InvalidTablePropertyError,
            "Invalid table property numrows='many' for table db.t; expected an integer (a table statistic); "
            "hint: give the row or byte count",
        ),
        (
            ACID,
            {"transactional": "false"},
            False,
            InvalidTablePropertyError,
            "Invalid table property transactional='false' for table db.t; expected 'true': TBLPROPERTIES with "
            "'transactional'='true' cannot be unset; hint: a transactional table stays transactional (Hive's "
            "rule); copy the rows into a new table",
        ),
        (
            PLAIN,
            {"transactional": "false"},
            False,
            InvalidTablePropertyError,
            "Invalid table property transactional='false' for table db.t; expected 'true', or no value as before; "
            "hint: a transactional table stays transactional (Hive's rule); copy the rows into a new table",
        ),
        (
            PLAIN,
            {"transactional": "true"},
            True,
            InvalidTablePropertyError,
            "Invalid table property transactional='true' for table db.t; expected a managed table: db.t cannot "
            "be declared transactional because it's an external table; hint: transactional tables are managed "
            "tables (Hive's rule)",
        ),
        (
            ACID,
            {"transactional_properties": "insert_only"},
            False,
            InvalidTablePropertyError,
            "Invalid table property transactional_properties='insert_only' for table db.t; expected no value: "
            "TBLPROPERTIES with 'transactional_properties' cannot be altered after the table is created; hint: "
            "create a new table with the transactional_properties you need",
        ),
        (
            ACID,
            {"EXTERNAL": "TRUE"},
            False,
            InvalidTablePropertyError,
            "Invalid table property EXTERNAL='TRUE' for table db.t; expected no change of EXTERNAL (acidflow "
            "does not convert between managed and external tables); hint: CREATE [EXTERNAL] TABLE a new table "
            "and INSERT .. SELECT the rows into it",
        ),
    ],
    ids=[
        "threshold-not-integer",
        "pct-negative",
        "no-auto-compaction-not-boolean",
        "stats-not-integer",
        "acid-to-plain",
        "plain-transactional-false",
        "external-to-acid",
        "transactional-properties-changed",
        "external-flag",
    ],
)
def test_plan_set_table_properties_refused_change_raises(current, given, external, error, message):
    with pytest.raises(error) as raised:
        plan_set_table_properties("db.t", current, given, external=external)
    assert str(raised.value) == message


def test_plan_unset_table_properties_removes_every_spelling():
    current = {**ACID, "NO_AUTO_COMPACTION": "true", "no_auto_compaction": "true", THRESHOLD: "3"}

    change = plan_unset_table_properties("db.t", current, ["No_Auto_Compaction", THRESHOLD])

    assert change.apply(current) == ACID


def test_plan_unset_table_properties_missing_key_raises_unless_if_exists():
    with pytest.raises(NoSuchTablePropertyError) as raised:
        plan_unset_table_properties("db.t", ACID, ["nope"])
    assert str(raised.value) == (
        "No table property 'nope' in table db.t; expected one of ['bucketing_version', 'transactional']; "
        "hint: ALTER TABLE t UNSET TBLPROPERTIES IF EXISTS (..) ignores missing keys, as in Hive"
    )
    assert plan_unset_table_properties("db.t", ACID, ["nope"], if_exists=True) == TablePropertiesChange(
        "db.t"
    )


@pytest.mark.parametrize("key", ["transactional", "TRANSACTIONAL"], ids=["lower", "upper"])
def test_plan_unset_table_properties_transactional_of_acid_table_raises(key):
    with pytest.raises(InvalidTablePropertyError, match=r"'transactional'='true' cannot be unset"):
        plan_unset_table_properties("db.t", ACID, [key])


def test_plan_unset_table_properties_external_flag_raises():
    with pytest.raises(InvalidTablePropertyError, match=r"no change of EXTERNAL"):
        plan_unset_table_properties("db.t", {"EXTERNAL": "TRUE"}, ["external"])


_KEYS = st.from_regex(r"[a-z][a-z0-9_.]{0,12}", fullmatch=True).filter(
    lambda k: (
        k not in {"transactional", "transactional_properties", "external", "no_auto_compaction"}
        and not k.startswith("compactorthreshold.")
        and k not in {"numrows", "rawdatasize"}
    )
)


@given(
    current=st.dictionaries(_KEYS, st.text(max_size=5), max_size=5),
    given_properties=st.dictionaries(_KEYS, st.text(max_size=5), min_size=1, max_size=5),
)
def test_plan_set_then_unset_table_properties_restores_the_other_keys(current, given_properties):
    after_set = plan_set_table_properties("db.t", current, given_properties).apply(current)
    assert {k: after_set[k] for k in given_properties} == given_properties

    restored = plan_unset_table_properties("db.t", after_set, list(given_properties)).apply(after_set)

    assert restored == {k: v for k, v in current.items() if k not in given_properties}
