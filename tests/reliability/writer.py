"""The soak's writer: random writes and leases through acidflow's real APIs, each step checked.

::

    writer = SoakWriter.open(warehouse_dir, metastore_url, journal_path)   recovers from the journal
    writer.step("sql_merge", random.Random(7))     one write (or lease action), journaled, then
                                                   check(): SELECT == model, every live lease too
    writer.close()

Steps (``STEP_KINDS``): ``sql_insert``, ``sql_update``, ``sql_delete``, ``sql_merge`` (``acidflow
sql``'s engine), ``api_insert``, ``api_update``, ``api_delete`` (``Warehouse.transaction``),
``api_aborted`` (a transaction that writes files then aborts), ``stream`` (a Hive Streaming batch:
several transactions, some committed, some aborted), ``lease_take`` / ``lease_release`` (the
``acidflow lease`` command).

Recovery (``open``): the journal's write in flight is resolved from the metastore (committed:
applied; open: aborted now, as the reaper would; aborted: dropped; gone from TXNS: housekeeping
only deletes committed ones or aborted ones, and only this writer aborts its own, which it journals,
so committed); then every other open transaction of the writer's user is aborted (opened but not
journaled yet, or a streaming batch's unused ones).

Not here: compaction and cleaning (other processes), killing (the driver).
Errors: ``SoakFailure`` (an ``AssertionError``) when a check fails; it names the step and the seed.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
from contextlib import contextmanager
from typing import TYPE_CHECKING

import pyarrow as pa

from acid_core.cli import main as acidflow
from acid_core.errors import AcidError, CommitStateUnknownError, NoSuchTxnError, failed_service
from acid_core.fs import file_io_for, is_local_location
from acid_core.locks import open_lock_manager
from acid_core.metastore import TxnState
from acid_core.orc.reader import scan_table
from acid_core.orc.schema import ROW_ID_COLUMN
from acid_core.sql.engine import SqlSession
from acid_core.writeids import parse_valid_txn_list
from acid_core.writes.streaming import StreamingConnection
from acid_core.writes.transaction import Warehouse
from tests.reliability.model import Changes, Journal, diff_rows, replay

if TYPE_CHECKING:
    import random
    from collections.abc import Iterator

    from acid_core.writes.transaction import Transaction

TABLE = "default.t"
WRITER_USER = "soak-writer"
CREATE_TABLE = (
    "CREATE TABLE t (id int, v string) CLUSTERED BY (id) INTO 2 BUCKETS STORED AS ORC "
    "TBLPROPERTIES ('transactional'='true')"
)
STEP_KINDS = (
    "sql_insert",
    "sql_update",
    "sql_delete",
    "sql_merge",
    "api_insert",
    "api_update",
    "api_delete",
    "api_aborted",
    "stream",
    "lease_take",
    "lease_release",
)
STEP_WEIGHTS = (4, 2, 2, 2, 3, 1, 1, 1, 2, 1, 2)
LEASE_TTL_SECONDS = 3600


class SoakFailure(AssertionError):
    """A soak invariant does not hold."""


class SoakServiceFault(Exception):
    """An ``acidflow`` command the writer ran failed with a line naming a service (a fault, not a bug)."""

    def __init__(self, line: str) -> None:
        self.line = line
        super().__init__(line)


# How acidflow's one-line errors name the service that failed (``acid_core.errors``' messages).
SERVICE_MARKERS = (
    "PostgreSQL",
    "Hive Metastore",
    "ZooKeeper",
    "Read-only file system",
    "No space left",
    "lock store",
)


def names_service(line: str) -> bool:
    """Whether an error line names the service that failed (and is not acidflow's ``unexpected ...``)."""
    text = line.removeprefix("acidflow: error: ")
    return not text.startswith("unexpected ") and any(marker in text for marker in SERVICE_MARKERS)


def commit_unknown(error: BaseException, *, committing: bool) -> bool:
    """Whether a write that failed with ``error`` may have committed (then recovery reads it back).

    Before its commit a write cannot have committed. At the commit acidflow's contract is that only
    ``CommitStateUnknownError`` leaves the outcome open (a lost answer it could not read back); any
    other ``AcidError`` means not committed. An error acidflow did not translate leaves it open too.
    """
    if not committing:
        return False
    return isinstance(error, CommitStateUnknownError) or not isinstance(error, AcidError)


def service_fault(error: BaseException) -> bool:
    """Whether ``error`` reports a service's fault (PostgreSQL, the HMS, ZooKeeper, storage)."""
    return isinstance(error, SoakServiceFault) or failed_service(error) is not None


def _quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


class _JournaledSession(SqlSession):
    """A SQL session that journals each statement's transaction once it is open, before it commits."""

    def __init__(self, warehouse: Warehouse, writer: SoakWriter) -> None:
        super().__init__(warehouse)
        self._writer = writer

    @contextmanager
    def write_transaction(self) -> Iterator[Transaction]:
        with super().write_transaction() as txn:
            self._writer.journal_pending(txn)
            yield txn
            self._writer.committing = True  # the block is done: the with-exit commits


class SoakWriter:
    """One writer of the soak table (see the module docstring)."""

    def __init__(self, warehouse: Warehouse, metastore_url: str | None, journal_path: str) -> None:
        self.wh = warehouse
        self.metastore_url = metastore_url
        self.journal = Journal(journal_path)
        self.session = _JournaledSession(warehouse, self)
        self._planned: tuple[int, str, Changes] | None = None
        self._pending_op: int | None = None
        self.committing = False
        self.resolved_missing = 0
        self.recover()

    @classmethod
    def open(
        cls, location: str, metastore_url: str | None, journal_path: str, *, zookeeper: str | None = None
    ) -> SoakWriter:
        """Open the warehouse as the soak's writer and recover.

        The locks are SQL locks in the metastore, or ZooKeeper's with ``zookeeper`` (``host:port``).
        """
        environ = (
            {}
            if zookeeper is None
            else {"ACIDFLOW_LOCK_MANAGER": "zookeeper", "ACIDFLOW_ZOOKEEPER": zookeeper}
        )
        locks = open_lock_manager(environ, metastore_url=metastore_url, warehouse=location)
        wh = Warehouse.open(location, metastore_url, locks, user=WRITER_USER, heartbeat_seconds=5.0)
        return cls(wh, metastore_url, journal_path)

    def close(self) -> None:
        """Close the journal, the lock manager and the metastore."""
        self.journal.close()
        self.wh.lock_manager.close()
        self.wh.close()

    # -- the model ----------------------------------------------------------------------------

    @property
    def state(self):
        return replay(self.journal.records())

    def live_leases(self) -> list[int]:
        """IDs of the leases this writer holds (taken, not being released)."""
        state = self.state
        return sorted(set(state.leases) - state.releasing)

    def recover(self) -> None:
        """Resolve the write in flight of a killed writer, abort the writer's other open txns."""
        state = self.state
        metastore = self.wh.metastore
        for pending in state.unresolved:
            try:
                txn_state = metastore.get_txn(pending.txn_id).state
            except NoSuchTxnError:
                txn_state = TxnState.COMMITTED
                self.resolved_missing += 1
            if txn_state is TxnState.OPEN:
                metastore.abort_txn(pending.txn_id)
                txn_state = TxnState.ABORTED
            outcome = "committed" if txn_state is TxnState.COMMITTED else "aborted"
            self.journal.append({"t": "done", "op": pending.op, "outcome": outcome, "recovered": True})
        for info in metastore.show_transactions():
            if info.state is TxnState.OPEN and info.user == WRITER_USER:
                with contextlib.suppress(AcidError):  # it may just have been aborted
                    metastore.abort_txn(info.txn_id)

    def journal_pending(self, txn: Transaction) -> None:
        """Record the planned write under its (open) transaction, before anything commits."""
        if self._planned is None or txn.txn_id is None:
            raise SoakFailure("a write transaction opened outside a planned step")
        op, kind, changes = self._planned
        self._planned = None
        self._pending_op = op
        self._pend(op, kind, txn.txn_id, changes)

    def _pend(self, op: int, kind: str, txn_id: int, changes: Changes) -> None:
        self.journal.append(
            {
                "t": "pending",
                "op": op,
                "kind": kind,
                "txn": txn_id,
                "changes": {str(k): v for k, v in changes.items()},
            }
        )

    def _done(self, op: int, committed: bool) -> None:
        self.journal.append({"t": "done", "op": op, "outcome": "committed" if committed else "aborted"})

    # -- reads ----------------------------------------------------------------------------------

    def select_rows(self) -> list[tuple[int, str]]:
        """``SELECT id, v FROM t`` through the SQL engine (a read-only transaction)."""
        [result] = self.session.execute("SELECT id, v FROM t")
        assert result.rows is not None
        return list(
            zip(result.rows.column("id").to_pylist(), result.rows.column("v").to_pylist(), strict=True)
        )

    def lease_rows(self, write_ids, txns) -> list[tuple[int, str]]:
        """The rows a lease's snapshot reads, through acid_core's reader."""
        table = self.wh.metastore.get_table(TABLE)
        file_io, path = file_io_for(table.location)
        schema = pa.schema([("id", pa.int32()), ("v", pa.string())])
        rows = scan_table(file_io, path, write_ids, txns, schema=schema)
        return list(zip(rows.column("id").to_pylist(), rows.column("v").to_pylist(), strict=True))

    def check(self, what: str) -> int:
        """SELECT equals the model and every live lease reads its rows; returns the rows compared.

        Raises:
            SoakFailure: naming ``what`` and the difference.
        """
        state = self.state
        compared = 0
        try:
            actual = self.select_rows()
        except AcidError as error:
            if service_fault(error):
                raise  # the service is down: not an invariant (the soak's fault profile)
            raise SoakFailure(f"SELECT failed after {what}: {type(error).__name__}: {error}") from error
        _compare(f"SELECT after {what}", state.rows, actual)
        compared += len(actual)
        live = {lease.lease_id: lease for lease in self.wh.metastore.list_leases(TABLE)}
        for lease_id, record in sorted(state.leases.items()):
            if lease_id in state.releasing:
                continue
            lease = live.get(lease_id)
            if lease is None:
                raise SoakFailure(
                    f"lease {lease_id} vanished from the metastore after {what} (never released)"
                )
            # A lease is a reader's snapshot: its write IDs with the txn list of that moment (Hive's
            # getAcidState raises NotEnoughHistory for a snapshot older than a compacted base it
            # sees, so reading with today's txn list is not what a reader holding it does).
            views = [("txns when taken", parse_valid_txn_list(record.txns))]
            for name, txns in views:
                try:
                    rows = self.lease_rows(lease.write_ids, txns)
                except AcidError as error:
                    if service_fault(error):
                        raise
                    raise SoakFailure(
                        f"lease {lease_id} ({lease.write_ids.to_string()}) unreadable with {name} after "
                        f"{what}: {type(error).__name__}: {error}"
                    ) from error
                _compare(
                    f"lease {lease_id} ({lease.write_ids.to_string()}) with {name} after {what}",
                    record.rows,
                    rows,
                )
                compared += len(rows)
        self.journal.append({"t": "check", "rows": compared})
        return compared

    # -- steps ----------------------------------------------------------------------------------

    def step(self, kind: str, rng: random.Random) -> int:
        """Run one step of ``kind`` then check; returns the rows compared."""
        state = self.state
        op = state.next_op
        self.journal.append({"t": "op", "op": op, "kind": kind})
        getattr(self, f"_{kind}")(op, rng, state.rows, state.next_id)
        return self.check(f"op {op} ({kind})")

    def random_step(self, rng: random.Random, *, leases: bool = True) -> tuple[str, int]:
        """A weighted random step (without lease steps unless ``leases``); its kind and rows compared."""
        kinds = [
            (k, w)
            for k, w in zip(STEP_KINDS, STEP_WEIGHTS, strict=True)
            if leases or not k.startswith("lease")
        ]
        kind = rng.choices([k for k, _ in kinds], [w for _, w in kinds])[0]
        return kind, self.step(kind, rng)

    def _sql(self, op: int, kind: str, changes: Changes, text: str) -> None:
        self._planned = (op, kind, changes)
        self._pending_op = None
        self.committing = False
        try:
            self.session.execute(text)
        except Exception as error:
            # Journaled aborted unless the commit may have happened (a service fault at the commit):
            # then it stays pending and the next writer resolves it from the metastore, as after a
            # kill. (An aborted transaction is not left pending: housekeeping may delete its TXNS
            # row, and recovery takes a missing row for a committed transaction.)
            if self._pending_op is not None and not commit_unknown(error, committing=self.committing):
                self._done(self._pending_op, False)
            self._planned = None
            raise
        if self._pending_op is None:
            raise SoakFailure(f"op {op} ({kind}) ran no write transaction: {text}")
        self._done(self._pending_op, True)

    @staticmethod
    def _pick(rng: random.Random, rows: dict[int, str], most: int) -> list[int]:
        if not rows:
            return []
        return sorted(rng.sample(sorted(rows), rng.randint(1, min(most, len(rows)))))

    def _sql_insert(self, op: int, rng: random.Random, rows: dict[int, str], next_id: int) -> None:
        ids = list(range(next_id, next_id + rng.randint(1, 8)))
        changes: Changes = {i: f"i{op}-{i}" for i in ids}
        values = ", ".join(f"({i}, {_quote(v)})" for i, v in changes.items() if v is not None)
        self._sql(op, "sql_insert", changes, f"INSERT INTO t VALUES {values}")

    def _sql_update(self, op: int, rng: random.Random, rows: dict[int, str], next_id: int) -> None:
        ids = self._pick(rng, rows, 5) or [next_id]  # no live row: an UPDATE that matches nothing
        changes: Changes = {i: f"u{op}-{i}" for i in ids if i in rows}
        listed = ", ".join(map(str, ids))
        self._sql(
            op,
            "sql_update",
            changes,
            f"UPDATE t SET v = concat('u{op}-', CAST(id AS string)) WHERE id IN ({listed})",
        )

    def _sql_delete(self, op: int, rng: random.Random, rows: dict[int, str], next_id: int) -> None:
        ids = self._pick(rng, rows, 4) or [next_id]
        changes: Changes = {i: None for i in ids if i in rows}
        self._sql(op, "sql_delete", changes, f"DELETE FROM t WHERE id IN ({', '.join(map(str, ids))})")

    def _sql_merge(self, op: int, rng: random.Random, rows: dict[int, str], next_id: int) -> None:
        matched = self._pick(rng, rows, 4)
        fresh = list(range(next_id, next_id + rng.randint(1, 3)))
        source: list[tuple[int, str]] = []
        changes: Changes = {}
        for i in matched:
            if rng.random() < 0.4:
                source.append((i, "DEL"))
                changes[i] = None
            else:
                source.append((i, f"m{op}-{i}"))
                changes[i] = f"m{op}-{i}"
        for i in fresh:
            source.append((i, f"m{op}-{i}"))
            changes[i] = f"m{op}-{i}"
        using = " UNION ALL ".join(f"SELECT {i} AS id, {_quote(v)} AS v" for i, v in source)
        self._sql(
            op,
            "sql_merge",
            changes,
            f"MERGE INTO t AS a USING ({using}) AS b ON a.id = b.id "
            "WHEN MATCHED AND b.v = 'DEL' THEN DELETE "
            "WHEN MATCHED THEN UPDATE SET v = b.v "
            "WHEN NOT MATCHED THEN INSERT VALUES (b.id, b.v)",
        )

    def _api(self, op: int, kind: str, changes: Changes, write, *, abort: bool = False) -> None:
        txn = self.wh.transaction().begin()
        try:
            assert txn.txn_id is not None
            self._pend(op, kind, txn.txn_id, changes)
            write(txn)
        except BaseException:
            txn.abort()  # best effort: a transaction left open is aborted by the next writer's recovery
            self._done(op, False)
            raise
        if abort:
            txn.abort()
            self._done(op, False)
            return
        try:
            txn.commit()
        except Exception as error:
            if not commit_unknown(error, committing=True):
                txn.abort()
                self._done(op, False)
            raise  # else pending: recovery reads its outcome back
        self._done(op, True)

    @staticmethod
    def _data(changes: Changes) -> pa.Table:
        ids = [i for i, v in changes.items() if v is not None]
        return pa.table(
            {"id": pa.array(ids, pa.int32()), "v": pa.array([changes[i] for i in ids], pa.string())}
        )

    def _api_insert(self, op: int, rng: random.Random, rows: dict[int, str], next_id: int) -> None:
        changes: Changes = {i: f"a{op}-{i}" for i in range(next_id, next_id + rng.randint(1, 8))}
        self._api(op, "api_insert", changes, lambda txn: txn.insert(TABLE, self._data(changes)))

    def _chosen(self, txn: Transaction, ids: list[int]) -> pa.Table:
        live = txn.read(TABLE, with_row_id=True)
        mask = pa.array([i in set(ids) for i in live.column("id").to_pylist()])
        chosen = live.filter(mask)
        if chosen.num_rows != len(ids):
            raise SoakFailure(f"the transaction read {chosen.num_rows} of the rows {ids} the model has")
        return chosen

    def _api_update(self, op: int, rng: random.Random, rows: dict[int, str], next_id: int) -> None:
        ids = self._pick(rng, rows, 5)
        changes: Changes = {i: f"p{op}-{i}" for i in ids}

        def write(txn: Transaction) -> None:
            if not ids:
                return
            chosen = self._chosen(txn, ids)
            values = pa.array([changes[i] for i in chosen.column("id").to_pylist()], pa.string())
            txn.update(TABLE, chosen.set_column(chosen.schema.get_field_index("v"), "v", values))

        self._api(op, "api_update", changes, write)

    def _api_delete(self, op: int, rng: random.Random, rows: dict[int, str], next_id: int) -> None:
        ids = self._pick(rng, rows, 4)
        changes: Changes = dict.fromkeys(ids)

        def write(txn: Transaction) -> None:
            if ids:
                txn.delete(TABLE, self._chosen(txn, ids).select([ROW_ID_COLUMN]))

        self._api(op, "api_delete", changes, write)

    def _api_aborted(self, op: int, rng: random.Random, rows: dict[int, str], next_id: int) -> None:
        inserted: Changes = {i: f"x{op}-{i}" for i in range(next_id, next_id + rng.randint(1, 6))}
        ids = self._pick(rng, rows, 3)
        changes: Changes = {**inserted, **{i: f"x{op}-{i}" for i in ids}}

        def write(txn: Transaction) -> None:
            txn.insert(TABLE, self._data(inserted))
            if ids:
                chosen = self._chosen(txn, ids)
                values = pa.array([f"x{op}-{i}" for i in chosen.column("id").to_pylist()], pa.string())
                txn.update(TABLE, chosen.set_column(chosen.schema.get_field_index("v"), "v", values))

        self._api(op, "api_aborted", changes, write, abort=True)

    def _stream(self, op: int, rng: random.Random, rows: dict[int, str], next_id: int) -> None:
        # One journal op per streaming transaction: op numbers op, op+1, ... (the "op" line of the
        # step only reserves the first).
        with StreamingConnection(self.wh, TABLE, txns_per_batch=rng.randint(1, 4)) as connection:
            for index in range(rng.randint(1, 5)):
                number = op + index
                if index:
                    self.journal.append({"t": "op", "op": number, "kind": "stream"})
                ids = range(next_id, next_id + rng.randint(1, 6))
                next_id += len(ids)
                changes: Changes = {i: f"s{number}-{i}" for i in ids}
                txn_id = connection.begin_transaction()
                self._pend(number, "stream", txn_id, changes)
                committing = False
                try:
                    connection.write(self._data(changes))
                    if rng.random() < 0.25:
                        connection.abort_transaction()
                        self._done(number, False)
                    else:
                        committing = True
                        connection.commit_transaction()
                        self._done(number, True)
                except Exception as error:
                    if not commit_unknown(error, committing=committing):
                        self._done(number, False)  # the batch's exit aborts it (or recovery does)
                    raise

    def _cli(self, *argv: str) -> str:
        out = io.StringIO()
        args = [*argv, "--warehouse", self.wh.location]
        if self.metastore_url:
            args += ["--metastore", self.metastore_url]
        err = io.StringIO()  # apart from stdout: a client library's warnings must not break --json
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = acidflow(args)
        if code != 0:
            errors = [line for line in err.getvalue().splitlines() if line.startswith("acidflow: error: ")]
            if errors and names_service(errors[0]):
                raise SoakServiceFault(errors[0])
            raise SoakFailure(
                f"acidflow {' '.join(argv)} exited {code}: {(out.getvalue() + err.getvalue())[-500:]}"
            )
        return out.getvalue()

    def _lease_take(self, op: int, rng: random.Random, rows: dict[int, str], next_id: int) -> None:
        # A lease is a full snapshot (write IDs and the txn list of the moment it was taken): its
        # reader reads with both, exactly as the lease records them.
        taken = json.loads(self._cli("lease", "take", TABLE, "--ttl", str(LEASE_TTL_SECONDS), "--json"))
        self.journal.append(
            {
                "t": "lease",
                "lease": int(taken["lease_id"]),
                "rows": {str(k): v for k, v in rows.items()},
                "txns": str(taken["txns"]),
            }
        )

    def _lease_release(self, op: int, rng: random.Random, rows: dict[int, str], next_id: int) -> None:
        live = self.live_leases()
        if live:
            self.release_lease(rng.choice(live))

    def release_lease(self, lease_id: int) -> None:
        """``acidflow lease release``, journaled before and after."""
        self.journal.append({"t": "releasing", "lease": lease_id})
        self._cli("lease", "release", str(lease_id))
        self.journal.append({"t": "released", "lease": lease_id})


def _compare(what: str, expected: dict[int, str], actual: list[tuple[int, str]]) -> None:
    seen = {row[0] for row in actual}
    if len(seen) != len(actual):
        duplicates = sorted({row for row in actual if sum(1 for r in actual if r[0] == row[0]) > 1})
        raise SoakFailure(f"{what}: duplicate rows {duplicates[:8]}")
    difference = diff_rows(expected, dict(actual))
    if difference:
        raise SoakFailure(f"{what}: {difference}")


def create_soak_table(location: str, metastore_url: str | None) -> None:
    """Create the soak table (idempotent only in the sense that it is called once per run)."""
    if is_local_location(location):
        os.makedirs(location, exist_ok=True)
    with Warehouse.open(location, metastore_url, heartbeat_seconds=None, user=WRITER_USER) as wh:
        SqlSession(wh).execute(CREATE_TABLE)
