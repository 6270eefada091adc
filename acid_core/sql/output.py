"""Print result sets as Hive's CLI shows them (``table``), as JSON lines, or as CSV.

::

    table   row__id                                         id  name   salary
            {"writeid":1,"bucketid":536870912,"rowid":0}    1   Jerry  5000
    jsonl   {"row__id":{"writeid":1,"bucketid":536870912,"rowid":0},"id":1,"name":"Jerry","salary":5000}
    csv     row__id,id,name,salary
            "{""writeid"":1,""bucketid"":536870912,""rowid"":0}",1,Jerry,5000

Structs (``row__id``), lists and maps print as compact JSON in ``table`` and ``csv``; nulls print
as ``NULL`` in ``table``, empty in ``csv``, ``null`` in ``jsonl``. Dates, timestamps and decimals
print as text (a decimal keeps its scale: ``12.50``).
Not here: running statements.
"""

from __future__ import annotations

import base64
import csv
import datetime
import decimal
import io
import json
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["OUTPUT_FORMATS", "format_rows"]

OUTPUT_FORMATS: Final = ("table", "jsonl", "csv")


def _jsonable(value: object) -> object:
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        # Arrow maps come back as lists of (key, value) tuples.
        if value and all(isinstance(v, tuple) and len(v) == 2 for v in value):
            return {str(k): _jsonable(v) for k, v in value}
        return [_jsonable(v) for v in value]
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, datetime.datetime):
        return value.isoformat(sep=" ")
    if isinstance(value, datetime.date | datetime.time):
        return value.isoformat()
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    return value


def _text(value: object, null: str) -> str:
    if value is None:
        return null
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict | list | tuple):
        return json.dumps(_jsonable(value), separators=(",", ":"))
    shown = _jsonable(value)
    return shown if isinstance(shown, str) else str(shown)


def format_rows(rows: pa.Table, output_format: str = "table") -> str:
    """Render a result set; the text ends with a newline unless there is nothing to print.

    >>> import pyarrow as pa
    >>> print(format_rows(pa.table({"id": [1, None]}), "jsonl"), end="")
    {"id":1}
    {"id":null}
    """
    names = rows.column_names
    records = rows.to_pylist()
    if output_format == "jsonl":
        return "".join(
            json.dumps({n: _jsonable(r[n]) for n in names}, separators=(",", ":")) + "\n" for r in records
        )
    if output_format == "csv":
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow(names)
        for record in records:
            writer.writerow([_text(record[n], "") for n in names])
        return buffer.getvalue()
    cells = [list(names)] + [[_text(record[n], "NULL") for n in names] for record in records]
    widths = [max(len(row[i]) for row in cells) for i in range(len(names))]
    return "".join(
        "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() + "\n" for row in cells
    )
