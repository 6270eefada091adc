"""The ACID event schema against Hive's own files and against ORC type strings read by pyorc/pyarrow.

Expected values come from Hive (OrcRecordUpdater's column names and operation codes, the type
strings of the real Hive files in tests/data/hive-real as pyorc reads them) and from pyarrow.orc
reading files that pyorc wrote with a given ORC type (an independent Hive type -> Arrow oracle).
"""

from __future__ import annotations

import io
from pathlib import Path

import pyarrow as pa
import pyarrow.orc as orc
import pyorc
import pytest
from hypothesis import given
from hypothesis import strategies as st

from acid_core.errors import InvalidSchemaError
from acid_core.orc.schema import (
    EVENT_COLUMN_NAMES,
    OPERATION_DELETE,
    OPERATION_INSERT,
    OPERATION_UPDATE,
    ROW_ID_COLUMN,
    ROW_ID_TYPE,
    HiveType,
    RowType,
    event_arrow_type,
    event_orc_type,
    event_schema,
    format_hive_type,
    hive_to_arrow,
    is_acid_event_schema,
    normalize_event_schema,
    parse_hive_type,
)

HIVE_REAL = Path(__file__).resolve().parents[2] / "data" / "hive-real"
ACID5K = HIVE_REAL / "orc_acid5k" / "delta_0000012_0000012_0000" / "bucket_00000"
IMPALA_LOWER = HIVE_REAL / "impala_compacted_no_acid_version" / "base_0000001" / "bucket_00000"
PLAIN_IN_DELTA = HIVE_REAL / "trino_plain_file_in_delta" / "delta_0000001_0000001_0000" / "bucket_00000"
NATION_DELETE = (
    HIVE_REAL
    / "trino_original_file_with_delete_delta"
    / "delete_delta_10000001_10000001_0000"
    / "bucket_00000"
)


def _orc_type_string(path: Path) -> str:
    with path.open("rb") as f:
        return str(pyorc.Reader(f).schema)


# --- constants, from Hive's OrcRecordUpdater --------------------------------------------------------


def test_operation_codes_are_hives():
    # OrcRecordUpdater.INSERT_OPERATION = 0, UPDATE_OPERATION = 1, DELETE_OPERATION = 2
    assert (OPERATION_INSERT, OPERATION_UPDATE, OPERATION_DELETE) == (0, 1, 2)


def test_event_column_names_are_hives_in_field_order():
    # OrcRecordUpdater.OPERATION=0 ... ROW=5 and the *_FIELD_NAME constants
    assert EVENT_COLUMN_NAMES == (
        "operation",
        "originalTransaction",
        "bucket",
        "rowId",
        "currentTransaction",
        "row",
    )


def test_row_id_virtual_column_is_writeid_bucketid_rowid():
    assert ROW_ID_COLUMN == "row__id"
    assert (
        pa.struct([("writeid", pa.int64()), ("bucketid", pa.int32()), ("rowid", pa.int64())]) == ROW_ID_TYPE
    )


# --- Hive type strings --------------------------------------------------------------------------------

CANONICAL_CASES = [
    ("int", "int"),
    ("INT", "int"),
    ("integer", "int"),
    ("  bigint ", "bigint"),
    ("tinyint", "tinyint"),
    ("smallint", "smallint"),
    ("boolean", "boolean"),
    ("float", "float"),
    ("double", "double"),
    ("string", "string"),
    ("varchar(20)", "varchar(20)"),
    ("VarChar( 65535 )", "varchar(65535)"),
    ("char(1)", "char(1)"),
    ("char(255)", "char(255)"),
    ("decimal", "decimal(10,0)"),
    ("decimal(7)", "decimal(7,0)"),
    ("decimal(38, 38)", "decimal(38,38)"),
    ("date", "date"),
    ("timestamp", "timestamp"),
    ("binary", "binary"),
    ("array<int>", "array<int>"),
    ("map<string,array<decimal(10,2)>>", "map<string,array<decimal(10,2)>>"),
    ("struct< a : INT, Bb: struct<c:string> >", "struct<a:int,Bb:struct<c:string>>"),
]


@pytest.mark.parametrize(("text", "canonical"), CANONICAL_CASES, ids=[c[0].strip() for c in CANONICAL_CASES])
def test_parse_hive_type_canonical_form(text, canonical):
    parsed = parse_hive_type(text)
    assert format_hive_type(parsed) == canonical
    assert parse_hive_type(canonical) == parsed


BAD_TYPES = [
    ("", r"ends where a type name was expected"),
    ("text", r"unknown type 'text'"),
    ("uniontype<int,string>", r"unknown type 'uniontype'"),
    ("varchar", r"ends where '\(' was expected"),
    ("varchar(0)", r"varchar length 0 is out of range 1..65535"),
    ("varchar(65536)", r"varchar length 65536 is out of range 1..65535"),
    ("char(256)", r"char length 256 is out of range 1..255"),
    ("decimal(39,0)", r"decimal\(39,0\) is out of range"),
    ("decimal(5,6)", r"decimal\(5,6\) is out of range"),
    ("array<int", r"ends where '>' was expected"),
    ("map<int>", r"found '>' where ',' was expected"),
    ("struct<a:int,A:string>", r"duplicate field name 'A'"),
    ("struct<1a:int>", r"found '1a' where a field name was expected"),
    ("int int", r"unexpected 'int' after the type"),
    ("int;", r"unexpected character at offset 3"),
]


@pytest.mark.parametrize(("text", "message"), BAD_TYPES, ids=[c[0] or "empty" for c in BAD_TYPES])
def test_parse_hive_type_bad_input_raises(text, message):
    with pytest.raises(InvalidSchemaError, match=message) as caught:
        parse_hive_type(text)
    assert isinstance(caught.value, ValueError)
    assert f"Invalid schema {text!r}" in str(caught.value)


def test_parse_hive_type_error_message_is_complete():
    with pytest.raises(InvalidSchemaError) as caught:
        parse_hive_type("text")
    assert str(caught.value) == (
        "Invalid schema 'text': unknown type 'text'; expected a Hive type: tinyint, smallint, int, bigint, "
        "boolean, float, double, string, varchar(n), char(n), decimal(p,s), date, timestamp, binary, "
        "array<T>, map<K,V> or struct<name:T,...>"
    )


_PRIMITIVE_TEXTS = st.sampled_from(
    [
        "tinyint",
        "smallint",
        "int",
        "bigint",
        "boolean",
        "float",
        "double",
        "string",
        "date",
        "timestamp",
        "binary",
    ]
)
_PARAMETRIZED = st.one_of(
    st.integers(1, 65535).map(lambda n: f"varchar({n})"),
    st.integers(1, 255).map(lambda n: f"char({n})"),
    st.integers(1, 38).flatmap(lambda p: st.integers(0, p).map(lambda s: f"decimal({p},{s})")),
)
_FIELD_NAMES = st.from_regex(r"[a-z_][a-z0-9_]{0,6}", fullmatch=True)


def _compound(children: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    structs = st.lists(
        st.tuples(_FIELD_NAMES, children), min_size=1, max_size=4, unique_by=lambda f: f[0]
    ).map(lambda fields: "struct<" + ",".join(f"{n}:{t}" for n, t in fields) + ">")
    return st.one_of(
        children.map(lambda t: f"array<{t}>"),
        st.tuples(_PRIMITIVE_TEXTS, children).map(lambda kv: f"map<{kv[0]},{kv[1]}>"),
        structs,
    )


HIVE_TYPE_TEXTS = st.recursive(st.one_of(_PRIMITIVE_TEXTS, _PARAMETRIZED), _compound, max_leaves=8)


@given(HIVE_TYPE_TEXTS)
def test_format_parse_round_trip(text):
    # The generated strings are already canonical: formatting the parse gives them back exactly.
    assert format_hive_type(parse_hive_type(text)) == text


# --- Hive type -> Arrow, checked against pyarrow.orc reading a file pyorc wrote with that ORC type ------

ARROW_CASES = [
    "tinyint",
    "smallint",
    "int",
    "bigint",
    "boolean",
    "float",
    "double",
    "string",
    "varchar(10)",
    "char(3)",
    "decimal(10,2)",
    "decimal(38,0)",
    "date",
    "timestamp",
    "binary",
    "array<bigint>",
    "map<string,int>",
    "struct<x:int,y:array<string>>",
]


@pytest.mark.parametrize("text", ARROW_CASES)
def test_hive_to_arrow_matches_what_pyarrow_orc_reads(text):
    buffer = io.BytesIO()
    writer = pyorc.Writer(buffer, f"struct<c:{text}>")
    writer.close()
    read_type = orc.ORCFile(pa.BufferReader(buffer.getvalue())).schema.field("c").type
    assert hive_to_arrow(parse_hive_type(text)) == read_type


def test_hive_type_methods_delegate():
    parsed = parse_hive_type("decimal(9,3)")
    assert parsed == HiveType("decimal", (9, 3))
    assert parsed.to_string() == "decimal(9,3)"
    assert parsed.to_arrow() == pa.decimal128(9, 3)


# --- RowType ------------------------------------------------------------------------------------------


def test_row_type_of_pairs_and_mapping_are_equal_and_canonical():
    from_pairs = RowType.of([("a", "INT"), ("Name", "varchar(20)"), ("price", "decimal")])
    from_mapping = RowType.of({"a": "int", "Name": "VARCHAR(20)", "price": "decimal(10,0)"})
    assert from_pairs == from_mapping
    assert from_pairs.columns == (("a", "int"), ("Name", "varchar(20)"), ("price", "decimal(10,0)"))
    assert from_pairs.names == ("a", "Name", "price")
    assert from_pairs.to_orc() == "struct<a:int,Name:varchar(20),price:decimal(10,0)>"
    assert from_pairs.to_arrow() == pa.struct(
        [("a", pa.int32()), ("Name", pa.string()), ("price", pa.decimal128(10, 0))]
    )


@pytest.mark.parametrize(
    ("columns", "message"),
    [
        ([], r"a row type needs at least one column"),
        ([("a", "int"), ("A", "string")], r"Invalid schema 'A': duplicate column name"),
        ([("a b", "int")], r"Invalid schema 'a b': not a valid column name"),
        ([("", "int")], r"Invalid schema '': not a valid column name"),
        ([("a", "text")], r"unknown type 'text'"),
    ],
    ids=["empty", "duplicate-ignoring-case", "space", "blank", "bad-type"],
)
def test_row_type_of_bad_columns_raises(columns, message):
    with pytest.raises(InvalidSchemaError, match=message):
        RowType.of(columns)


@pytest.mark.parametrize(
    ("path", "columns"),
    [
        (ACID5K, (("i", "int"), ("j", "int"), ("k", "int"))),
        (IMPALA_LOWER, (("i", "int"),)),
        (
            NATION_DELETE,
            (("n_nationkey", "int"), ("n_name", "string"), ("n_regionkey", "int"), ("n_comment", "string")),
        ),
    ],
    ids=["acid5k", "impala-lower-case", "trino-nation-delete"],
)
def test_row_type_from_orc_of_real_hive_files(path, columns):
    row_type = RowType.from_orc(_orc_type_string(path))
    assert row_type.columns == columns
    assert RowType.from_orc(row_type.to_orc()) == row_type


def test_row_type_from_orc_of_a_non_struct_raises():
    with pytest.raises(
        InvalidSchemaError, match=r"Invalid schema 'int': a int type; expected struct<name:type,...>"
    ):
        RowType.from_orc("int")


# --- the event schema ---------------------------------------------------------------------------------


def test_event_orc_type_equals_hives_file_type():
    # The exact type string Hive's writer put into acid5k.orc.
    assert event_orc_type(RowType.of([("i", "int"), ("j", "int"), ("k", "int")])) == _orc_type_string(ACID5K)
    assert _orc_type_string(ACID5K) == (
        "struct<operation:int,originalTransaction:bigint,bucket:int,rowId:bigint,currentTransaction:bigint,"
        "row:struct<i:int,j:int,k:int>>"
    )


def test_event_schema_equals_pyarrow_schema_of_hives_file():
    row_type = RowType.of([("i", "int"), ("j", "int"), ("k", "int")])
    assert event_schema(row_type) == orc.ORCFile(str(ACID5K)).schema
    assert event_arrow_type(row_type) == pa.struct(list(orc.ORCFile(str(ACID5K)).schema))


@pytest.mark.parametrize(
    ("path", "expected"),
    [(ACID5K, True), (IMPALA_LOWER, True), (NATION_DELETE, True), (PLAIN_IN_DELTA, False)],
    ids=["acid5k", "impala-lower-case", "delete-delta", "plain-file"],
)
def test_is_acid_event_schema_of_real_files(path, expected):
    assert is_acid_event_schema(orc.ORCFile(str(path)).schema) is expected


def _schema(names, types=None):
    types = types or [
        pa.int32(),
        pa.int64(),
        pa.int32(),
        pa.int64(),
        pa.int64(),
        pa.struct([("a", pa.int32())]),
    ]
    return pa.schema([pa.field(n, t) for n, t in zip(names, types, strict=True)])


@pytest.mark.parametrize(
    "schema",
    [
        _schema(
            ["operation", "originalTransaction", "bucket", "rowId", "currentTransaction"], [pa.int32()] * 5
        ),
        _schema(["operation", "bucket", "originalTransaction", "rowId", "currentTransaction", "row"]),
        _schema(
            ["operation", "originalTransaction", "bucket", "rowId", "currentTransaction", "row"],
            [pa.int64(), pa.int64(), pa.int32(), pa.int64(), pa.int64(), pa.struct([("a", pa.int32())])],
        ),
        _schema(
            ["operation", "originalTransaction", "bucket", "rowId", "currentTransaction", "row"],
            [pa.int32(), pa.int64(), pa.int32(), pa.int64(), pa.int64(), pa.int32()],
        ),
    ],
    ids=["five-columns", "reordered", "operation-bigint", "row-not-struct"],
)
def test_is_acid_event_schema_rejects_near_misses(schema):
    assert not is_acid_event_schema(schema)


def test_normalize_event_schema_renames_lower_case_names():
    lower = orc.ORCFile(str(IMPALA_LOWER)).schema
    assert lower.names[:5] == ["operation", "originaltransaction", "bucket", "rowid", "currenttransaction"]
    normalized = normalize_event_schema(lower)
    assert normalized.names == list(EVENT_COLUMN_NAMES)
    assert normalized.types == lower.types
    assert normalized == event_schema(RowType.of([("i", "int")]))


def test_normalize_event_schema_of_a_plain_file_raises():
    with pytest.raises(InvalidSchemaError) as caught:
        normalize_event_schema(orc.ORCFile(str(PLAIN_IN_DELTA)).schema)
    assert str(caught.value) == (
        "Invalid schema \"['id', 'data', 'comment']\": not an ACID event schema: columns ['id', 'data', 'comment']; "
        "expected struct<operation:int,originalTransaction:bigint,bucket:int,rowId:bigint,"
        "currentTransaction:bigint,row:struct<...>> (column names in any case)"
    )
