"""``make run`` wipes only a demo warehouse it built (never ``$HOME``, ``/`` or a user's data)."""

from __future__ import annotations

import pytest

from demo.run_platform import DEMO_MARKER, main, refuse_to_reset


def test_refuse_to_reset_absent_or_empty_directory_allows(tmp_path):
    assert refuse_to_reset(str(tmp_path / "new")) is None
    (tmp_path / "empty").mkdir()
    assert refuse_to_reset(str(tmp_path / "empty")) is None


def test_refuse_to_reset_marked_demo_warehouse_allows(tmp_path):
    (tmp_path / "wh" / ".acidflow").mkdir(parents=True)
    (tmp_path / "wh" / DEMO_MARKER).write_text("demo\n")
    (tmp_path / "wh" / "employee").mkdir()
    assert refuse_to_reset(str(tmp_path / "wh")) is None


@pytest.mark.parametrize("layout", ["user-data", "metastore-only", "a-file"])
def test_run_on_a_directory_that_is_not_a_demo_warehouse_deletes_nothing(tmp_path, capsys, layout):
    target = tmp_path / "data"
    if layout == "a-file":
        target.write_text("precious\n")
    else:
        target.mkdir()
        (target / "precious.txt").write_text("precious\n")
        if layout == "metastore-only":
            (target / ".acidflow").mkdir()
    code = main(["run", "--warehouse", str(target)])
    err = capsys.readouterr().err
    assert code == 2
    assert err == (
        f"acidflow: error: Refusing to rebuild the demo warehouse in {str(target)!r}: it exists and is not a "
        f"demo warehouse built by acidflow (no {DEMO_MARKER}); expected a new, empty or demo directory; "
        "hint: make run WAREHOUSE=<new directory>\n"
    )
    if layout == "a-file":
        assert target.read_text() == "precious\n"
    else:
        assert (target / "precious.txt").read_text() == "precious\n"


def test_up_on_a_directory_that_is_not_a_demo_warehouse_deletes_nothing(tmp_path, capsys):
    target = tmp_path / "data"
    target.mkdir()
    (target / "precious.txt").write_text("precious\n")
    assert main(["up", "--warehouse", str(target)]) == 2
    assert "Refusing to rebuild the demo warehouse" in capsys.readouterr().err
    assert (target / "precious.txt").read_text() == "precious\n"


def test_refuse_to_reset_unmarked_demo_layout_from_an_older_version_allows(tmp_path):
    for name in (".acidflow", ".airflow", "employee", "web_events"):
        (tmp_path / "wh" / name).mkdir(parents=True)
    assert refuse_to_reset(str(tmp_path / "wh")) is None
