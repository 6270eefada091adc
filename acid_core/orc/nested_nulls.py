"""Work around pyarrow's ORC writer losing nested struct values: null a null struct's children.

Measured with pyarrow 26.0.1 (the ORC C++ writer through Arrow's adapter): a struct column below
the top level (a struct inside a struct, a list or a map, as every user column of an ACID event
is inside ``row``) that holds null values whose children hold non-null placeholders (how
``pa.array`` and Arrow's kernels build them) is written so that every ORC reader, Java's and
C++'s, reads the following non-null values shifted up by one per null before them, and loses the
last ones::

    written  [None, {city: c1}, {city: c2}, None, {city: c4}]   row.addr, struct<city:string>
    read     [None, {city: ''}, {city: c1}, None, {city: c2}]

(the children's values are written for every row while their PRESENT stream has a value only
where the parent is not null). Any sliced struct array with nulls, at the top level too, is
written with its validity read from offset 0. :func:`with_struct_nulls_in_children` copies each
column that holds a null struct (at any depth) to offset 0 and makes the children of every null
struct null (``StructArray.flatten``); then the same values are read back. A batch without a null
struct is returned as it is (the same object), so files of tables without one do not change.
``tests/acid_core/orc/test_nested_nulls.py`` shows the loss with pyarrow's bare writer and its
absence through acidflow's writers.

Finding files written that way (``acidflow check``): the writer's statistics count every child
value it was given, the placeholders under null structs included, while a reader sees a child
value only under a non-null struct. :class:`StructChildCounts` counts, stripe by stripe, the
non-null values a reader sees in each child of a struct; a child whose Footer ``numberOfValues``
is higher was written shifted. (A correct file of any writer, Hive's, Trino's or acidflow's since
the fix, has them equal: a child holds values only where its struct is not null.)
:func:`shifted_struct_columns` does it for one ORC stream and :func:`shifted_in` for an open
file (the only functions here that read; the others are pure, Arrow in, Arrow out). A compaction
refuses an input file that :func:`shifted_in` names (``compaction.bucket_merge``): it would read
the shifted values and write them into a base that passes the check, and the cleaner would then
delete the only file still holding the written values.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

import pyarrow as pa

if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import IO

    import pyarrow.orc as paorc

__all__ = [
    "StructChildCounts",
    "has_struct",
    "shifted_in",
    "shifted_struct_columns",
    "struct_column_ids",
    "with_struct_nulls_in_children",
]


def has_struct(data_type: pa.DataType) -> bool:
    """Whether ``data_type`` is a struct or holds one at any depth (in a list, a map, a struct)."""
    if pa.types.is_struct(data_type):
        return True
    return any(has_struct(data_type.field(i).type) for i in range(data_type.num_fields))


def _has_null_struct(array: pa.Array[Any]) -> bool:
    """Whether a struct value anywhere in ``array`` (its own values or nested ones) is null."""
    data_type = array.type
    if not has_struct(data_type):
        return False
    if pa.types.is_struct(data_type):
        struct = cast("pa.StructArray", array)
        return bool(array.null_count) or any(
            _has_null_struct(struct.field(i)) for i in range(data_type.num_fields)
        )
    if pa.types.is_map(data_type):
        mapped = cast("pa.MapArray[Any, Any]", array)
        return _has_null_struct(mapped.keys) or _has_null_struct(mapped.items)
    if pa.types.is_list(data_type) or pa.types.is_large_list(data_type):
        return _has_null_struct(cast("pa.ListArray[Any]", array).values)
    raise TypeError(f"an ORC column of Arrow type {data_type} holding structs is not supported")


def _rebuilt(array: pa.Array[Any]) -> pa.Array[Any]:
    """``array`` (offset 0 at every depth) with every null struct's children null, at every depth."""
    data_type = array.type
    if not has_struct(data_type):
        return array
    mask = array.is_null() if array.null_count else None
    if pa.types.is_struct(data_type):
        struct = cast("pa.StructArray", array)
        children = (
            struct.flatten() if array.null_count else [struct.field(i) for i in range(data_type.num_fields)]
        )
        return pa.StructArray.from_arrays(
            [_rebuilt(child) for child in children], fields=list(data_type), mask=mask
        )
    if pa.types.is_map(data_type):
        mapped = cast("pa.MapArray[Any, Any]", array)
        rebuilt_map: pa.Array[Any] = pa.MapArray.from_arrays(
            mapped.offsets,
            _rebuilt(mapped.keys),
            _rebuilt(mapped.items),
            type=data_type,
            mask=mask,  # type: ignore[call-overload]  # pyarrow's stubs lack mask on MapArray
        )
        return rebuilt_map
    listed = cast("pa.ListArray[Any]", array)  # a list or large list (_has_null_struct refused the rest)
    return type(listed).from_arrays(listed.offsets, _rebuilt(listed.values), type=data_type, mask=mask)


def with_struct_nulls_in_children(batch: pa.RecordBatch) -> pa.RecordBatch:
    """The batch as pyarrow's ORC writer writes right: see the module's docstring.

    Each column holding a null struct value (at any depth) is copied to offset 0 at every depth
    (``pa.concat_arrays``) and its null structs' children are made null. Other columns, and the
    whole batch when no struct value is null, are returned as they are (the same objects).
    """
    columns = list(batch.columns)
    changed = False
    for position, column in enumerate(columns):
        if _has_null_struct(column):
            columns[position] = _rebuilt(pa.concat_arrays([column]))
            changed = True
    return pa.RecordBatch.from_arrays(columns, schema=batch.schema) if changed else batch


def struct_column_ids(schema: pa.Schema) -> set[int]:
    """ORC column IDs of the struct columns below the root (pre-order: the top-level columns from 1)."""
    ids: set[int] = set()

    def visit(data_type: pa.DataType, column_id: int) -> int:
        if pa.types.is_struct(data_type):
            ids.add(column_id)
        child_id = column_id + 1
        if pa.types.is_map(data_type):  # ORC: key and value (Arrow's one field is their entries struct)
            map_type = cast("pa.MapType[Any, Any]", data_type)
            return visit(map_type.item_type, visit(map_type.key_type, child_id))
        for i in range(data_type.num_fields):
            child_id = visit(data_type.field(i).type, child_id)
        return child_id

    column_id = 1
    for field in schema:
        column_id = visit(field.type, column_id)
    return ids


class StructChildCounts:
    """Non-null values a reader sees in each child of a struct column, by ORC column ID.

    Column IDs are ORC's pre-order numbering (0 the root struct, 1.. the top-level columns and their
    descendants). Feed every stripe (:meth:`add`), then compare with the Footer (:meth:`shifted`).
    """

    def __init__(self) -> None:
        self.seen: dict[int, int] = {}
        self.names: dict[int, str] = {}

    def add(self, batch: pa.RecordBatch) -> None:
        """Count one stripe's (or batch's) values."""
        column_id = 1
        for name, column in zip(batch.schema.names, batch.columns, strict=True):
            column_id = self._visit(column, name, column_id)

    def _visit(self, array: pa.Array[Any], name: str, column_id: int) -> int:
        """Count below ``array`` (column ``column_id``); return the next column ID after its subtree."""
        data_type = array.type
        child_id = column_id + 1
        if pa.types.is_struct(data_type):
            # flatten(): each child with the struct's nulls applied, as a reader returns it.
            for field, child in zip(data_type, cast("pa.StructArray", array).flatten(), strict=True):
                path = f"{name}.{field.name}"
                self.names[child_id] = path
                self.seen[child_id] = self.seen.get(child_id, 0) + len(child) - child.null_count
                child_id = self._visit(child, path, child_id)
        elif pa.types.is_map(data_type):
            mapped = cast("pa.MapArray[Any, Any]", array)
            child_id = self._visit(mapped.keys, f"{name}.key", child_id)
            child_id = self._visit(mapped.items, f"{name}.value", child_id)
        elif pa.types.is_list(data_type) or pa.types.is_large_list(data_type):
            child_id = self._visit(cast("pa.ListArray[Any]", array).flatten(), f"{name}.element", child_id)
        elif data_type.num_fields:
            raise TypeError(f"an ORC column of Arrow type {data_type} is not supported")
        return child_id

    def shifted(self, footer_counts: Sequence[tuple[int, bool]]) -> list[str]:
        """Struct children whose Footer counts more values than a reader sees: written shifted."""
        return [
            self.names[column_id]
            for column_id in sorted(self.seen)
            if column_id < len(footer_counts) and footer_counts[column_id][0] > self.seen[column_id]
        ]


def shifted_struct_columns(stream: IO[bytes]) -> list[str] | None:
    """The struct children of an ORC file that were written shifted; None if it is not ORC.

    Reads the Footer; decodes the stripes only when a struct column has nulls.
    """
    import pyarrow.orc as paorc

    try:
        orc_file = paorc.ORCFile(stream)
    except (pa.ArrowInvalid, pa.ArrowIOError, OSError):
        return None
    return shifted_in(orc_file)


def shifted_in(orc_file: paorc.ORCFile, *, liborc_only: bool = False) -> list[str]:
    """The struct children of an open ORC file that were written shifted (see the module docstring).

    Args:
        orc_file: the file, opened (its tail is in memory).
        liborc_only: look only at files the ORC C++ library wrote (the Footer's ``writer``): the
            only writer known to shift. Files of Java's ORC (Hive, Spark), Trino and others are
            then passed without decoding a stripe.
    """
    from acid_core.orc.orc_tail import ORC_CPP_WRITER, column_value_counts, footer_writer

    tail = cast("bytes", orc_file.reader.serialized_file_tail())  # pyarrow's stub says int
    if liborc_only and footer_writer(tail) != ORC_CPP_WRITER:
        return []
    footer = column_value_counts(tail)
    if not any(footer[c][1] for c in struct_column_ids(orc_file.schema) if c < len(footer)):
        return []  # no null struct value: nothing can be shifted, no stripe is decoded
    counts = StructChildCounts()
    for stripe in range(orc_file.nstripes):
        counts.add(orc_file.read_stripe(stripe))
    return counts.shifted(footer)
