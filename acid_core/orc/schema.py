"""The ACID event schema: Hive types, their Arrow and ORC forms, and detection of event files.

Every file in a base, delta or delete delta directory holds *events*, one per row::

    struct<operation:int,               0 insert, 1 update (legacy, pre split-update), 2 delete
           originalTransaction:bigint,  the row ID, part 1: write ID that first inserted the row
           bucket:int,                  the row ID, part 2: BucketCodec value (bucket, statement)
           rowId:bigint,                the row ID, part 3: position in (originalTransaction, bucket)
           currentTransaction:bigint,   write ID of this event
           row:struct<...>>             the table's columns; null for deletes

Column names and positions are Hive's ``OrcRecordUpdater`` constants (``OPERATION`` = 0 ...
``ROW`` = 5). Hive 3 query-based compaction writes the same columns with lower-case names
(``originaltransaction``, ``rowid``, ``currenttransaction``); ``is_acid_event_schema`` accepts both
and ``normalize_event_schema`` renames them to the canonical spelling.

A table's row columns are given as Hive types (``RowType``)::

    RowType.of([("a", "int"), ("name", "varchar(20)"), ("price", "decimal(10,2)")])
        .to_orc()    -> "struct<a:int,name:varchar(20),price:decimal(10,2)>"
        .to_arrow()  -> struct<a: int32, name: string, price: decimal128(10, 2)>

Hive type -> Arrow type: tinyint int8, smallint int16, int/integer int32, bigint int64, boolean bool,
float float32, double float64, string/varchar(n)/char(n) string, binary binary, decimal(p,s)
decimal128(p,s) (bare ``decimal`` is Hive's decimal(10,0)), date date32, timestamp timestamp[ns]
(what ``pyarrow.orc`` reads back), array<T> list<T>, map<K,V> map<K,V>, struct<...> struct.
varchar/char lengths survive only in the ORC type string, which is why the writer takes a
``RowType`` rather than an Arrow type.

The ``row__id`` virtual column that readers expose is ``struct<writeid:bigint, bucketid:int,
rowid:bigint>`` (Hive's ``RecordIdentifier`` as ``ROW__ID``).

Invariants: ``parse_hive_type(format_hive_type(t)) == t``; ``RowType.from_orc(rt.to_orc()) == rt``;
``normalize_event_schema(s)`` of an accepted schema has exactly ``EVENT_COLUMN_NAMES``.
Not here: reading or writing files (``reader``, ``writer``), decoding ``bucket`` (``bucket_codec``).
Errors: ``InvalidSchemaError`` (also ``ValueError``) names the bad type string or schema and what
was expected.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Final

import pyarrow as pa

from acid_core.errors import InvalidSchemaError

__all__ = [
    "OPERATION_INSERT",
    "OPERATION_UPDATE",
    "OPERATION_DELETE",
    "OPERATION",
    "ORIGINAL_TRANSACTION",
    "BUCKET",
    "ROW_ID",
    "CURRENT_TRANSACTION",
    "ROW",
    "EVENT_COLUMN_NAMES",
    "ROW_ID_COLUMN",
    "ROW_ID_TYPE",
    "HiveType",
    "RowType",
    "event_arrow_type",
    "event_orc_type",
    "event_schema",
    "format_hive_type",
    "hive_to_arrow",
    "is_acid_event_schema",
    "normalize_event_schema",
    "parse_hive_type",
    "row_schema",
]

OPERATION_INSERT: Final = 0
OPERATION_UPDATE: Final = 1
OPERATION_DELETE: Final = 2

OPERATION: Final = "operation"
ORIGINAL_TRANSACTION: Final = "originalTransaction"
BUCKET: Final = "bucket"
ROW_ID: Final = "rowId"
CURRENT_TRANSACTION: Final = "currentTransaction"
ROW: Final = "row"
EVENT_COLUMN_NAMES: Final = (OPERATION, ORIGINAL_TRANSACTION, BUCKET, ROW_ID, CURRENT_TRANSACTION, ROW)

ROW_ID_COLUMN: Final = "row__id"
ROW_ID_TYPE: Final = pa.struct(
    [pa.field("writeid", pa.int64()), pa.field("bucketid", pa.int32()), pa.field("rowid", pa.int64())]
)

# The Arrow types of the five key columns, as pyarrow.orc reads Hive's int/bigint.
_KEY_TYPES: Final = (pa.int32(), pa.int64(), pa.int32(), pa.int64(), pa.int64())

_PRIMITIVES: Final[Mapping[str, pa.DataType]] = {
    "tinyint": pa.int8(),
    "smallint": pa.int16(),
    "int": pa.int32(),
    "bigint": pa.int64(),
    "boolean": pa.bool_(),
    "float": pa.float32(),
    "double": pa.float64(),
    "string": pa.string(),
    "binary": pa.binary(),
    "date": pa.date32(),
    "timestamp": pa.timestamp("ns"),
}
_ALIASES: Final[Mapping[str, str]] = {"integer": "int"}
# Hive's limits: HiveVarchar.MAX_VARCHAR_LENGTH, HiveChar.MAX_CHAR_LENGTH, HiveDecimal.MAX_PRECISION.
_MAX_VARCHAR: Final = 65535
_MAX_CHAR: Final = 255
_MAX_PRECISION: Final = 38
_EXPECTED_TYPE: Final = (
    "a Hive type: tinyint, smallint, int, bigint, boolean, float, double, string, varchar(n), char(n), "
    "decimal(p,s), date, timestamp, binary, array<T>, map<K,V> or struct<name:T,...>"
)
_TOKEN: Final = re.compile(r"\s*(?:([A-Za-z0-9_$]+)|([<>(),:]))")
_NAME: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_$]*")


@dataclass(frozen=True, slots=True)
class HiveType:
    """A parsed Hive type.

    Attributes:
        name: the lower-case category: a primitive name, ``varchar``, ``char``, ``decimal``,
            ``array``, ``map`` or ``struct``.
        params: numeric parameters: (n,) for varchar/char, (precision, scale) for decimal.
        children: element types: (element,) for array, (key, value) for map, field types for struct.
        field_names: struct field names, in order (empty for other types).
    """

    name: str
    params: tuple[int, ...] = ()
    children: tuple[HiveType, ...] = ()
    field_names: tuple[str, ...] = ()

    def to_string(self) -> str:
        """The canonical type string, as ORC's ``TypeDescription.toString`` prints it."""
        return format_hive_type(self)

    def to_arrow(self) -> pa.DataType:
        """The Arrow type ``pyarrow.orc`` reads this type as."""
        return hive_to_arrow(self)


def _tokens(text: str) -> list[str]:
    tokens: list[str] = []
    position = 0
    stripped = text.rstrip()
    while position < len(stripped):
        match = _TOKEN.match(stripped, position)
        if match is None or match.end() == position:
            raise InvalidSchemaError(text, f"unexpected character at offset {position}", _EXPECTED_TYPE)
        tokens.append(match.group(1) or match.group(2))
        position = match.end()
    return tokens


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens = _tokens(text)
        self.position = 0

    def _fail(self, problem: str) -> InvalidSchemaError:
        return InvalidSchemaError(self.text, problem, _EXPECTED_TYPE)

    def _peek(self) -> str | None:
        return self.tokens[self.position] if self.position < len(self.tokens) else None

    def _next(self, what: str) -> str:
        token = self._peek()
        if token is None:
            raise self._fail(f"ends where {what} was expected")
        self.position += 1
        return token

    def _expect(self, symbol: str) -> None:
        token = self._next(repr(symbol))
        if token != symbol:
            raise self._fail(f"found {token!r} where {symbol!r} was expected")

    def _number(self, what: str) -> int:
        token = self._next(what)
        if not token.isdigit():
            raise self._fail(f"found {token!r} where {what} was expected")
        return int(token)

    def parse(self) -> HiveType:
        parsed = self._type()
        if self._peek() is not None:
            raise self._fail(f"unexpected {self._peek()!r} after the type")
        return parsed

    def _type(self) -> HiveType:
        word = self._next("a type name").lower()
        word = _ALIASES.get(word, word)
        if word in _PRIMITIVES:
            return HiveType(word)
        if word in ("varchar", "char"):
            self._expect("(")
            length = self._number("a length")
            self._expect(")")
            limit = _MAX_VARCHAR if word == "varchar" else _MAX_CHAR
            if not 1 <= length <= limit:
                raise self._fail(f"{word} length {length} is out of range 1..{limit}")
            return HiveType(word, (length,))
        if word == "decimal":
            return self._decimal()
        if word == "array":
            self._expect("<")
            element = self._type()
            self._expect(">")
            return HiveType("array", children=(element,))
        if word == "map":
            self._expect("<")
            key = self._type()
            self._expect(",")
            value = self._type()
            self._expect(">")
            return HiveType("map", children=(key, value))
        if word == "struct":
            return self._struct()
        raise self._fail(f"unknown type {word!r}")

    def _decimal(self) -> HiveType:
        # HiveDecimal defaults: decimal = decimal(10,0); decimal(p) = decimal(p,0).
        precision, scale = 10, 0
        if self._peek() == "(":
            self._expect("(")
            precision = self._number("a precision")
            if self._peek() == ",":
                self._expect(",")
                scale = self._number("a scale")
            self._expect(")")
        if not 1 <= precision <= _MAX_PRECISION or not 0 <= scale <= precision:
            raise self._fail(
                f"decimal({precision},{scale}) is out of range: precision 1..{_MAX_PRECISION}, "
                "scale 0..precision"
            )
        return HiveType("decimal", (precision, scale))

    def _struct(self) -> HiveType:
        self._expect("<")
        names: list[str] = []
        children: list[HiveType] = []
        while True:
            name = self._next("a field name")
            if not _NAME.fullmatch(name):
                raise self._fail(f"found {name!r} where a field name was expected")
            if name.lower() in (existing.lower() for existing in names):
                raise self._fail(f"duplicate field name {name!r} (Hive names are case-insensitive)")
            self._expect(":")
            names.append(name)
            children.append(self._type())
            token = self._next("',' or '>'")
            if token == ">":
                return HiveType("struct", children=tuple(children), field_names=tuple(names))
            if token != ",":
                raise self._fail(f"found {token!r} where ',' or '>' was expected")


def parse_hive_type(text: str) -> HiveType:
    """Parse a Hive (or ORC) type string such as ``map<string,array<decimal(10,2)>>``.

    Type names are case-insensitive; field names keep their case.

    Args:
        text: the type string.

    Returns:
        The parsed type.

    Raises:
        InvalidSchemaError: the string is not a Hive type, or a length/precision is out of range.

    >>> parse_hive_type("varchar(20)")
    HiveType(name='varchar', params=(20,), children=(), field_names=())
    """
    return _Parser(text).parse()


def format_hive_type(hive_type: HiveType) -> str:
    """The canonical type string (no spaces), the exact inverse of ``parse_hive_type``.

    >>> format_hive_type(parse_hive_type("Struct< a : INT, b: decimal >"))
    'struct<a:int,b:decimal(10,0)>'
    """
    name, params, children = hive_type.name, hive_type.params, hive_type.children
    if name in ("varchar", "char", "decimal"):
        return f"{name}({','.join(str(p) for p in params)})"
    if name == "array":
        return f"array<{format_hive_type(children[0])}>"
    if name == "map":
        return f"map<{format_hive_type(children[0])},{format_hive_type(children[1])}>"
    if name == "struct":
        fields = ",".join(
            f"{field}:{format_hive_type(child)}"
            for field, child in zip(hive_type.field_names, children, strict=True)
        )
        return f"struct<{fields}>"
    return name


def row_schema(columns: Iterable[tuple[str, str]]) -> pa.Schema:
    """The Arrow schema of a table's row columns ``(name, Hive type)``, in table order.

    It is what readers map files onto by position (``reader.scan(schema=...)``), as Hive does: the
    names come from the metastore, whatever the files call their columns (``_col0`` ...).

    >>> row_schema([("id", "int"), ("name", "varchar(10)")]).names
    ['id', 'name']
    """
    return pa.schema([pa.field(name, hive_to_arrow(parse_hive_type(kind))) for name, kind in columns])


def hive_to_arrow(hive_type: HiveType) -> pa.DataType:
    """The Arrow type for a Hive type (see the module docstring for the mapping)."""
    name, params, children = hive_type.name, hive_type.params, hive_type.children
    if name in _PRIMITIVES:
        return _PRIMITIVES[name]
    if name in ("varchar", "char"):
        return pa.string()
    if name == "decimal":
        return pa.decimal128(params[0], params[1])
    if name == "array":
        return pa.list_(hive_to_arrow(children[0]))
    if name == "map":
        return pa.map_(hive_to_arrow(children[0]), hive_to_arrow(children[1]))
    return pa.struct(
        [
            pa.field(field, hive_to_arrow(child))
            for field, child in zip(hive_type.field_names, children, strict=True)
        ]
    )


@dataclass(frozen=True, slots=True)
class RowType:
    """The row columns of an ACID table: ``(name, Hive type)`` pairs, in table order.

    Build it with ``RowType.of`` (from pairs or a mapping) or ``RowType.from_orc`` (from the
    ``row`` struct of an event file's type string, or any ``struct<...>`` string).

    Attributes:
        columns: ``(name, canonical Hive type string)`` pairs.
    """

    columns: tuple[tuple[str, str], ...]

    @classmethod
    def of(cls, columns: Iterable[tuple[str, str]] | Mapping[str, str]) -> RowType:
        """Validate and canonicalize row columns.

        Args:
            columns: ``(name, hive_type)`` pairs or a ``{name: hive_type}`` mapping, in table order.

        Raises:
            InvalidSchemaError: no columns, a bad or duplicate name, or a bad type string.

        >>> RowType.of({"a": "INT", "b": "varchar(5)"}).to_orc()
        'struct<a:int,b:varchar(5)>'
        """
        pairs = list(columns.items() if isinstance(columns, Mapping) else columns)
        if not pairs:
            raise InvalidSchemaError("struct<>", "a row type needs at least one column", "(name, type) pairs")
        seen: set[str] = set()
        canonical: list[tuple[str, str]] = []
        for name, type_text in pairs:
            if not isinstance(name, str) or not _NAME.fullmatch(name):
                raise InvalidSchemaError(
                    str(name),
                    "not a valid column name",
                    "letters, digits, '_' or '$', not starting with a digit",
                )
            if name.lower() in seen:
                raise InvalidSchemaError(
                    name, "duplicate column name", "unique names (Hive is case-insensitive)"
                )
            seen.add(name.lower())
            canonical.append((name, format_hive_type(parse_hive_type(type_text))))
        return cls(tuple(canonical))

    @classmethod
    def from_orc(cls, type_string: str) -> RowType:
        """The row type of a ``struct<...>`` string; an event-file type string gives its ``row`` struct.

        Raises:
            InvalidSchemaError: the string is not a struct type.

        >>> RowType.from_orc("struct<operation:int,originalTransaction:bigint,bucket:int,rowId:bigint,"
        ...                  "currentTransaction:bigint,row:struct<i:int>>").columns
        (('i', 'int'),)
        """
        parsed = parse_hive_type(type_string)
        if parsed.name != "struct":
            raise InvalidSchemaError(type_string, f"a {parsed.name} type", "struct<name:type,...>")
        names = tuple(name.lower() for name in parsed.field_names)
        if names == tuple(name.lower() for name in EVENT_COLUMN_NAMES):
            parsed = parsed.children[5]
            if parsed.name != "struct":
                raise InvalidSchemaError(type_string, "the row column is not a struct", "row:struct<...>")
        return cls.of(
            (name, format_hive_type(child))
            for name, child in zip(parsed.field_names, parsed.children, strict=True)
        )

    @property
    def names(self) -> tuple[str, ...]:
        """The column names, in order."""
        return tuple(name for name, _ in self.columns)

    def to_orc(self) -> str:
        """``struct<name:type,...>`` as ORC writes it."""
        return "struct<" + ",".join(f"{name}:{type_text}" for name, type_text in self.columns) + ">"

    def to_arrow(self) -> pa.StructType:
        """The Arrow struct type of the ``row`` column."""
        return pa.struct(
            [pa.field(name, hive_to_arrow(parse_hive_type(type_text))) for name, type_text in self.columns]
        )


def event_orc_type(row_type: RowType) -> str:
    """The ORC type string of an event file for these row columns.

    >>> event_orc_type(RowType.of([("a", "bigint")]))
    'struct<operation:int,originalTransaction:bigint,bucket:int,rowId:bigint,currentTransaction:bigint,row:struct<a:bigint>>'
    """
    return (
        f"struct<{OPERATION}:int,{ORIGINAL_TRANSACTION}:bigint,{BUCKET}:int,{ROW_ID}:bigint,"
        f"{CURRENT_TRANSACTION}:bigint,{ROW}:{row_type.to_orc()}>"
    )


def event_schema(row_type: RowType) -> pa.Schema:
    """The Arrow schema of event batches (all columns nullable, as ORC reads them back)."""
    return pa.schema(
        [pa.field(name, kind) for name, kind in zip(EVENT_COLUMN_NAMES[:5], _KEY_TYPES, strict=True)]
        + [pa.field(ROW, row_type.to_arrow())]
    )


def event_arrow_type(row_type: RowType) -> pa.StructType:
    """The event schema as one Arrow struct type (the top-level ORC struct)."""
    return pa.struct(list(event_schema(row_type)))


def _acid_problem(schema: pa.Schema) -> str | None:
    names = tuple(field.name.lower() for field in schema)
    if names != tuple(name.lower() for name in EVENT_COLUMN_NAMES):
        return f"columns {list(schema.names)!r}"
    for field, expected in zip(schema, _KEY_TYPES, strict=False):
        if field.type != expected:
            return f"column {field.name!r} has type {field.type}, not {expected}"
    if not pa.types.is_struct(schema.field(5).type):
        return f"column {schema.field(5).name!r} has type {schema.field(5).type}, not a struct"
    return None


def is_acid_event_schema(schema: pa.Schema) -> bool:
    """Whether an Arrow schema (as ``pyarrow.orc`` reads a file) is the ACID event schema.

    The six column names must be Hive's, in Hive's order, compared case-insensitively (so query-based
    compaction output with ``originaltransaction`` ... is accepted); the key columns must be int/bigint
    as in Hive and ``row`` a struct. Hive itself only compares the set of names
    (``OrcInputFormat.isOriginal``) and then reads by position; checking order and types as well
    means a schema this accepts can be read by position safely.
    """
    return _acid_problem(schema) is None


def normalize_event_schema(schema: pa.Schema) -> pa.Schema:
    """Rename the event columns to Hive's canonical camelCase names (the ``row`` fields are kept).

    Raises:
        InvalidSchemaError: the schema is not an ACID event schema (see ``is_acid_event_schema``).
    """
    problem = _acid_problem(schema)
    if problem is not None:
        raise InvalidSchemaError(
            str(schema.names),
            f"not an ACID event schema: {problem}",
            "struct<operation:int,originalTransaction:bigint,bucket:int,rowId:bigint,"
            "currentTransaction:bigint,row:struct<...>> (column names in any case)",
        )
    fields = [field.with_name(name) for field, name in zip(schema, EVENT_COLUMN_NAMES, strict=True)]
    normalized = pa.schema(fields)
    return normalized.with_metadata(schema.metadata) if schema.metadata else normalized
