"""Differential test: our directory state against Hive 3.1.3's and Hive 4.0.1's own ``AcidUtils.getAcidState``.

The same idea as ``test_state_vs_hive.py`` (Hive 2.3.10), with Hive 3+'s snapshots. Every layout
is created as real directories (each ACID directory holds a small ``bucket_00000``), then asked of:

    Hive 3.1.3    AcidUtils.getAcidState(Path, Configuration, ValidReaderWriteIdList(list), false, false)
    Hive 4.0.1    AcidUtils.getAcidState(fs, Path, conf with ValidTxnList.VALID_TXNS_KEY = txns,
                                         ValidReaderWriteIdList(list), Ref(false), false)
    acidflow      load_directory_state(LocalFileIO(), dir, parse_valid_write_id_list(list),
                                       parse_valid_txn_list(txns)), and ``acidflow state DIR
                                       --write-ids LIST --txns TXNS --json`` (in process)

with the write-ID list in Hive 3+'s ``ValidReaderWriteIdList`` format
(``default.t:<hwm>:<minOpen>:<open,..>:<aborted,..>``: open AND aborted write IDs) and, for Hive 4,
a ``ValidReadTxnList`` (``<hwm>:<minOpen>:<open,..>:<aborted,..>``) that decides which ``_v<txn>``
directories (compactor output, HIVE-20823) are visible: committed, open, aborted or above the
transaction high watermark.

What is generated, per version (acidflow follows Hive 4's rules, see ``acid_core.state``):

- both: deltas and delete deltas (with and without statement ids, multi-statement transactions,
  minor-compacted ranges, unpadded numbers), write IDs committed, open, aborted and above the high
  watermark, original files at the top and in ``HIVE_UNION_SUBDIR_n``, hidden names; bases written
  by insert overwrite (no marker) and by the compactor (Hive 3's ``_metadata_acid`` marker);
- Hive 4 only: ``base_N_vT`` and ``delta_x_y_vT`` / ``delete_delta_x_y_vT`` with every kind of T.

Where Hive 3.1.3 and Hive 4 differ (so acidflow, which reads Hive 3.1 tables too, is compared on
what they share), the 3.1 generator stays inside the shared rules:

1. ``_v`` names do not exist in 3.1 (``parseBase`` does ``Long.parseLong("5_v0000010")`` and throws).
   -> none for 3.1 (acidflow refuses to write them to a Hive 3.1 table, see the README).
2. Aborted directories: 3.1 lists only MM tables' aborted deltas, and an aborted insert-overwrite
   base is simply not valid (obsolete if an older base... is newer). -> 3.1: ``aborted`` is not
   compared, and insert-overwrite bases are only generated at committed write IDs.
3. ``isValidBase``: Hive 4 also accepts any base at or below the lowest open write ID; 3.1 requires
   a compacted base strictly below it. -> 3.1: no compacted base at exactly the lowest open ID
   (the compactor never writes one: its high watermark is below the lowest open write ID).
4. "Not enough history": 3.1 throws whenever bases exist and none is usable, Hive 4 only when the
   oldest is compactor output. -> 3.1: insert-overwrite bases are always usable (2. above), so
   both throw in the same layouts; where Hive throws, acidflow must raise NotEnoughHistoryError.

Where Hive 4.0.1 on a local disk is not Hive 4 on HDFS (acidflow follows the HDFS listing):

5. Hive 4 lists every store but HDFS through ``getHdfsDirSnapshots`` (a HashMap of directories), so
   bases are processed in no fixed order, and the answer depends on it in three ways: two compacted
   bases of one write ID (never generated: one compaction result per write ID); the ORDER of
   superseded bases in ``obsolete`` (-> Hive 4's ``obsolete`` is compared as a sorted list); and a
   base that is not valid for the snapshot (``base_3`` compacted while write ID 1 is open) next to a
   newer valid one (``base_6``): processed first (name order, as HDFS lists) it is skipped,
   processed after ``base_6`` it is obsolete. acidflow and Hive 3.1 (name order) skip it. -> such
   an older, not valid base is dropped from Hive 4's ``obsolete`` when ours does not list it.
6. That listing also reports the files inside an obsolete original directory (``HIVE_UNION_SUBDIR_1``
   and ``HIVE_UNION_SUBDIR_1/000000_0``); on HDFS only the directory. -> files below an obsolete
   original directory are dropped from Hive 4's ``obsolete`` before comparing.

Run with another seed: ``ACIDFLOW_HIVE_SEED=123 pytest tests/integration/test_state_vs_hive_3_4.py``.
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
from acid_core.errors import NotEnoughHistoryError
from acid_core.fs import LocalFileIO
from acid_core.writeids import parse_valid_txn_list, parse_valid_write_id_list
from tests.fixtures.hive_oracles import hive_valid_txn_list, hive_write_id_list

if TYPE_CHECKING:
    from pathlib import Path

    from tests.fixtures.hive_oracles import HiveVersionOracle

pytestmark = pytest.mark.integration("hive")

SEED = int(os.environ.get("ACIDFLOW_HIVE_SEED", "20261128"))
LAYOUT_COUNT = 400
METADATA = '{"thisFileVersion":"0","dataFormat":"compacted"}'
TXN_HIGH_WATERMARK = 100


@dataclass(frozen=True)
class Layout:
    """A partition directory to create, and the snapshot to read it with."""

    acid_dirs: tuple[str, ...]
    files: tuple[str, ...]
    write_ids: str
    txns: str

    def create(self, root: Path) -> Path:
        root.mkdir(parents=True)
        for name in self.acid_dirs:
            (root / name).mkdir()
            (root / name / "bucket_00000").write_bytes(b"x")
        for path in self.files:
            target = root / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(METADATA if path.endswith("/_metadata_acid") else "orig")
        return root

    def describe(self) -> str:
        return f"dirs={sorted(self.acid_dirs)} files={sorted(self.files)} write_ids={self.write_ids!r} txns={self.txns!r}"


def _ours(table_dir: Path, layout: Layout) -> dict[str, object]:
    try:
        state = load_directory_state(
            LocalFileIO(),
            str(table_dir),
            parse_valid_write_id_list(layout.write_ids),
            parse_valid_txn_list(layout.txns),
        )
    except NotEnoughHistoryError:
        return {"error": "not enough history"}
    return {
        "base": state.base,
        "deltas": list(state.deltas),
        "obsolete": list(state.obsolete),
        "aborted": sorted(state.aborted),
        "original_files": sorted(state.original_files),
    }


def _ours_cli(table_dir: Path, layout: Layout, capsys: pytest.CaptureFixture[str]) -> dict[str, object]:
    code = acidflow_main(
        ["state", str(table_dir), "--write-ids", layout.write_ids, "--txns", layout.txns, "--json"]
    )
    out = capsys.readouterr()
    if code != 0:
        assert "Not enough history" in out.err or "not enough history" in out.err.lower(), out.err
        return {"error": "not enough history"}
    data = json.loads(out.out)
    return {
        "base": data["base"],
        "deltas": data["deltas"],
        "obsolete": data["obsolete"],
        "aborted": sorted(data["aborted"]),
        "original_files": sorted(data["original_files"]),
    }


def _comparable(
    hive: HiveVersionOracle, answer: dict[str, object], ours: dict[str, object]
) -> dict[str, object]:
    """Hive's answer in the shape of ``_ours``, with the version differences of the docstring applied."""
    if "error" in answer:
        assert "Not enough history" in str(answer["error"]), answer["error"]
        return {"error": "not enough history"}
    result = {key: answer[key] for key in ("base", "deltas", "obsolete", "aborted", "original_files")}
    result["original_files"] = sorted(answer["original_files"])  # type: ignore[call-overload]
    result["aborted"] = sorted(answer["aborted"])  # type: ignore[call-overload]
    if hive.has_visibility_suffixes:  # Hive 4 (5. and 6. of the docstring)
        obsolete = list(answer["obsolete"])  # type: ignore[call-overload]
        dirs = {name for name in obsolete if "/" not in name}
        obsolete = [name for name in obsolete if name.split("/", 1)[0] not in dirs or "/" not in name]
        chosen = answer["base"]
        if isinstance(chosen, str):
            obsolete = [
                name
                for name in obsolete
                if not name.startswith("base_")
                or name in ours.get("obsolete", [])  # type: ignore[operator]
                or _base_write_id(name) >= _base_write_id(chosen)
            ]
        result["obsolete"] = sorted(obsolete)
        if "obsolete" in ours:
            ours["obsolete"] = sorted(ours["obsolete"])  # type: ignore[call-overload]
    else:  # Hive 3.1 lists no aborted directories for a full-ACID table (2.)
        result["aborted"] = ours.get("aborted", [])
    return result


def _base_write_id(name: str) -> int:
    return int(name[len("base_") :].split("_")[0])


# -- the generator --------------------------------------------------------------------------------


def _number(value: int, digits: int, padded: bool) -> str:
    return f"{value:0{digits}d}" if padded else str(value)


def generate_layout(rng: random.Random, *, visibility: bool) -> Layout:
    """A random partition history; ``visibility``: Hive 4 (``_v`` names), else Hive 3.1's shared rules."""
    top = rng.randint(2, 20)
    high_watermark = rng.randint(1, top + 2)
    status: dict[int, str] = {}
    open_rate = rng.choice([0.0, 0.0, 0.1, 0.25])
    abort_rate = rng.choice([0.0, 0.1, 0.3])
    for write_id in range(1, high_watermark + 1):
        roll = rng.random()
        status[write_id] = (
            "open" if roll < open_rate else "aborted" if roll < open_rate + abort_rate else "committed"
        )
    open_ids = [w for w, s in status.items() if s == "open"]
    aborted = [w for w, s in status.items() if s == "aborted"]
    committed = [w for w, s in status.items() if s == "committed"]
    min_open = min(open_ids) if open_ids else None

    # visibility transactions of the compactor outputs: committed, open, aborted, above the hwm
    txn_open = sorted(rng.sample(range(40, TXN_HIGH_WATERMARK), rng.choice([0, 1, 2])))
    txn_aborted = sorted(
        set(rng.sample(range(40, TXN_HIGH_WATERMARK), rng.choice([0, 1, 2]))) - set(txn_open)
    )

    def visibility_suffix() -> str:
        if not visibility or rng.random() < 0.4:
            return ""
        kind = rng.random()
        if kind < 0.55 or not (txn_open or txn_aborted):
            txn = rng.choice([t for t in range(40, TXN_HIGH_WATERMARK) if t not in txn_open + txn_aborted])
        elif kind < 0.75 and txn_open:
            txn = rng.choice(txn_open)
        elif kind < 0.9 and txn_aborted:
            txn = rng.choice(txn_aborted)
        else:
            txn = rng.randint(TXN_HIGH_WATERMARK + 1, TXN_HIGH_WATERMARK + 20)
        return f"_v{txn:07d}"

    padded_rate = rng.choice([1.0, 1.0, 0.8])
    write_rate = rng.uniform(0.3, 0.9)
    dirs: set[str] = set()
    files: set[str] = set()

    def padded() -> bool:
        return rng.random() < padded_rate

    def delta(prefix: str, low: int, high: int, statement: int | None, suffix: str = "") -> str:
        name = f"{prefix}{_number(low, 7, padded())}_{_number(high, 7, padded())}"
        if statement is not None:
            name += f"_{_number(statement, 4, padded())}"
        return name + suffix

    def add_pair(low: int, high: int, statement: int | None, suffix: str = "") -> None:
        kind = rng.random()
        if kind < 0.55:
            dirs.add(delta("delta_", low, high, statement, suffix))
        elif kind < 0.7:
            dirs.add(delta("delete_delta_", low, high, statement, suffix))
        else:
            dirs.add(delta("delta_", low, high, statement, suffix))
            dirs.add(delta("delete_delta_", low, high, statement, suffix))

    for write_id in range(1, top + 1):
        if rng.random() >= write_rate:
            continue
        style = rng.random()
        if style < 0.15:
            add_pair(write_id, write_id, None)
        elif style < 0.8:
            add_pair(write_id, write_id, 0)
        else:
            for statement in sorted(rng.sample(range(6), rng.randint(2, 3))):
                add_pair(write_id, write_id, statement)

    for _ in range(rng.choice([0, 0, 1, 2, 3])):  # minor compactions (Hive 4: with _v)
        low = rng.randint(1, top)
        high = rng.randint(low, min(top + 2, low + rng.randint(1, 8)))
        suffix = visibility_suffix()
        statement = None if rng.random() < 0.9 else rng.randint(0, 2)
        dirs.add(delta("delta_", low, high, statement, suffix))
        if rng.random() < 0.6:
            dirs.add(delta("delete_delta_", low, high, statement, suffix))

    # Bases: at most one compactor result and one insert overwrite per write ID (docstring 5.).
    for write_id in sorted(rng.sample(range(1, top + 1), min(top, rng.choice([0, 0, 1, 1, 2, 3])))):
        kind = rng.random()
        name = f"base_{_number(write_id, 7, padded())}"
        if kind < 0.4:  # insert overwrite
            if visibility or status.get(write_id) == "committed":
                dirs.add(name)
        elif visibility and kind < 0.8:  # Hive 4's compactor
            dirs.add(name + (visibility_suffix() or f"_v{rng.randint(40, TXN_HIGH_WATERMARK - 1):07d}"))
        elif visibility or min_open is None or write_id != min_open:  # Hive 3's compactor (docstring 3.)
            dirs.add(name)
            files.add(f"{name}/_metadata_acid")
        if not visibility or kind < 0.4:
            continue
        if rng.random() < 0.2 and status.get(write_id) == "committed":  # and an insert overwrite twin
            dirs.add(f"base_{_number(write_id, 7, padded())}")

    if rng.random() < 0.35:  # a table converted from non-ACID: original files
        for name in ("000000_0", "000001_0", "000000_0_copy_1", "000002_0"):
            if rng.random() < 0.6:
                files.add(name)
        if rng.random() < 0.3:
            files.add(f"HIVE_UNION_SUBDIR_{rng.randint(1, 2)}/000000_0")
    if rng.random() < 0.2:
        files.add(rng.choice(["_orc_acid_version", ".hive-staging_1/000000_0", "_tmp.000000_0"]))

    write_ids = hive_write_id_list(high_watermark, open_ids, aborted)
    txns = hive_valid_txn_list(TXN_HIGH_WATERMARK, txn_open, txn_aborted)
    del committed
    return Layout(tuple(sorted(dirs)), tuple(sorted(files)), write_ids, txns)


def _minimise(hive: HiveVersionOracle, layout: Layout, work: Path) -> tuple[Layout, object, object]:
    """Drop directories and files one at a time while ours and Hive's answers still differ."""
    counter = iter(range(10**6))

    def answers(candidate: Layout) -> tuple[object, object]:
        root = candidate.create(work / f"min{next(counter)}")
        (answer,) = hive.acid_states([(root, candidate.write_ids, candidate.txns)])
        ours = _ours(root, candidate)
        return _comparable(hive, answer, ours), ours

    theirs, ours = answers(layout)
    changed = True
    while changed:
        changed = False
        for field in ("acid_dirs", "files"):
            for item in getattr(layout, field):
                kept = tuple(x for x in getattr(layout, field) if x != item)
                if field == "acid_dirs":
                    files = tuple(f for f in layout.files if not f.startswith(item + "/"))
                    candidate = Layout(kept, files, layout.write_ids, layout.txns)
                else:
                    candidate = Layout(layout.acid_dirs, kept, layout.write_ids, layout.txns)
                their_answer, our_answer = answers(candidate)
                if their_answer != our_answer:
                    layout, theirs, ours, changed = candidate, their_answer, our_answer, True
                    break
            if changed:
                break
    return layout, theirs, ours


def _check_random_layouts(
    hive: HiveVersionOracle, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    visibility = hive.has_visibility_suffixes
    rng = random.Random(SEED)
    layouts = [generate_layout(rng, visibility=visibility) for _ in range(LAYOUT_COUNT)]
    roots = [layout.create(tmp_path / f"t{i}") for i, layout in enumerate(layouts)]
    answers = hive.acid_states(
        [(root, lay.write_ids, lay.txns) for root, lay in zip(roots, layouts, strict=True)]
    )

    mismatches = []
    for root, layout, answer in zip(roots, layouts, answers, strict=True):
        ours = _ours(root, layout)
        cli = _ours_cli(root, layout, capsys)
        assert cli == ours, f"CLI and library disagree on {layout.describe()}"
        if _comparable(hive, answer, ours) != ours:
            mismatches.append(layout)

    reached = {
        "base": sum(a.get("base") is not None for a in answers),
        "obsolete": sum(bool(a.get("obsolete")) for a in answers),
        "originals read": sum(bool(a.get("original_files")) for a in answers),
        "open write ids": sum(lay.write_ids.split(":")[3] != "" for lay in layouts),
        "aborted write ids": sum(lay.write_ids.split(":")[4] != "" for lay in layouts),
        "not enough history": sum("error" in a for a in answers),
        "compacted base (_metadata_acid)": sum(
            any(f.endswith("_metadata_acid") for f in lay.files) for lay in layouts
        ),
    }
    if visibility:
        reached["_v read"] = sum(
            "_v" in str(a.get("base")) or any("_v" in d for d in a.get("deltas", [])) for a in answers
        )
        reached["_v aborted"] = sum(any("_v" in d for d in a.get("aborted", [])) for a in answers)
        reached["_v invisible"] = sum(
            any(
                "_v" in d
                and d not in a.get("aborted", [])
                and d not in a.get("deltas", [])
                and d != a.get("base")
                and d not in a.get("obsolete", [])
                for d in lay.acid_dirs
            )
            for lay, a in zip(layouts, answers, strict=True)
            if "error" not in a
        )
    with capsys.disabled():
        print(f"\nHive {hive.version} seed={SEED}: coverage {reached}")
    assert all(count >= 5 for count in reached.values()), reached

    if mismatches:
        smallest = min(mismatches, key=lambda m: len(m.acid_dirs) + len(m.files))
        layout, theirs, ours = _minimise(hive, smallest, tmp_path / "minimise")
        pytest.fail(
            f"seed={SEED}: {len(mismatches)}/{LAYOUT_COUNT} layouts differ from Hive {hive.version}; "
            f"minimal case:\n  layout: {layout.describe()}\n  hive:   {theirs}\n  ours:   {ours}"
        )


@pytest.mark.timeout(600)  # a JVM start (~25 s) and 400 layouts through Hive and acidflow
def test_state_random_layouts_match_hive_3_1(
    hive31: HiveVersionOracle, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Seeded random layouts with Hive 3 write-ID lists: base, deltas, obsolete, originals equal 3.1.3's."""
    _check_random_layouts(hive31, tmp_path, capsys)


@pytest.mark.timeout(600)
def test_state_random_layouts_match_hive_4(
    hive4: HiveVersionOracle, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Seeded random layouts with ``_v`` names and a ValidTxnList: everything equals Hive 4.0.1's."""
    _check_random_layouts(hive4, tmp_path, capsys)
