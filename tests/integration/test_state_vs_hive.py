"""Differential test: our directory state against Apache Hive 2.3.10's own ``AcidUtils.getAcidState``.

Every layout is created as real directories in a temp dir (each ACID directory holds a small
``bucket_00000``), then asked of both:

    Hive 2.3.10   AcidUtils.getAcidState(Path, Configuration, ValidReadTxnList("<hwm>:<MAX>:<a1>:<a2>.."),
                                         useFileIds=false, ignoreEmptyFiles=false)      (the ``hive`` fixture)
    acidflow      load_directory_state(LocalFileIO(), dir, ValidWriteIdList "default.t:<hwm>:<MAX>::<a1>,<a2>..")
                  and ``acidflow state DIR --write-ids LIST --json`` (in process)

and compared on the base, the deltas (exact order) and the obsolete names (exact order: the
order ``getAcidState`` fills its list in, the same code in 2.3 and 4 given a name-sorted listing;
see 10.); original files are compared as sorted lists. Hive 2.3 numbers transactions where Hive 3/4 number
per-table write ids, so the same integers are used for both (one table, one writer: txn id =
write id).

Where Hive 2.3 and Hive 4 (the rules ``acid_core.state`` follows) differ, and how the generator
stays inside the rules they share:

1. Snapshot format. 2.3's ``ValidReadTxnList`` is ``<hwm>:<minOpenTxn>[:<exception>]*``: it cannot
   tell open from aborted exceptions (only ``minOpenTxn`` says whether anything is open), and has
   no ``isTxnAborted``/``isTxnRangeAborted``. Hive 4 has ``ValidReaderWriteIdList``
   ``<table>:<hwm>:<minOpen>:<open,..>:<aborted,..>``. -> Snapshots hold aborted ids only (no open
   ids, ``minOpenTxn = Long.MAX_VALUE``), all at or below the high watermark.
2. Aborted directories. Hive 4 lists an all-aborted delta as *aborted*; 2.3 drops it because its
   range is not valid (``isTxnRangeValid == NONE``). Neither reads it nor calls it obsolete, so
   they agree on base/deltas/obsolete; the ``aborted`` list is not compared (2.3 has none).
3. Insert-overwrite bases. Hive 4 treats a base without ``_v``/``_metadata_acid`` as an insert
   overwrite: aborted if its write id is aborted, usable if the write id is valid even above the
   lowest open id. 2.3 has one rule for every base, ``isValidBase``: ``txn < minOpenTxn && txn <=
   hwm``, so it would read a base whose transaction aborted. -> Bases only at valid ids.
4. "Not enough history". 2.3 throws ``ACID_NOT_ENOUGH_HISTORY`` whenever bases exist and none is
   usable; Hive 4 only when the oldest base is compactor output (``_v`` or ``_metadata_acid``).
   -> Bases only at valid ids, so the oldest base is always usable.
5. Visibility suffixes (``base_N_vT``, ``delta_x_y_vT``, HIVE-20823) and ``_metadata_acid``
   (HIVE-20941) do not exist in 2.3 (``Long.parseLong("5_v10")`` throws). -> Never generated.
6. Empty directories. Hive 4 lists non-HDFS stores through ``getHdfsDirSnapshots``, which only
   knows directories that contain files, so an empty delta is invisible there; 2.3 sees it. ->
   Every ACID directory holds a ``bucket_00000``.
7. Original-file order. 2.3 returns original files in listing order (unsorted on a local disk);
   Hive 4 sorts them by path. -> Compared as sorted lists.
8. Raw-format deltas (``load data`` into an ACID table, HIVE-19231) exist only in Hive 3+, and
   only matter to readers. -> Bucket files are not ORC; neither side opens them here.
9. Duplicate base ids under different spellings (``base_5`` and ``base_0000005``): 2.3 keeps the
   first in listing order, ours sorts by name. -> One spelling per base id.
10. Obsolete order. Both fill the list while processing children in listing order (superseded
   bases), then add original files and directories (with a base), then the deltas
   ``findBestWorkingDeltas`` shadows, in delta order. The oracle lists children sorted by name as
   HDFS does (``FastLocalFileSystem``), so 2.3's order is Hive 4's order on HDFS; Hive 4 on other
   stores iterates a HashMap of directories there (TestAcidUtils then checks bases as a set).
   -> Compared in order.

Everything else (delta order, minor-compacted ranges shadowing their parts, multi-statement
transactions, insert/delete twins, deltas straddling the high watermark, ranges with aborted
ids, originals made obsolete by a base, original subdirectories, hidden names, unpadded
numbers) is the same code in both versions, and is generated.

Run with another seed: ``ACIDFLOW_HIVE_SEED=123 pytest tests/integration/test_state_vs_hive.py``.
"""

from __future__ import annotations

import json
import os
import random
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pytest

from acid_core.cli import main as acidflow_main
from acid_core.directory import load_directory_state
from acid_core.fs import LocalFileIO
from acid_core.writeids import LONG_MAX, parse_valid_write_id_list
from tests.fixtures.hive import hive_txn_list

if TYPE_CHECKING:
    from pathlib import Path

    from tests.fixtures.hive import HiveOracle

pytestmark = pytest.mark.integration("hive")

SEED = int(os.environ.get("ACIDFLOW_HIVE_SEED", "20261122"))
LAYOUT_COUNT = 1000
COMPARED = ("base", "deltas", "obsolete", "original_files")


@dataclass(frozen=True)
class Layout:
    """A partition directory to create: ACID directories, files (relative paths), a snapshot."""

    acid_dirs: tuple[str, ...]
    files: tuple[str, ...]
    high_watermark: int
    aborted: tuple[int, ...]

    def create(self, root: Path) -> Path:
        root.mkdir(parents=True)
        for name in self.acid_dirs:
            (root / name).mkdir()
            (root / name / "bucket_00000").write_bytes(b"x")
        for path in self.files:
            target = root / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(b"orig")
        return root

    @property
    def hive_txns(self) -> str:
        return hive_txn_list(self.high_watermark, self.aborted)

    @property
    def write_ids(self) -> str:
        return f"default.t:{self.high_watermark}:{LONG_MAX}::{','.join(map(str, self.aborted))}"

    def describe(self) -> str:
        return (
            f"dirs={sorted(self.acid_dirs)} files={sorted(self.files)} "
            f"hive={self.hive_txns!r} ours={self.write_ids!r}"
        )


def _ours(table_dir: Path, layout: Layout) -> dict[str, object]:
    state = load_directory_state(LocalFileIO(), str(table_dir), parse_valid_write_id_list(layout.write_ids))
    return {
        "base": state.base,
        "deltas": list(state.deltas),
        "obsolete": list(state.obsolete),
        "original_files": sorted(state.original_files),
    }


def _ours_cli(table_dir: Path, layout: Layout, capsys: pytest.CaptureFixture[str]) -> dict[str, object]:
    code = acidflow_main(["state", str(table_dir), "--write-ids", layout.write_ids, "--json"])
    out = capsys.readouterr()
    assert code == 0, out.err
    data = json.loads(out.out)
    return {
        "base": data["base"],
        "deltas": data["deltas"],
        "obsolete": data["obsolete"],
        "original_files": sorted(data["original_files"]),
    }


def _comparable(hive_answer: dict[str, object]) -> dict[str, object]:
    assert "error" not in hive_answer, hive_answer["error"]
    answer = {key: hive_answer[key] for key in COMPARED}
    answer["original_files"] = sorted(hive_answer["original_files"])  # type: ignore[call-overload]
    return answer


# -- the generator --------------------------------------------------------------------------------


def _number(rng: random.Random, value: int, digits: int, padded: bool) -> str:
    return f"{value:0{digits}d}" if padded else str(value)


def _delta_name(
    prefix: str, low: int, high: int, statement: int | None, rng: random.Random, padded: bool
) -> str:
    name = f"{prefix}{_number(rng, low, 7, padded)}_{_number(rng, high, 7, padded)}"
    return name if statement is None else f"{name}_{_number(rng, statement, 4, padded)}"


def generate_layout(rng: random.Random) -> Layout:
    """A random partition history inside the rules Hive 2.3 and Hive 4 share (module docstring)."""
    top = rng.randint(2, 24)  # highest transaction id that wrote something
    high_watermark = rng.randint(1, top + 2)
    abort_rate = rng.choice([0.0, 0.1, 0.3, 0.6])
    aborted = tuple(txn for txn in range(1, high_watermark + 1) if rng.random() < abort_rate)
    valid = [txn for txn in range(1, high_watermark + 1) if txn not in aborted]
    padded_rate = rng.choice([1.0, 1.0, 0.8])
    write_rate = rng.uniform(0.3, 0.9)

    dirs: set[str] = set()

    def padded() -> bool:
        return rng.random() < padded_rate

    def add_pair(low: int, high: int, statement: int | None) -> None:
        # Hive >= 2.2 split update writes an insert delta and/or a delete delta per statement.
        kind = rng.random()
        if kind < 0.55:
            dirs.add(_delta_name("delta_", low, high, statement, rng, padded()))
        elif kind < 0.7:
            dirs.add(_delta_name("delete_delta_", low, high, statement, rng, padded()))
        else:
            dirs.add(_delta_name("delta_", low, high, statement, rng, padded()))
            dirs.add(_delta_name("delete_delta_", low, high, statement, rng, padded()))

    for txn in range(1, top + 1):  # one transaction each
        if rng.random() >= write_rate:
            continue
        style = rng.random()
        if style < 0.2:
            add_pair(txn, txn, None)  # pre-1.3 names, no statement id
        elif style < 0.8:
            add_pair(txn, txn, 0)
        else:  # a multi-statement transaction: statements need not be dense
            for statement in sorted(rng.sample(range(6), rng.randint(2, 3))):
                add_pair(txn, txn, statement)

    for _ in range(rng.choice([0, 0, 1, 2, 3])):  # minor compactions, possibly overlapping
        low = rng.randint(1, top)
        high = rng.randint(low, min(top + 2, low + rng.randint(1, 8)))
        compacted_statement = None if rng.random() < 0.85 else rng.randint(0, 2)
        dirs.add(_delta_name("delta_", low, high, compacted_statement, rng, padded()))
        if rng.random() < 0.6:
            dirs.add(_delta_name("delete_delta_", low, high, compacted_statement, rng, padded()))

    base_ids = sorted(rng.sample(valid, min(len(valid), rng.choice([0, 0, 1, 1, 2, 3])))) if valid else []
    for base_id in base_ids:
        dirs.add(f"base_{_number(rng, base_id, 7, padded())}")

    files: set[str] = set()
    if rng.random() < 0.35:  # a table converted from non-ACID: original files at the top
        for name in ("000000_0", "000001_0", "000000_0_copy_1", "000002_0"):
            if rng.random() < 0.6:
                files.add(name)
        if rng.random() < 0.3:
            files.add(f"HIVE_UNION_SUBDIR_{rng.randint(1, 2)}/000000_0")
    if rng.random() < 0.2:  # hidden names are ignored by both
        files.add(rng.choice(["_orc_acid_version", ".hive-staging_1/000000_0", "_tmp.000000_0"]))
    return Layout(tuple(sorted(dirs)), tuple(sorted(files)), high_watermark, aborted)


def _minimise(
    hive: HiveOracle, layout: Layout, work: Path
) -> tuple[Layout, dict[str, object], dict[str, object]]:
    """Drop directories and files one at a time while ours and Hive's answers still differ."""
    counter = iter(range(10**6))

    def answers(candidate: Layout) -> tuple[dict[str, object], dict[str, object]]:
        root = candidate.create(work / f"min{next(counter)}")
        return _comparable(hive.acid_state(root, candidate.hive_txns)), _ours(root, candidate)

    theirs, ours = answers(layout)
    changed = True
    while changed:
        changed = False
        for field in ("acid_dirs", "files"):
            for item in getattr(layout, field):
                kept = tuple(x for x in getattr(layout, field) if x != item)
                candidate = Layout(
                    kept if field == "acid_dirs" else layout.acid_dirs,
                    kept if field == "files" else layout.files,
                    layout.high_watermark,
                    layout.aborted,
                )
                their_answer, our_answer = answers(candidate)
                if their_answer != our_answer:
                    layout, theirs, ours, changed = candidate, their_answer, our_answer, True
                    break
            if changed:
                break
    return layout, theirs, ours


def test_state_random_layouts_match_hive_2_3(
    hive: HiveOracle, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """1000 seeded random layouts: base, deltas (in order), obsolete and originals equal Hive's."""
    with capsys.disabled():
        print(f"\nseed={SEED} (set ACIDFLOW_HIVE_SEED to change)")
    rng = random.Random(SEED)
    layouts = [generate_layout(rng) for _ in range(LAYOUT_COUNT)]
    roots = [layout.create(tmp_path / f"t{i}") for i, layout in enumerate(layouts)]
    hive_answers = hive.acid_states(
        [(root, layout.hive_txns) for root, layout in zip(roots, layouts, strict=True)]
    )

    mismatches = []
    for root, layout, hive_answer in zip(roots, layouts, hive_answers, strict=True):
        expected = _comparable(hive_answer)
        ours = _ours(root, layout)
        cli = _ours_cli(root, layout, capsys)
        assert cli == ours, f"CLI and library disagree on {layout.describe()}"
        if ours != expected:
            mismatches.append(layout)

    # The generator must reach the interesting rules, or agreement proves little.
    reached = {
        "base": sum(answer["base"] is not None for answer in hive_answers),
        "obsolete": sum(bool(answer["obsolete"]) for answer in hive_answers),
        "originals read": sum(bool(answer["original_files"]) for answer in hive_answers),
        "multi-statement": sum(
            any(d.count("_") == 3 and not d.endswith(("_0000", "_0")) for d in answer["deltas"])
            for answer in hive_answers
        ),
        "aborted ids": sum(bool(layout.aborted) for layout in layouts),
    }
    with capsys.disabled():
        print(f"coverage: {reached}")
    assert all(count >= 10 for count in reached.values()), reached

    if mismatches:
        smallest = min(mismatches, key=lambda m: len(m.acid_dirs) + len(m.files))
        layout, theirs, ours = _minimise(hive, smallest, tmp_path / "minimise")
        pytest.fail(
            f"seed={SEED}: {len(mismatches)}/{LAYOUT_COUNT} layouts differ from Hive 2.3; minimal case:\n"
            f"  layout: {layout.describe()}\n  hive:   {theirs}\n  ours:   {ours}"
        )


# -- named cases: Hive's own TestAcidUtils facts, and the rules a reader most often needs ----------
# Each lists directories, files, (hwm, aborted ids), and the expected answer; the expected answer
# is checked against Hive 2.3 first (so the case itself is right), then against ours.

NAMED_CASES = {
    "minor compacted delta shadows its parts (TestAcidUtils.testOriginalDeltas)": (
        ["delta_025_025", "delta_029_029", "delta_025_030", "delta_050_100", "delta_101_101"],
        ["000000_0", "000001_1", "000002_0", "random", "_done", "subdir/000000_0"],
        (100, ()),
        {
            "base": None,
            "deltas": ["delta_025_030", "delta_050_100"],
            "obsolete": ["delta_025_025", "delta_029_029"],
            "original_files": ["000000_0", "000001_1", "000002_0", "random", "subdir/000000_0"],
        },
    ),
    "newest base wins, covered deltas obsolete (TestAcidUtils.testBaseDeltas)": (
        [
            "base_5",
            "base_10",
            "base_49",
            "delta_025_025",
            "delta_029_029",
            "delta_025_030",
            "delta_050_105",
            "delta_90_120",
        ],
        [],
        (100, ()),
        {
            "base": "base_49",
            "deltas": ["delta_050_105"],
            "obsolete": ["base_10", "base_5", "delta_025_030", "delta_025_025", "delta_029_029"],
            "original_files": [],
        },
    ),
    "a base makes original files obsolete (TestAcidUtils.testObsoleteOriginals)": (
        ["base_10", "base_5"],
        ["000000_0", "000001_1"],
        (150, ()),
        {
            "base": "base_10",
            "deltas": [],
            "obsolete": ["base_5", "000000_0", "000001_1"],
            "original_files": [],
        },
    ),
    "overlapping deltas, unpadded numbers (TestAcidUtils.testOverlapingDelta)": (
        [
            "delta_0000063_63",
            "delta_000062_62",
            "delta_00061_61",
            "delta_40_60",
            "delta_0060_60",
            "delta_052_55",
            "base_50",
        ],
        [],
        (100, ()),
        {
            "base": "base_50",
            "deltas": ["delta_40_60", "delta_00061_61", "delta_000062_62", "delta_0000063_63"],
            "obsolete": ["delta_052_55", "delta_0060_60"],
            "original_files": [],
        },
    ),
    "multi-statement txn (TestAcidUtils.testOverlapingDelta2)": (
        [
            "delta_0000063_63_0",
            "delta_000062_62_0",
            "delta_000062_62_3",
            "delta_00061_61_0",
            "delta_40_60",
            "delta_0060_60_1",
            "delta_0060_60_4",
            "delta_0060_60_7",
            "delta_052_55",
            "delta_058_58",
            "base_50",
        ],
        [],
        (100, ()),
        {
            "base": "base_50",
            "deltas": [
                "delta_40_60",
                "delta_00061_61_0",
                "delta_000062_62_0",
                "delta_000062_62_3",
                "delta_0000063_63_0",
            ],
            "obsolete": [
                "delta_052_55",
                "delta_058_58",
                "delta_0060_60_1",
                "delta_0060_60_4",
                "delta_0060_60_7",
            ],
            "original_files": [],
        },
    ),
    "twins: insert and delete delta of one range (TestAcidUtils.testBaseWithDeleteDeltas)": (
        [
            "base_5",
            "base_10",
            "base_49",
            "delta_025_025",
            "delta_029_029",
            "delete_delta_029_029",
            "delta_025_030",
            "delete_delta_025_030",
            "delta_050_105",
            "delete_delta_050_105",
            "delete_delta_110_110",
        ],
        [],
        (100, ()),
        {
            "base": "base_49",
            "deltas": ["delete_delta_050_105", "delta_050_105"],
            "obsolete": [
                "base_10",
                "base_5",
                "delete_delta_025_030",
                "delta_025_030",
                "delta_025_025",
                "delete_delta_029_029",
                "delta_029_029",
            ],
            "original_files": [],
        },
    ),
    "aborted txn inside a minor-compacted range": (
        [
            "delta_0000001_0000001_0000",
            "delta_0000002_0000002_0000",
            "delta_0000003_0000003_0000",
            "delta_0000001_0000003",
        ],
        [],
        (3, (2,)),
        {
            "base": None,
            "deltas": ["delta_0000001_0000003"],
            "obsolete": ["delta_0000001_0000001_0000", "delta_0000003_0000003_0000"],
            "original_files": [],
        },
    ),
    "aborted delta is neither read nor obsolete": (
        [
            "base_0000002",
            "delta_0000003_0000003_0000",
            "delete_delta_0000003_0000003_0000",
            "delta_0000004_0000004_0000",
        ],
        [],
        (4, (3,)),
        {
            "base": "base_0000002",
            "deltas": ["delta_0000004_0000004_0000"],
            "obsolete": [],
            "original_files": [],
        },
    ),
    "delta straddling the high watermark is read, one above it is not": (
        ["delta_0000001_0000005", "delta_0000006_0000010", "delta_0000011_0000011_0000"],
        [],
        (7, ()),
        {
            "base": None,
            "deltas": ["delta_0000001_0000005", "delta_0000006_0000010"],
            "obsolete": [],
            "original_files": [],
        },
    ),
}


@pytest.mark.parametrize(
    ("acid_dirs", "files", "snapshot", "expected"), list(NAMED_CASES.values()), ids=list(NAMED_CASES)
)
def test_state_named_case_matches_hive_2_3(
    hive: HiveOracle,
    tmp_path: Path,
    acid_dirs: list[str],
    files: list[str],
    snapshot: tuple[int, tuple[int, ...]],
    expected: dict[str, object],
) -> None:
    high_watermark, aborted = snapshot
    layout = Layout(tuple(acid_dirs), tuple(files), high_watermark, tuple(aborted))
    root = layout.create(tmp_path / "part1")
    theirs = _comparable(hive.acid_state(root, layout.hive_txns))
    assert theirs == expected, "the case's expectation is not Hive 2.3's answer"
    assert _ours(root, layout) == expected
