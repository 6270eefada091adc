"""acid_core.locations: which LOCATIONs are refused, which names round-trip (table-driven and properties).

Every refused case names the bad value in a one-line message; expectations are written from the
rules (Hive's MetaStoreUtils.validateName, the issue's list of unsafe locations), not from the code.
"""

from __future__ import annotations

import posixpath

import pytest
from hypothesis import given
from hypothesis import strategies as st

from acid_core.errors import InvalidLocationError, InvalidObjectNameError
from acid_core.fs import SUPPORTED_SCHEMES
from acid_core.locations import (
    Location,
    Occupant,
    check_location,
    format_location,
    is_inside,
    is_inside_path,
    parse_location,
    validate_column_name,
    validate_object_name,
    validate_partition_value,
)
from acid_core.metastore import format_partition_name

WAREHOUSE = "/srv/wh"
OCCUPANTS = (
    Occupant("database", "default", "/srv/wh", may_contain=True),
    Occupant("database", "sales", "/srv/wh/sales.db", may_contain=True),
    Occupant("table", "default.t1", "/srv/wh/t1"),
    Occupant("table", "sales.orders", "/srv/wh/sales.db/orders"),
    Occupant("partition", "default.t1/p=1", "/data/p1"),
    Occupant("table", "default.h", "hdfs://nn:8020/wh/h"),
)


def check(candidate, cwd="/home/u"):
    return check_location(
        candidate,
        warehouse_root=WAREHOUSE,
        occupants=OCCUPANTS,
        cwd=cwd,
        supported_schemes=SUPPORTED_SCHEMES,
    )


REFUSED = [
    ("/", "it is a filesystem root"),
    ("file:///", "it is a filesystem root"),
    ("hdfs://nn:8020/", "it is a filesystem root"),
    ("s3://bucket", "it is a filesystem root"),
    ("/srv/wh", "it is the warehouse root"),
    ("/srv/wh/", "it is the warehouse root"),
    ("file:///srv/wh", "it is the warehouse root"),
    ("/srv", "it is an ancestor of the warehouse root '/srv/wh'"),
    ("/srv/wh/t1", "it is the location of table default.t1"),
    ("/srv/wh//t1/.", "it is the location of table default.t1"),
    ("/srv/wh/t1/sub", "it is inside the location '/srv/wh/t1' of table default.t1"),
    ("/srv/wh/sales.db", "it is the location of database sales"),
    ("/data", "it contains the location '/data/p1' of partition default.t1/p=1"),
    ("/data/p1/x", "it is inside the location '/data/p1' of partition default.t1/p=1"),
    ("hdfs://nn:8020/wh", "it contains the location 'hdfs://nn:8020/wh/h' of table default.h"),
    ("hdfs://nn:8020/wh/h/x", "it is inside the location 'hdfs://nn:8020/wh/h' of table default.h"),
    ("../x", "a relative path with a '..' component"),
    ("a/../../x", "a relative path with a '..' component"),
    ("/srv/wh/../etc", "it has a '..' component"),
    ("/srv/wh/new/../../../etc", "it has a '..' component"),
    ("hdfs://nn:8020/wh/../x", "it has a '..' component"),
    ("foo://x/y", "the filesystem layer does not serve scheme 'foo'"),
    ("wasb://bucket/x", "the filesystem layer does not serve scheme 'wasb'"),
    ("hdfs:/wh/x", "a 'hdfs' URI without '//'"),
    ("file://otherhost/x", "a file URI with host 'otherhost'"),
    ("file:relative", "a relative file: URI"),
    ("/srv/wh/t\x00", "it contains a NUL character"),
    ("", "it is empty"),
    ("  ", "it is empty"),
]


@pytest.mark.parametrize(("candidate", "problem"), REFUSED, ids=[repr(c) for c, _ in REFUSED])
def test_check_location_unsafe_location_raises_naming_it(candidate, problem):
    with pytest.raises(InvalidLocationError) as caught:
        check(candidate)
    message = str(caught.value)
    assert message.startswith(f"Refusing location {candidate!r}: {problem}; expected ")
    assert "\n" not in message
    assert caught.value.location == candidate
    assert isinstance(caught.value, ValueError)


ACCEPTED = [
    ("/srv/wh/t2", "/srv/wh/t2"),
    ("/srv/wh/sales.db/orders2", "/srv/wh/sales.db/orders2"),
    ("file:///srv/wh/t3/", "/srv/wh/t3"),
    ("file:/srv/wh/t3", "/srv/wh/t3"),
    ("file://localhost/srv/wh/t3", "/srv/wh/t3"),
    ("/srv/wh//t5/./", "/srv/wh/t5"),
    ("data/t4", "/home/u/data/t4"),
    ("./t4", "/home/u/t4"),
    ("/external/events", "/external/events"),
    ("/data/p2", "/data/p2"),
    ("HDFS://nn:8020/wh/h2", "hdfs://nn:8020/wh/h2"),
    ("s3://bucket/wh/t", "s3://bucket/wh/t"),
    ("/srv/wh/t1x", "/srv/wh/t1x"),  # a sibling whose name starts like t1 is not inside t1
]


@pytest.mark.parametrize(("candidate", "stored"), ACCEPTED, ids=[c for c, _ in ACCEPTED])
def test_check_location_own_directory_returns_the_normalised_text(candidate, stored):
    assert format_location(check(candidate)) == stored


def test_check_location_partition_inside_its_own_table_is_accepted():
    occupants = [*OCCUPANTS[:2], Occupant("table", "default.t1", "/srv/wh/t1", may_contain=True)]
    location = check_location("/srv/wh/t1/p=2", warehouse_root=WAREHOUSE, occupants=occupants)
    assert location == Location("file", "", "/srv/wh/t1/p=2")
    with pytest.raises(InvalidLocationError, match=r"it is the location of table default.t1"):
        check_location("/srv/wh/t1", warehouse_root=WAREHOUSE, occupants=occupants)


@pytest.mark.parametrize("candidate", ["data/t4", "./t4", "t4", "~/t4"])
def test_check_location_relative_not_allowed_raises_naming_it(candidate):
    with pytest.raises(InvalidLocationError) as caught:
        check_location(candidate, warehouse_root=WAREHOUSE, cwd="/home/u", allow_relative=False)
    assert str(caught.value) == (
        f"Refusing location {candidate!r}: it is a relative path, which would resolve against the working "
        "directory of whichever process runs the statement; expected an absolute path or a URI (e.g. "
        "'/warehouse/db.db/t' or 'hdfs://nn:8020/warehouse/t'); nothing was created or changed"
    )


def test_check_location_relative_not_allowed_absolute_still_accepted():
    location = check_location("/srv/wh/t2", warehouse_root="./warehouse", cwd="/srv", allow_relative=False)
    assert location == Location("file", "", "/srv/wh/t2")


def test_check_location_relative_warehouse_is_resolved_against_cwd():
    with pytest.raises(InvalidLocationError, match=r"it is the warehouse root"):
        check_location("/home/u/warehouse", warehouse_root="./warehouse", cwd="/home/u")


@pytest.mark.parametrize(
    ("name", "ok"),
    [
        ("orders", True),
        ("Orders_2024", True),
        ("_staging", True),
        ("a/b", False),
        ("a'b", False),
        ('a"b', False),
        ("a`b", False),
        ("a\x00b", False),
        ("..", False),
        (".", False),
        ("a.b", False),
        ("a-b", False),
        ("a b", False),
        ("", False),
        ("caf\u00e9", False),
    ],
    ids=repr,
)
def test_validate_object_name_follows_hive_validate_name(name, ok):
    if ok:
        assert validate_object_name("table", name) == name
        return
    with pytest.raises(InvalidObjectNameError) as caught:
        validate_object_name("table", name)
    assert str(caught.value).startswith(f"Invalid table name {name!r}: expected letters, digits and '_'")
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize("name", ["a/b", "a'b", "..", "k=v", "with space"], ids=repr)
def test_validate_column_name_free_text_is_accepted_as_in_hive(name):
    assert validate_column_name(name) == name


@pytest.mark.parametrize("name", ["", "a\x00b"], ids=repr)
def test_validate_column_name_empty_or_nul_raises(name):
    with pytest.raises(InvalidObjectNameError, match=r"Invalid column name .*: expected a non-empty name"):
        validate_column_name(name)


def test_validate_partition_value_nul_raises_and_others_pass():
    assert validate_partition_value("a/b") == "a/b"
    assert validate_partition_value("..") == ".."
    assert validate_partition_value(None) is None
    with pytest.raises(InvalidObjectNameError, match=r"Invalid partition value name 'a\\x00b'"):
        validate_partition_value("a\x00b")


@pytest.mark.parametrize(
    ("value", "directory"),
    [("a/b", "p=a%2Fb"), ("..", "p=.."), ("../../etc", "p=..%2F..%2Fetc"), ("a'b", "p=a%27b")],
    ids=repr,
)
def test_partition_value_with_path_characters_is_escaped_into_one_directory(value, directory):
    """FileUtils.escapePathName: a value never adds a path level or climbs out of the table."""
    name = format_partition_name(["p"], [value])
    assert name == directory
    assert "/" not in name
    assert name not in (".", "..")


# -- properties ----------------------------------------------------------------------------------

_SEGMENT = st.sampled_from(["a", "b", "wh", "t", "db.db", "p=1", "x_y"])
_PATHS = st.lists(_SEGMENT, max_size=4).map(lambda parts: "/" + "/".join(parts))
_LOCATIONS = st.builds(
    Location,
    scheme=st.sampled_from(["file", "hdfs", "s3"]),
    authority=st.sampled_from(["", "nn:8020", "bucket"]),
    path=_PATHS,
).map(lambda loc: Location(loc.scheme, "" if loc.scheme == "file" else loc.authority, loc.path))


@given(_LOCATIONS)
def test_parse_location_format_round_trip(location):
    assert parse_location(format_location(location), supported_schemes=SUPPORTED_SCHEMES) == location


def _parts(path):
    return [p for p in path.split("/") if p]


@given(
    candidate=_PATHS,
    others=st.lists(st.tuples(_PATHS, st.booleans()), max_size=5),
    warehouse=_PATHS,
)
def test_check_location_accepted_never_overlaps_an_occupant(candidate, others, warehouse):
    """Model: an accepted location is no root, no warehouse ancestor, and nests only where allowed."""
    occupants = [
        Occupant("table", f"t{i}", path, may_contain) for i, (path, may_contain) in enumerate(others)
    ]
    try:
        location = check_location(candidate, warehouse_root=warehouse, occupants=occupants)
    except InvalidLocationError:
        return
    mine = _parts(location.path)
    assert mine
    assert _parts(warehouse)[: len(mine)] != mine
    for path, may_contain in others:
        theirs = _parts(path)
        assert theirs[: len(mine)] != mine  # neither the same nor below the new location
        if not may_contain:
            assert mine[: len(theirs)] != theirs


@given(root=_PATHS, extra=st.lists(_SEGMENT, min_size=1, max_size=3), escape=st.integers(1, 5))
def test_is_inside_path_below_root_true_and_dotdot_false(root, extra, escape):
    below = posixpath.join(root, *extra)
    assert is_inside_path(below, root)
    assert not is_inside_path(root, root)
    assert is_inside_path(root, root, strictly=False)
    assert not is_inside_path(posixpath.join(root, *([".."] * escape), *extra), root)


@given(_LOCATIONS, _LOCATIONS)
def test_is_inside_is_antisymmetric(a, b):
    if is_inside(a, b) and is_inside(b, a):
        assert a == b
