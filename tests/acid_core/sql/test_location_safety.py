"""SQL DDL never creates or deletes outside what a table owns (issue 11, part 1), tried as an attacker would.

Each refused case asserts the AcidError and its one-line message naming the bad value, and that a
sentinel tree outside the warehouse, the whole warehouse and a table's rows are unchanged. The
positive cases follow Hive: ADD PARTITION .. LOCATION puts the partition's data there, a managed
table's DROP deletes its data (also partitions elsewhere), an EXTERNAL table keeps its files.
"""

from __future__ import annotations

import os
import shutil
import tempfile

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from acid_core.cli import main as acidflow
from acid_core.errors import (
    AcidError,
    DropDefaultDatabaseError,
    InvalidLocationError,
    InvalidObjectNameError,
    InvalidPartitionError,
    InvalidTableNameError,
    NoSuchPartitionError,
    SqlSyntaxError,
    UnsafeDeleteError,
)
from acid_core.metastore import Column, InMemoryMetastore, TableDefinition
from acid_core.sql.engine import SqlSession
from acid_core.writes import Warehouse

ACID = "STORED AS ORC TBLPROPERTIES ('transactional'='true')"


def main(argv):
    return acidflow(["sql", *argv])


def tree(root):
    """Every file and directory below ``root`` with file contents: the 'nothing changed' witness."""
    found = {}
    for parent, dirs, files in os.walk(root):
        for name in dirs:
            found[os.path.relpath(os.path.join(parent, name), root) + "/"] = None
        for name in files:
            path = os.path.join(parent, name)
            with open(path, "rb") as f:
                found[os.path.relpath(path, root)] = f.read()
    return found


@pytest.fixture
def world(tmp_path):
    """A warehouse with a populated ACID table ``keep`` and a partitioned ``part``; a sentinel tree."""
    sentinel = tmp_path / "sentinel"
    (sentinel / "etc").mkdir(parents=True)
    (sentinel / "etc" / "passwd").write_text("root:x:0:0\n")
    root = str(tmp_path / "wh")
    with Warehouse(root, InMemoryMetastore(warehouse=root), heartbeat_seconds=None) as wh:
        session = SqlSession(wh)
        session.execute(
            f"CREATE TABLE keep (id int, name string) {ACID}; INSERT INTO keep VALUES (1, 'a'), (2, 'b');"
            f"CREATE TABLE part (id int) PARTITIONED BY (p string) {ACID}"
        )
        yield session, tmp_path


def keep_rows(session):
    (result,) = session.execute("SELECT id, name FROM keep ORDER BY id")
    return result.rows.to_pylist()


def assert_refused(session, tmp_path, sql, error, message):
    before = tree(tmp_path)
    tables = session.warehouse.metastore.list_tables("default")
    with pytest.raises(error) as caught:
        session.execute(sql)
    text = str(caught.value)
    assert message in text
    assert "\n" not in text
    assert tree(tmp_path) == before
    assert session.warehouse.metastore.list_tables("default") == tables
    assert keep_rows(session) == [{"id": 1, "name": "a"}, {"id": 2, "name": "b"}]


CREATE_REFUSED = [
    ("LOCATION '/'", "Refusing location '/': it is a filesystem root"),
    ("LOCATION 'file:///'", "Refusing location 'file:///': it is a filesystem root"),
    ("LOCATION '{wh}'", "Refusing location '{wh}': it is the warehouse root"),
    ("LOCATION '{tmp}'", "Refusing location '{tmp}': it is an ancestor of the warehouse root"),
    ("LOCATION '{wh}/keep'", "Refusing location '{wh}/keep': it is the location of table default.keep"),
    ("LOCATION '{wh}/keep/'", "it is the location of table default.keep"),
    ("LOCATION '{wh}/keep/sub'", "it is inside the location '{wh}/keep' of table default.keep"),
    ("LOCATION '{wh}/../sentinel'", "Refusing location '{wh}/../sentinel': it has a '..' component"),
    ("LOCATION '../sentinel'", "Refusing location '../sentinel': a relative path with a '..' component"),
    ("LOCATION 'foo://host/x'", "the filesystem layer does not serve scheme 'foo'"),
]


@pytest.mark.parametrize(("clause", "message"), CREATE_REFUSED, ids=[c for c, _ in CREATE_REFUSED])
@pytest.mark.parametrize("kind", ["managed", "external"])
def test_create_table_unsafe_location_refused_and_nothing_changes(world, clause, message, kind):
    session, tmp_path = world
    values = {"wh": str(tmp_path / "wh"), "tmp": str(tmp_path)}
    external = "EXTERNAL " if kind == "external" else ""
    properties = "STORED AS ORC" if kind == "external" else ACID
    sql = f"CREATE {external}TABLE x (a int) {properties} {clause.format(**values)}"
    assert_refused(session, tmp_path, sql, InvalidLocationError, message.format(**values))


@pytest.mark.parametrize(
    "sql",
    [
        "CREATE TABLE u (a int) STORED AS ORC LOCATION ''",
        "CREATE DATABASE d LOCATION ''",
        "ALTER TABLE part ADD PARTITION (p='x') LOCATION ''",
        "ALTER TABLE keep SET LOCATION ''",
    ],
    ids=["create-table", "create-database", "add-partition", "set-location"],
)
def test_empty_location_refused_not_taken_as_the_default(world, sql):
    """Hive: "Can not create a Path from an empty string". It used to be silently the default."""
    session, tmp_path = world
    assert_refused(session, tmp_path, sql, InvalidLocationError, "Refusing location '': it is empty")
    assert session.warehouse.metastore.list_databases() == ["default"]
    assert session.warehouse.metastore.list_partitions("part") == []


@pytest.mark.parametrize(
    ("clause", "message"),
    [
        ("LOCATION '{wh}'", "it is the warehouse root"),
        ("LOCATION '{wh}/keep'", "it is the location of table default.keep"),
        ("LOCATION '/'", "it is a filesystem root"),
        ("LOCATION '{tmp}'", "it is an ancestor of the warehouse root"),
    ],
    ids=["warehouse", "table", "root", "ancestor"],
)
def test_create_database_unsafe_location_refused(world, clause, message):
    session, tmp_path = world
    values = {"wh": str(tmp_path / "wh"), "tmp": str(tmp_path)}
    assert_refused(
        session, tmp_path, f"CREATE DATABASE d {clause.format(**values)}", InvalidLocationError, message
    )
    assert session.warehouse.metastore.list_databases() == ["default"]


@pytest.mark.parametrize(
    "statement",
    [f"CREATE TABLE x (a int) {ACID} LOCATION '{{link}}'", "ALTER TABLE part SET LOCATION '{link}'"],
    ids=["create-table", "set-location"],
)
def test_location_through_a_symlink_to_another_table_refused(world, statement):
    session, tmp_path = world
    link = tmp_path / "link"
    link.symlink_to(tmp_path / "wh" / "keep")
    assert_refused(
        session,
        tmp_path,
        statement.format(link=link),
        InvalidLocationError,
        f"it leads (through a symbolic link) to '{tmp_path / 'wh' / 'keep'}', and it is the location of table "
        "default.keep",
    )


@pytest.mark.parametrize("kind", ["table", "partition"])
def test_managed_location_holding_foreign_files_refused(world, kind):
    """Its DROP would delete them: a managed table or partition starts in an empty or new directory."""
    session, tmp_path = world
    sql = {
        "table": f"CREATE TABLE x (a int) {ACID} LOCATION '{tmp_path / 'sentinel'}'",
        "partition": f"ALTER TABLE part ADD PARTITION (p='x') LOCATION '{tmp_path / 'sentinel'}'",
    }[kind]
    assert_refused(
        session,
        tmp_path,
        sql,
        InvalidLocationError,
        f"Refusing location '{tmp_path / 'sentinel'}': it already holds 1 entries acidflow did not write (first "
        "'etc')",
    )


def test_external_table_over_existing_files_is_created_and_keeps_them(world):
    session, tmp_path = world
    before = tree(tmp_path / "sentinel")
    session.execute(
        f"CREATE EXTERNAL TABLE x (a int) STORED AS ORC LOCATION '{tmp_path / 'sentinel'}'; DROP TABLE x"
    )
    assert tree(tmp_path / "sentinel") == before


def test_create_table_default_location_taken_by_an_earlier_location_refused(world):
    session, tmp_path = world
    session.execute(f"CREATE TABLE first (a int) {ACID} LOCATION '{tmp_path / 'wh' / 'second'}'")
    assert_refused(
        session,
        tmp_path,
        f"CREATE TABLE second (a int) {ACID}",
        InvalidLocationError,
        "it is the location of table default.first",
    )


@pytest.mark.parametrize(
    ("sql", "location"),
    [
        (f"CREATE TABLE rel (a int) {ACID} LOCATION 'data/rel'", "data/rel"),
        ("CREATE EXTERNAL TABLE rel (a int) STORED AS ORC LOCATION './rel'", "./rel"),
        ("CREATE DATABASE d LOCATION 'rel'", "rel"),
        ("ALTER TABLE part ADD PARTITION (p='x') LOCATION 'px'", "px"),
        ("ALTER TABLE keep SET LOCATION 'moved'", "moved"),
    ],
    ids=["create-table", "create-external-table", "create-database", "add-partition", "set-location"],
)
def test_relative_location_refused_not_resolved_against_cwd(world, monkeypatch, sql, location):
    """Issue 24: resolved against the working directory, the same statement run from two Airflow
    workers put the table's data in two places. Hive qualifies it against the default file system's
    working directory, which is no more stable: acidflow refuses it."""
    session, tmp_path = world
    monkeypatch.chdir(tmp_path)
    keep_location = session.warehouse.metastore.get_table("keep").location
    assert_refused(
        session,
        tmp_path,
        sql,
        InvalidLocationError,
        f"Refusing location {location!r}: it is a relative path, which would resolve against the working "
        "directory of whichever process runs the statement; expected an absolute path or a URI",
    )
    assert session.warehouse.metastore.list_databases() == ["default"]
    assert session.warehouse.metastore.list_partitions("part") == []
    assert session.warehouse.metastore.get_table("keep").location == keep_location


def test_relative_location_refused_by_the_cli_in_one_line(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    code = main(["--warehouse", str(tmp_path / "wh"), f"CREATE TABLE rel (a int) {ACID} LOCATION 'rel/dir'"])
    err = capsys.readouterr().err
    assert code != 0
    assert err.startswith("acidflow sql: error: Refusing location 'rel/dir': it is a relative path")
    assert err.count("\n") == 1
    assert not (tmp_path / "rel").exists()


NAMES = [
    ("CREATE TABLE `a/b` (x int)", "Invalid table name 'a/b'"),
    ("CREATE TABLE `a'b` (x int)", 'Invalid table name "a\'b"'),
    ('CREATE TABLE `a"b` (x int)', "Invalid table name 'a\"b'"),
    ("CREATE TABLE `a\x00b` (x int)", "Invalid table name 'a\\x00b'"),
    ("CREATE DATABASE `..`", "Invalid database name '..'"),
    ("CREATE DATABASE `a/b`", "Invalid database name 'a/b'"),
    ("CREATE TABLE t (`a\x00b` int)", "Invalid column name 'a\\x00b'"),
]


@pytest.mark.parametrize(("sql", "message"), NAMES, ids=[m for _, m in NAMES])
def test_create_unsafe_name_refused_as_hive(world, sql, message):
    session, tmp_path = world
    assert_refused(session, tmp_path, sql, InvalidObjectNameError, message)


def test_create_table_named_dotdot_refused(world):
    session, tmp_path = world
    assert_refused(
        session, tmp_path, "CREATE TABLE `..` (x int)", InvalidTableNameError, "Invalid table name '..'"
    )


def test_partition_value_with_slash_is_escaped_and_round_trips(world):
    session, tmp_path = world
    session.execute(
        "ALTER TABLE part ADD PARTITION (p='a/b'); INSERT INTO part PARTITION (p='a/b') VALUES (1)"
    )
    assert os.path.isdir(tmp_path / "wh" / "part" / "p=a%2Fb")
    (result,) = session.execute("SELECT id, p FROM part")
    assert result.rows.to_pylist() == [{"id": 1, "p": "a/b"}]
    (result,) = session.execute("SHOW PARTITIONS part")
    assert result.rows.to_pylist() == [{"partition": "p=a%2Fb"}]


def test_partition_value_with_nul_refused(world):
    session, tmp_path = world
    assert_refused(
        session, tmp_path, "ALTER TABLE part ADD PARTITION (p='a\x00b')", InvalidObjectNameError, "'a\\x00b'"
    )


def test_add_partition_location_is_honoured(world):
    session, tmp_path = world
    outside = tmp_path / "ext" / "px"
    session.execute(
        f"ALTER TABLE part ADD PARTITION (p='x') LOCATION '{outside}'; INSERT INTO part PARTITION (p='x') VALUES (7)"
    )
    [partition] = session.warehouse.metastore.list_partitions("part")
    assert partition.location == str(outside)
    assert [n for n in os.listdir(outside) if n.startswith("delta_")]
    assert not os.path.exists(tmp_path / "wh" / "part" / "p=x")
    (result,) = session.execute("SELECT id, p FROM part")
    assert result.rows.to_pylist() == [{"id": 7, "p": "x"}]


ADD_REFUSED = [
    ("/", "it is a filesystem root"),
    ("{wh}", "it is the warehouse root"),
    ("{tmp}", "it is an ancestor of the warehouse root"),
    ("{wh}/keep", "it is the location of table default.keep"),
    ("{wh}/part", "it is the location of table default.part"),
    ("{wh}/keep/p=x", "it is inside the location '{wh}/keep' of table default.keep"),
    ("{wh}/part/../keep", "it has a '..' component"),
    ("foo://x/p", "the filesystem layer does not serve scheme 'foo'"),
]


@pytest.mark.parametrize(("location", "message"), ADD_REFUSED, ids=[m for m, _ in ADD_REFUSED])
def test_add_partition_unsafe_location_refused(world, location, message):
    session, tmp_path = world
    values = {"wh": str(tmp_path / "wh"), "tmp": str(tmp_path)}
    sql = f"ALTER TABLE part ADD PARTITION (p='x') LOCATION '{location.format(**values)}'"
    assert_refused(session, tmp_path, sql, InvalidLocationError, message.format(**values))
    assert session.warehouse.metastore.list_partitions("part") == []


def test_add_partition_location_at_another_partitions_default_directory_refused(world):
    """A later INSERT into p='y' would use part/p=y: two partitions must never share a directory."""
    session, tmp_path = world
    part = tmp_path / "wh" / "part"
    assert_refused(
        session,
        tmp_path,
        f"ALTER TABLE part ADD PARTITION (p='x') LOCATION '{part / 'p=y'}'",
        InvalidLocationError,
        f"Refusing location '{part / 'p=y'}': it is inside the location of table default.part but not the "
        f"partition's own directory; expected '{part / 'p=x'}' or a directory outside the table",
    )
    session.execute(f"ALTER TABLE part ADD PARTITION (p='x') LOCATION '{part / 'p=x'}'")
    assert [p.location for p in session.warehouse.metastore.list_partitions("part")] == [str(part / "p=x")]


def test_add_partition_location_of_another_partition_refused(world):
    session, tmp_path = world
    session.execute(f"ALTER TABLE part ADD PARTITION (p='x') LOCATION '{tmp_path / 'ext' / 'px'}'")
    assert_refused(
        session,
        tmp_path,
        f"ALTER TABLE part ADD PARTITION (p='y') LOCATION '{tmp_path / 'ext'}'",
        InvalidLocationError,
        f"it contains the location '{tmp_path / 'ext' / 'px'}' of partition default.part/p=x",
    )


# -- ALTER TABLE .. [PARTITION (..)] SET LOCATION: validated like CREATE/ADD, metadata only ----------


def _location_of(session, table, partition=None):
    if partition is None:
        return session.warehouse.metastore.get_table(table).location
    return next(p.location for p in session.warehouse.metastore.list_partitions(table) if p.name == partition)


@pytest.mark.parametrize(("clause", "message"), CREATE_REFUSED, ids=[c for c, _ in CREATE_REFUSED])
@pytest.mark.parametrize("kind", ["managed", "external"])
def test_set_table_location_unsafe_refused_and_nothing_changes(world, clause, message, kind):
    session, tmp_path = world
    values = {"wh": str(tmp_path / "wh"), "tmp": str(tmp_path)}
    external = "EXTERNAL " if kind == "external" else ""
    properties = "STORED AS ORC" if kind == "external" else ACID
    session.execute(f"CREATE {external}TABLE x (a int) {properties} LOCATION '{tmp_path / 'xdata'}'")
    sql = f"ALTER TABLE x SET {clause.format(**values)}"
    assert_refused(session, tmp_path, sql, InvalidLocationError, message.format(**values))
    assert _location_of(session, "x") == str(tmp_path / "xdata")


def test_set_table_location_moves_no_file_and_reads_the_new_directory(world):
    """Hive: metadata only. The old files stay; the table reads (and writes, and drops) the new one."""
    session, tmp_path = world
    old = tmp_path / "wh" / "keep"
    new = tmp_path / "moved" / "keep"
    before = tree(old)
    (result,) = session.execute(f"ALTER TABLE keep SET LOCATION '{new}'")
    assert (
        result.message == f"OK: location of default.keep set to '{new}' (no files moved: '{old}' keeps them)"
    )
    assert _location_of(session, "keep") == str(new)
    assert tree(old) == before
    assert not new.exists()
    session.execute("INSERT INTO keep VALUES (3, 'c')")
    (rows,) = session.execute("SELECT id FROM keep")
    assert rows.rows.to_pylist() == [{"id": 3}]
    session.execute("DROP TABLE keep")
    assert not new.exists()
    assert tree(old) == before  # the managed table's DROP deletes its own (new) location only


def test_set_table_location_to_its_own_location_changes_nothing(world):
    session, tmp_path = world
    before = tree(tmp_path)
    (result,) = session.execute(f"ALTER TABLE keep SET LOCATION '{tmp_path / 'wh' / 'keep'}/'")
    assert result.message == f"OK: default.keep is already at '{tmp_path / 'wh' / 'keep'}'"
    assert tree(tmp_path) == before


def test_set_managed_table_location_holding_foreign_files_refused(world):
    session, tmp_path = world
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "data.csv").write_text("1,2\n")
    assert_refused(
        session,
        tmp_path,
        f"ALTER TABLE keep SET LOCATION '{foreign}'",
        InvalidLocationError,
        f"Refusing location '{foreign}': it already holds 1 entries acidflow did not write (first 'data.csv')",
    )
    session.execute(f"CREATE EXTERNAL TABLE e (a int) STORED AS ORC LOCATION '{tmp_path / 'edata'}'")
    session.execute(f"ALTER TABLE e SET LOCATION '{foreign}'")  # an EXTERNAL table's DROP keeps them
    assert _location_of(session, "e") == str(foreign)


@pytest.mark.parametrize(("location", "message"), ADD_REFUSED, ids=[m for m, _ in ADD_REFUSED])
def test_set_partition_location_unsafe_refused(world, location, message):
    session, tmp_path = world
    session.execute("ALTER TABLE part ADD PARTITION (p='x')")
    values = {"wh": str(tmp_path / "wh"), "tmp": str(tmp_path)}
    sql = f"ALTER TABLE part PARTITION (p='x') SET LOCATION '{location.format(**values)}'"
    assert_refused(session, tmp_path, sql, InvalidLocationError, message.format(**values))
    assert _location_of(session, "part", "p=x") == str(tmp_path / "wh" / "part" / "p=x")


def test_set_partition_location_at_another_partitions_default_directory_refused(world):
    session, tmp_path = world
    session.execute("ALTER TABLE part ADD PARTITION (p='x')")
    part = tmp_path / "wh" / "part"
    assert_refused(
        session,
        tmp_path,
        f"ALTER TABLE part PARTITION (p='x') SET LOCATION '{part / 'p=y'}'",
        InvalidLocationError,
        "it is inside the location of table default.part but not the partition's own directory",
    )


def test_set_partition_location_is_honoured_and_moves_no_file(world):
    session, tmp_path = world
    session.execute("INSERT INTO part PARTITION (p='x') VALUES (7)")
    old = tmp_path / "wh" / "part" / "p=x"
    new = tmp_path / "ext" / "px"
    before = tree(old)
    session.execute(f"ALTER TABLE part PARTITION (p='x') SET LOCATION '{new}'")
    assert _location_of(session, "part", "p=x") == str(new)
    assert tree(old) == before
    session.execute("INSERT INTO part PARTITION (p='x') VALUES (8)")
    assert [n for n in os.listdir(new) if n.startswith("delta_")]
    (result,) = session.execute("SELECT id FROM part")
    assert result.rows.to_pylist() == [{"id": 8}]


@pytest.mark.parametrize(
    ("spec", "error", "message"),
    [
        ("PARTITION (p='nope')", NoSuchPartitionError, "No such partition 'p=nope' in table 'default.part'"),
        (
            "PARTITION (q='x')",
            InvalidPartitionError,
            "Invalid partition 'q=x' of table 'default.part': expected keys of ['p']",
        ),
    ],
    ids=["missing", "wrong-key"],
)
def test_set_partition_location_of_a_bad_spec_refused(world, spec, error, message):
    session, tmp_path = world
    session.execute("ALTER TABLE part ADD PARTITION (p='x')")
    assert_refused(
        session, tmp_path, f"ALTER TABLE part {spec} SET LOCATION '{tmp_path / 'ext'}'", error, message
    )


def test_set_location_without_a_quoted_path_is_a_syntax_error(world):
    session, tmp_path = world
    assert_refused(
        session,
        tmp_path,
        "ALTER TABLE keep SET LOCATION /tmp/x",
        SqlSyntaxError,
        "SET LOCATION without a quoted path",
    )


def test_explain_locks_set_location_takes_x_on_the_table_or_partition(world):
    session, _ = world
    session.execute("ALTER TABLE part ADD PARTITION (p='x')")
    (table,) = session.execute("EXPLAIN LOCKS ALTER TABLE keep SET LOCATION '/elsewhere'")
    (partition,) = session.execute("EXPLAIN LOCKS ALTER TABLE part PARTITION (p='x') SET LOCATION '/x'")
    assert table.rows.to_pylist() == [{"object": "default.keep", "mode": "X"}]
    assert partition.rows.to_pylist() == [
        {"object": "default.part", "mode": "S"},
        {"object": "default.part/p=x", "mode": "X"},
    ]


def test_drop_external_table_keeps_its_files(world):
    session, tmp_path = world
    data = tmp_path / "extdata"
    session.execute(
        f"CREATE EXTERNAL TABLE e (a int) STORED AS ORC LOCATION '{data}'; INSERT INTO e VALUES (1)"
    )
    files = tree(data)
    assert files
    session.execute("DROP TABLE e")
    assert tree(data) == files
    assert "e" not in session.warehouse.metastore.list_tables("default")


def test_drop_managed_table_deletes_its_location_and_partitions_elsewhere_only(world):
    session, tmp_path = world
    outside = tmp_path / "ext" / "px"
    sibling = tmp_path / "ext" / "py"
    sibling.mkdir(parents=True)
    session.execute(
        f"ALTER TABLE part ADD PARTITION (p='x') LOCATION '{outside}'; INSERT INTO part PARTITION (p='x') VALUES (1);"
        "INSERT INTO part PARTITION (p='z') VALUES (2)"
    )
    session.execute("DROP TABLE part")
    assert not os.path.exists(tmp_path / "wh" / "part")
    assert not os.path.exists(outside)
    assert sibling.is_dir()
    assert keep_rows(session) == [{"id": 1, "name": "a"}, {"id": 2, "name": "b"}]


def forge_table(session, name, location, partitioned=False):
    """A metastore row written past the SQL front end (another tool, an edited database)."""
    session.warehouse.metastore.create_table(
        TableDefinition(
            name=name,
            columns=(Column("a", "int"),),
            partition_keys=(Column("p", "string"),) if partitioned else (),
            properties={"transactional": "true"},
            location=location,
        )
    )


@pytest.mark.parametrize(
    ("location", "message"),
    [
        ("{tmp}", "it is an ancestor of the warehouse root"),
        ("{wh}", "it is the warehouse root"),
        ("{wh}/keep", "it is the location of table default.keep"),
        ("{wh}/keep/sub", "it is inside the location '{wh}/keep' of table default.keep"),
        # "/" is covered by the pure tests only: a regression here must never reach delete_dir("/").
    ],
    ids=["ancestor", "warehouse", "other-table", "inside-other"],
)
def test_drop_table_whose_row_points_outside_refused_and_nothing_changes(world, location, message):
    session, tmp_path = world
    values = {"wh": str(tmp_path / "wh"), "tmp": str(tmp_path)}
    forge_table(session, "forged", location.format(**values))
    assert_refused(session, tmp_path, "DROP TABLE forged", UnsafeDeleteError, message.format(**values))
    assert "forged" in session.warehouse.metastore.list_tables("default")


def test_drop_partition_whose_row_points_at_another_table_refused(world):
    session, tmp_path = world
    keep = str(tmp_path / "wh" / "keep")
    session.warehouse.metastore.add_partition("part", {"p": "x"}, location=keep)
    assert_refused(
        session,
        tmp_path,
        "ALTER TABLE part DROP PARTITION (p='x')",
        UnsafeDeleteError,
        f"Refusing to delete or move {keep!r}: it is the location of partition default.part/p=x, but it is the "
        "location of table default.keep",
    )
    assert [p.name for p in session.warehouse.metastore.list_partitions("part")] == ["p=x"]


def test_drop_database_default_refused_as_hive(world):
    session, tmp_path = world
    for sql in ("DROP DATABASE default", "DROP DATABASE IF EXISTS default CASCADE", "DROP SCHEMA DEFAULT"):
        assert_refused(
            session, tmp_path, sql, DropDefaultDatabaseError, "Can not drop default database 'default'"
        )


def test_drop_database_cascade_deletes_managed_data_wherever_it_is_and_keeps_external(world):
    session, tmp_path = world
    managed_outside = tmp_path / "elsewhere" / "m"
    session.execute(
        f"CREATE DATABASE d; CREATE TABLE d.inside (a int) {ACID}; INSERT INTO d.inside VALUES (1);"
        f"CREATE TABLE d.outside (a int) {ACID} LOCATION '{managed_outside}'; INSERT INTO d.outside VALUES (2);"
        f"CREATE EXTERNAL TABLE d.ext (a int) STORED AS ORC LOCATION '{tmp_path / 'wh' / 'd.db' / 'ext'}';"
        "INSERT INTO d.ext VALUES (3)"
    )
    external = tree(tmp_path / "wh" / "d.db" / "ext")
    (result,) = session.execute("DROP DATABASE d CASCADE")
    assert not os.path.exists(tmp_path / "wh" / "d.db" / "inside")
    assert not os.path.exists(managed_outside)
    assert (tmp_path / "elsewhere").is_dir()
    assert tree(tmp_path / "wh" / "d.db" / "ext") == external
    assert result.message.endswith(
        f"kept {tmp_path / 'wh' / 'd.db'}: not empty or not only the database's (EXTERNAL table data or files "
        "acidflow does not own)"
    )
    assert session.warehouse.metastore.list_databases() == ["default"]


def test_drop_database_cascade_with_a_forged_table_row_refused_and_nothing_changes(world):
    session, tmp_path = world
    session.execute(f"CREATE DATABASE d; CREATE TABLE d.ok (a int) {ACID}; INSERT INTO d.ok VALUES (1)")
    forge_table(session, "d.bad", str(tmp_path / "wh" / "keep"))
    assert_refused(
        session,
        tmp_path,
        "DROP DATABASE d CASCADE",
        UnsafeDeleteError,
        "it is the location of table default.keep",
    )
    assert session.warehouse.metastore.list_tables("d") == ["bad", "ok"]


def test_drop_database_whose_row_points_at_an_empty_table_directory_keeps_it(world):
    session, tmp_path = world
    session.execute(f"CREATE TABLE empty (a int) {ACID}")
    empty = tmp_path / "wh" / "empty"
    assert empty.is_dir()
    session.warehouse.metastore.create_database("forged", str(empty))
    (result,) = session.execute("DROP DATABASE forged")
    assert f"kept {empty}" in result.message
    assert empty.is_dir()
    assert session.warehouse.metastore.list_databases() == ["default"]


def test_cli_sql_unsafe_location_exits_1_with_one_line(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("ACIDFLOW_METASTORE", raising=False)
    monkeypatch.delenv("ACIDFLOW_LOCK_MANAGER", raising=False)
    warehouse = str(tmp_path / "wh")
    assert main(["--warehouse", warehouse, f"CREATE TABLE keep (a int) {ACID}"]) == 0
    capsys.readouterr()
    before = tree(tmp_path)
    code = main(["--warehouse", warehouse, f"CREATE TABLE x (a int) {ACID} LOCATION '{warehouse}/keep'"])
    err = capsys.readouterr().err
    assert code == 1
    assert err.count("\n") == 1
    assert f"Refusing location '{warehouse}/keep': it is the location of table default.keep" in err
    assert "Traceback" not in err
    assert tree(tmp_path) == before


def test_errors_are_acid_errors():
    for error in (InvalidLocationError, InvalidObjectNameError, UnsafeDeleteError, DropDefaultDatabaseError):
        assert issubclass(error, AcidError)


# -- property: whatever DDL an attacker runs, no DROP deletes another object's files ---------------

_PLACES = ["wh", "wh/a", "wh/a/b", "wh/t1", "wh/t1/x", "ext", "ext/a", "ext/a/b", "", "wh/..", "sentinel"]
_OPERATIONS = st.one_of(
    st.tuples(
        st.just("create"),
        st.sampled_from(["t1", "t2", "t3"]),
        st.booleans(),
        st.sampled_from([None, *_PLACES]),
    ),
    st.tuples(st.just("database"), st.sampled_from(["d1", "d2"]), st.sampled_from([None, *_PLACES])),
    st.tuples(
        st.just("table_in"),
        st.sampled_from(["d1.u", "d2.u"]),
        st.booleans(),
        st.sampled_from([None, *_PLACES]),
    ),
    st.tuples(st.just("partition"), st.sampled_from(["p1", "p2"]), st.sampled_from([None, *_PLACES])),
    st.tuples(st.just("drop"), st.sampled_from(["t1", "t2", "t3", "pt", "d1.u", "d2.u"])),
    st.tuples(st.just("drop_partition"), st.sampled_from(["p1", "p2"])),
    st.tuples(st.just("drop_db"), st.sampled_from(["d1", "d2", "default"])),
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_OPERATIONS, min_size=1, max_size=8))
def test_ddl_sequence_never_deletes_what_another_object_owns(operations):
    """Model: each object writes a marker file into its directory when created; after any sequence
    of CREATE / ADD PARTITION / DROP (refused ones included), every marker of a live object, of
    every EXTERNAL table, and the sentinel outside the warehouse still exist."""
    base = tempfile.mkdtemp(prefix="acidflow-ddl-")
    try:
        sentinel = os.path.join(base, "sentinel", "passwd")
        os.makedirs(os.path.dirname(sentinel))
        with open(sentinel, "w") as f:
            f.write("root\n")
        root = os.path.join(base, "wh")
        with Warehouse(root, InMemoryMetastore(warehouse=root), heartbeat_seconds=None) as wh:
            session = SqlSession(wh)
            session.execute(f"CREATE TABLE pt (a int) PARTITIONED BY (p string) {ACID}")
            kept: dict[str, str] = {}  # marker path -> owner, for files that must survive
            owners: dict[str, list[str]] = {}  # live object -> its markers
            refusals: list[str] = []

            def mark(owner, location, external):
                marker = os.path.join(location, f"marker_{owner.replace('/', '_')}")
                os.makedirs(location, exist_ok=True)
                with open(marker, "w") as f:
                    f.write(owner)
                owners.setdefault(owner, []).append(marker)
                if external:
                    kept[marker] = owner

            def place(where):
                return None if where is None else os.path.join(base, where)

            for operation in operations:
                kind, *args = operation
                try:
                    if kind in ("create", "table_in"):
                        name, external, where = args
                        clause = "" if place(where) is None else f" LOCATION '{place(where)}'"
                        table_kind = "EXTERNAL TABLE" if external else "TABLE"
                        props = "STORED AS ORC" if external else ACID
                        session.execute(f"CREATE {table_kind} {name} (a int) {props}{clause}")
                        table = wh.metastore.get_table(name)
                        mark(table.full_name, table.location, external)
                    elif kind == "database":
                        name, where = args
                        clause = "" if place(where) is None else f" LOCATION '{place(where)}'"
                        session.execute(f"CREATE DATABASE {name}{clause}")
                        mark(name, wh.metastore.get_database(name).location, False)
                    elif kind == "partition":
                        value, where = args
                        clause = "" if place(where) is None else f" LOCATION '{place(where)}'"
                        session.execute(f"ALTER TABLE pt ADD PARTITION (p='{value}'){clause}")
                        [partition] = [
                            p for p in wh.metastore.list_partitions("pt") if p.name == f"p={value}"
                        ]
                        mark(f"default.pt/p={value}", partition.location, False)
                    elif kind == "drop":
                        dropped = wh.metastore.get_table(args[0]).full_name
                        session.execute(f"DROP TABLE {args[0]}")
                        for owner in [o for o in owners if o == dropped or o.startswith(f"{dropped}/")]:
                            owners.pop(owner)
                    elif kind == "drop_partition":
                        session.execute(f"ALTER TABLE pt DROP PARTITION (p='{args[0]}')")
                        owners.pop(f"default.pt/p={args[0]}", None)
                    else:
                        tables = wh.metastore.list_tables(args[0])
                        session.execute(f"DROP DATABASE {args[0]} CASCADE")
                        for owner in [args[0], *(f"{args[0]}.{t}" for t in tables)]:
                            owners.pop(owner, None)
                except AcidError as e:
                    refusals.append(str(e))
                assert all("\n" not in message for message in refusals)
                for owner, markers in owners.items():
                    for marker in markers:
                        assert os.path.exists(marker), f"{operation}: the marker of live {owner} is gone"
                for marker, owner in kept.items():
                    assert os.path.exists(marker), f"{operation}: the files of EXTERNAL {owner} are gone"
                assert os.path.exists(sentinel), f"{operation}: the sentinel outside the warehouse is gone"
    finally:
        shutil.rmtree(base, ignore_errors=True)
