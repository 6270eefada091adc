r"""Where a table may live and what acidflow may delete: pure rules over location and path strings.

::

    parse_location("hdfs://nn:8020/wh/db.db/t")        -> Location("hdfs", "nn:8020", "/wh/db.db/t")
    parse_location("/wh/t") == parse_location("file:///wh/t")  -> Location("file", "", "/wh/t")
    parse_location("data/t", cwd="/home/u")            -> Location("file", "", "/home/u/data/t")

    check_location(candidate, warehouse_root=.., occupants=..) refuses, naming the path:
        "/"  "hdfs://nn:8020/"  "s3://bucket"    a filesystem root
        "/wh"  "/"                               the warehouse root or an ancestor of it
        "/wh/db.db"  "/wh/t1"  "/wh/t1/p=1"      another database's, table's or partition's location
        "/wh" holding "/wh/t1"                   an ancestor of one of those
        "/wh/t1/x"                               inside another table's or partition's location
        "../x"  "/wh/../etc"                     a '..' component (relative or not)
        "foo://x/y"  "hdfs:/x"                   a scheme the filesystem layer does not serve
        "/wh/t\x00"                              a NUL character
        "data/t"                                 a relative path (with ``allow_relative=False``)

    is_inside_path("/wh/t/_acidflow_trash/c1/x", "/wh/t/_acidflow_trash")  -> True (strictly below)
    is_same_location(parse_location("s3a://b/t"), parse_location("s3://b/t"))  -> True (one store, see below)

``s3a://`` and ``s3n://`` (Hadoop's names, which Hive, Spark and Trino write into the metastore) name
the same objects as ``s3://``, and ``gcs://`` the same as ``gs://``: a location keeps the scheme it
was written with, and every comparison (``is_inside``, ``is_same_location``, ``check_location``)
treats the aliases as one store, so ``s3a://b/t`` is the table ``s3://b/t`` and ``s3a://b/t2`` is not.

A database location may hold tables (the default layout ``<warehouse>/<db>.db/<table>``); a table
location may hold its own partitions. Nothing else may nest, because a managed table's DROP deletes
everything below its location, and the cleaner and ``clean --purge-trash/--restore`` act below it.

Names follow Hive's ``MetaStoreUtils.validateName``: databases and tables match ``[A-Za-z0-9_]+``
(Java's ``[\w_]+``), which refuses ``/``, quotes, NUL, ``.`` and ``..``. Column names and partition
values are free text in Hive (``validateColumnName`` returns true) because ``FileUtils.escapePathName``
%-escapes them in directory names (``format_partition_name``), so they round-trip; only an empty
name and a NUL (which PostgreSQL cannot store, so it would not round-trip through the metastore)
are refused.

Invariants: ``parse_location(format_location(x)) == x``; ``check_location`` returns the normalised
location (absolute, no ``.``/``..``/``//``) that callers store; ``is_inside`` is reflexive unless
``strictly`` and never true across stores (schemes other than aliases, or authorities).
Not here: the filesystem (symlinks are resolved by the shell, ``fs.real_path``), the metastore.
Errors: ``InvalidLocationError`` (a refused location), ``InvalidObjectNameError`` (a refused name).
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from acid_core.errors import InvalidLocationError, InvalidObjectNameError

if TYPE_CHECKING:
    from collections.abc import Collection, Iterable

__all__ = [
    "LOCAL_SCHEME",
    "SCHEME_ALIASES",
    "Location",
    "Occupant",
    "check_location",
    "format_location",
    "is_inside",
    "is_inside_path",
    "is_same_location",
    "parse_location",
    "validate_column_name",
    "validate_object_name",
    "validate_partition_value",
]

LOCAL_SCHEME: Final = "file"
"""The scheme of local paths: ``/wh/t`` and ``file:///wh/t`` are the same location."""

SCHEME_ALIASES: Final = {"s3a": "s3", "s3n": "s3", "gcs": "gs"}
"""Schemes that name another scheme's store: Hadoop's S3 connectors (``s3a``, the retired ``s3n``)
read and write the objects ``s3://`` names; ``gcs`` is pyarrow's other name for ``gs``."""

_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*):(//)?(.*)", re.DOTALL)
_HIVE_NAME = re.compile(r"[A-Za-z0-9_]+")  # MetaStoreUtils.validateName: Java's [\w_]+ (ASCII)


@dataclass(frozen=True, slots=True)
class Location:
    """A normalised location: scheme, authority and an absolute path without ``.``, ``..`` or ``//``.

    Attributes:
        scheme: lower-case scheme; ``file`` for local paths.
        authority: ``host:port`` or bucket; empty for local paths.
        path: absolute, ``/`` for the root.
    """

    scheme: str
    authority: str
    path: str

    def __str__(self) -> str:
        return format_location(self)


@dataclass(frozen=True, slots=True)
class Occupant:
    """A location already taken by a database, table or partition.

    Attributes:
        kind: ``database``, ``table`` or ``partition``.
        name: ``db``, ``db.table`` or ``db.table/k=v``.
        location: its location as the metastore stores it.
        may_contain: whether a checked location may lie inside this one (a database's location,
            or the table a partition belongs to).
    """

    kind: str
    name: str
    location: str
    may_contain: bool = False


def _refuse(text: str, problem: str, expected: str) -> InvalidLocationError:
    return InvalidLocationError(text, problem, expected)


def _components(path: str) -> list[str]:
    return [part for part in path.split("/") if part not in ("", ".")]


def parse_location(
    text: str,
    *,
    cwd: str = "/",
    supported_schemes: Collection[str] = (LOCAL_SCHEME,),
    allow_relative: bool = True,
) -> Location:
    """Parse and normalise a location (a local path or a URI).

    Args:
        text: ``/abs/path``, ``relative/path``, ``file:///abs/path`` or ``scheme://authority/path``.
        cwd: the absolute directory relative local paths are resolved against.
        supported_schemes: schemes the filesystem layer serves (``file`` is always served).
        allow_relative: whether a relative local path is resolved against ``cwd`` (else refused).

    Returns:
        The normalised location.

    Raises:
        InvalidLocationError: empty, a NUL, a ``..`` component, an unserved scheme, a URI
            without ``//``, a ``file://`` URI with a host, or a relative path when
            ``allow_relative`` is false.

    >>> parse_location("hdfs://nn:8020/wh//db.db/./t/", supported_schemes={"hdfs"})
    Location(scheme='hdfs', authority='nn:8020', path='/wh/db.db/t')
    >>> str(parse_location("data/t", cwd="/home/u"))
    '/home/u/data/t'
    """
    schemes = {s.lower() for s in supported_schemes} | {LOCAL_SCHEME}
    expected = f"a local path or a URI whose scheme is one of {sorted(schemes)}, without '..'"
    if not isinstance(text, str) or not text.strip():
        raise _refuse(str(text), "it is empty", expected)
    if "\x00" in text:
        raise _refuse(text, "it contains a NUL character", expected)
    match = _SCHEME.fullmatch(text)
    if match is None:
        scheme, authority, path = LOCAL_SCHEME, "", text
        if not path.startswith("/"):
            if ".." in _components(path):
                raise _refuse(text, "a relative path with a '..' component", expected)
            if not allow_relative:
                # Hive qualifies a relative LOCATION against the default file system's working
                # directory (Warehouse.getDnsPath), i.e. wherever the process runs: the same
                # statement on two Airflow workers would put the data in two places.
                raise _refuse(
                    text,
                    "it is a relative path, which would resolve against the working directory of "
                    "whichever process runs the statement",
                    "an absolute path or a URI (e.g. '/warehouse/db.db/t' or 'hdfs://nn:8020/warehouse/t')",
                )
            path = posixpath.join(cwd, path)
    else:
        scheme = match.group(1).lower()
        if scheme not in schemes:
            raise _refuse(text, f"the filesystem layer does not serve scheme {scheme!r}", expected)
        if match.group(2) is None and scheme != LOCAL_SCHEME:  # Hadoop writes file:/path
            raise _refuse(text, f"a {scheme!r} URI without '//'", f"{scheme}://authority/path")
        if match.group(2) is None:
            authority, path = "", match.group(3)
            if not path.startswith("/"):
                raise _refuse(text, "a relative file: URI", "file:///absolute/path")
        else:
            authority, slash, rest = match.group(3).partition("/")
            path = slash + rest or "/"
        if scheme == LOCAL_SCHEME and authority not in ("", "localhost"):
            raise _refuse(text, f"a file URI with host {authority!r}", "file:///absolute/path")
        authority = "" if scheme == LOCAL_SCHEME else authority
    parts = _components(path)
    if ".." in parts:
        raise _refuse(text, "it has a '..' component", expected)
    return Location(scheme, authority, "/" + "/".join(parts))


def format_location(location: Location) -> str:
    """The text to store: a plain absolute path for local locations, else ``scheme://authority/path``.

    >>> format_location(Location("file", "", "/wh/t"))
    '/wh/t'
    >>> format_location(Location("s3", "bucket", "/wh/t"))
    's3://bucket/wh/t'
    """
    if location.scheme == LOCAL_SCHEME:
        return location.path
    return f"{location.scheme}://{location.authority}{location.path}"


def is_inside(path: Location, root: Location, *, strictly: bool = False) -> bool:
    """Whether ``path`` is ``root`` or below it (``strictly``: below it only).

    >>> is_inside(Location("file", "", "/wh/t2"), Location("file", "", "/wh/t"))
    False
    >>> is_inside(Location("s3a", "b", "/wh/t/p=1"), Location("s3", "b", "/wh/t"))
    True
    """
    if _store(path) != _store(root):
        return False
    if path.path == root.path:
        return not strictly
    return path.path.startswith(root.path.rstrip("/") + "/")


def _store(location: Location) -> tuple[str, str]:
    return SCHEME_ALIASES.get(location.scheme, location.scheme), location.authority


def is_same_location(a: Location, b: Location) -> bool:
    """Whether two locations name the same directory (``s3a://b/t`` is ``s3://b/t``: ``SCHEME_ALIASES``).

    >>> is_same_location(Location("s3a", "b", "/wh/t"), Location("s3", "b", "/wh/t"))
    True
    >>> is_same_location(Location("s3a", "b", "/wh/t2"), Location("s3", "b", "/wh/t"))
    False
    """
    return _store(a) == _store(b) and a.path == b.path


def is_inside_path(path: str, root: str, *, strictly: bool = True) -> bool:
    """Whether a store-local ``path`` lies below ``root`` (no scheme; ``..`` anywhere means no).

    The cleaner's ledger and trash hold store-local paths (``/wh/t/delta_1_1``, ``bucket/wh/t``).

    >>> is_inside_path("/wh/t/_acidflow_trash/c1/x", "/wh/t/_acidflow_trash")
    True
    >>> is_inside_path("/wh/t/_acidflow_trash/../../../etc", "/wh/t/_acidflow_trash")
    False
    """
    if not isinstance(path, str) or not isinstance(root, str) or "\x00" in path + root:
        return False
    path_parts, root_parts = _components(path), _components(root)
    if ".." in path_parts or ".." in root_parts or path.startswith("/") != root.startswith("/"):
        return False
    if path_parts[: len(root_parts)] != root_parts:
        return False
    return len(path_parts) > len(root_parts) if strictly else True


def check_location(
    candidate: str,
    *,
    warehouse_root: str,
    occupants: Iterable[Occupant] = (),
    cwd: str = "/",
    supported_schemes: Collection[str] = (LOCAL_SCHEME,),
    allow_relative: bool = True,
) -> Location:
    """Validate a database, table or partition location, or a path a DROP is about to delete.

    Args:
        candidate: the location text.
        warehouse_root: the warehouse root (the ``default`` database's location).
        occupants: every other database, table and partition location (not the candidate's own
            object: a DROP checks the location it is about to delete against the others).
        cwd: the directory relative local paths resolve against.
        supported_schemes: schemes the filesystem layer serves.
        allow_relative: whether a relative ``candidate`` is resolved against ``cwd`` (else refused).

    Returns:
        The normalised candidate.

    Raises:
        InvalidLocationError: see the module docstring for every refused case.

    >>> str(check_location("/wh/db.db/t", warehouse_root="/wh",
    ...                    occupants=[Occupant("database", "db", "/wh/db.db", may_contain=True)]))
    '/wh/db.db/t'
    """
    location = parse_location(
        candidate, cwd=cwd, supported_schemes=supported_schemes, allow_relative=allow_relative
    )
    expected = "a directory of its own below the warehouse or database directory"
    if location.path == "/":
        raise _refuse(candidate, "it is a filesystem root", expected)
    warehouse = parse_location(warehouse_root, cwd=cwd, supported_schemes=supported_schemes)
    if is_same_location(location, warehouse):
        raise _refuse(candidate, "it is the warehouse root", expected)
    if is_inside(warehouse, location):
        raise _refuse(candidate, f"it is an ancestor of the warehouse root {str(warehouse)!r}", expected)
    for occupant in occupants:
        try:
            other = parse_location(occupant.location, cwd=cwd, supported_schemes=supported_schemes)
        except InvalidLocationError:
            continue  # a stored location no filesystem serves cannot overlap a served one
        owner = f"{occupant.kind} {occupant.name}"
        if is_same_location(other, location):
            raise _refuse(candidate, f"it is the location of {owner}", expected)
        if is_inside(other, location):
            raise _refuse(candidate, f"it contains the location {str(other)!r} of {owner}", expected)
        if not occupant.may_contain and is_inside(location, other):
            raise _refuse(candidate, f"it is inside the location {str(other)!r} of {owner}", expected)
    return location


def validate_object_name(kind: str, name: str) -> str:
    """A database or table name as Hive's ``MetaStoreUtils.validateName`` accepts it.

    Args:
        kind: ``database`` or ``table`` (for the message).
        name: the name.

    Returns:
        ``name`` unchanged.

    Raises:
        InvalidObjectNameError: it is not ``[A-Za-z0-9_]+``.

    >>> validate_object_name("table", "orders_2024")
    'orders_2024'
    """
    if not isinstance(name, str) or _HIVE_NAME.fullmatch(name) is None:
        raise InvalidObjectNameError(
            kind, str(name), "letters, digits and '_' only (Hive's [A-Za-z0-9_]+; no '/', quotes, NUL or '.')"
        )
    return name


def validate_column_name(name: str) -> str:
    """A column or partition key name: free text, as in Hive, except empty or with a NUL.

    Raises:
        InvalidObjectNameError: empty or containing a NUL.
    """
    if not isinstance(name, str) or not name or "\x00" in name:
        raise InvalidObjectNameError("column", str(name), "a non-empty name without NUL characters")
    return name


def validate_partition_value(value: str | None) -> str | None:
    """A partition value: any text (``format_partition_name`` %-escapes it), except one with a NUL.

    Raises:
        InvalidObjectNameError: it contains a NUL.
    """
    if value is not None and "\x00" in str(value):
        raise InvalidObjectNameError(
            "partition value", str(value), "a value without NUL characters (other characters are %-escaped)"
        )
    return value
