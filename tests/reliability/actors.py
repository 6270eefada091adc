"""The soak's OS processes: ``python -m tests.reliability.actors writer|compactor|cleaner ...``.

::

    writer     SoakWriter steps (seeded) until the journal has --ops operations, then exit 0;
               exit 3 on a failed check (the message is in the journal and on stderr); exit 4
               on a service's fault (PostgreSQL, the HMS, storage down), after one line on stderr,
               ``soak writer stopped by a service fault: <acidflow's one-line error>``: its write
               in flight stays pending in the journal and the next writer resolves it; with
               ``--zookeeper`` its locks are ZooKeeper's, and before each step it writes its session
               (ID, password and its pid) to ``--session-file`` for the fault injector to expire
    compactor  forever: ``acidflow compact --table default.t --type minor|major`` or
               ``acidflow initiate`` + ``acidflow compact`` (embedded executor)
    cleaner    forever: ``acidflow clean`` (sometimes ``--quarantine``, sometimes ``--purge-trash``)

Each prints ``ready`` once it has imported everything (so the driver's kills land in real work),
and appends one JSON line per action to ``--events`` (flushed and fsynced): the driver counts them.
They coordinate only through the real metastore (and the SQL locks in it).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import random
import sys
import time
import traceback

from acid_core.cli import main as acidflow
from acid_core.errors import AcidError
from tests.reliability.writer import TABLE, SoakFailure, SoakWriter, service_fault

SERVICE_FAULT_EXIT = 4
SERVICE_FAULT_PREFIX = "soak writer stopped by a service fault: "


def _event(path: str, record: dict[str, object]) -> None:
    # One write() of the whole line on an O_APPEND descriptor: the writer, compactor and cleaner
    # append to one file at once, and a buffered write of a long line (an error's output runs to
    # kilobytes) goes out in pieces that interleave with another process's line.
    data = (json.dumps(record, sort_keys=True) + "\n").encode()
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        written = os.write(fd, data)
        if written != len(data):
            raise OSError(f"short append to {path}: {written} of {len(data)} bytes")
        os.fsync(fd)
    finally:
        os.close(fd)


def _run(args: argparse.Namespace, *argv: str) -> tuple[int, str]:
    full = [*argv, "--warehouse", args.warehouse]
    if args.metastore:
        full += ["--metastore", args.metastore]
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = acidflow(full)
    # stdout's tail, stderr whole (its one-line errors and warnings are what the driver checks)
    return code, out.getvalue()[-2000:] + err.getvalue()[-20000:]


def _stopped_by_fault(error: BaseException) -> int:
    print(f"{SERVICE_FAULT_PREFIX}{' '.join(str(error).splitlines())}", file=sys.stderr, flush=True)
    return SERVICE_FAULT_EXIT


def _publish_session(args: argparse.Namespace, writer: SoakWriter) -> None:
    """Where the fault injector finds the writer's ZooKeeper session to expire (``--session-file``)."""
    client_id = getattr(writer.wh.lock_manager, "client_id", None)
    if not args.session_file or client_id is None:
        return
    session, password = client_id
    temporary = f"{args.session_file}.{os.getpid()}"
    with open(temporary, "w", encoding="utf-8") as handle:
        json.dump({"session": session, "password": password.hex(), "pid": os.getpid()}, handle)
    os.replace(temporary, args.session_file)


def run_writer(args: argparse.Namespace) -> int:
    try:
        writer = SoakWriter.open(
            args.warehouse, args.metastore or None, args.journal, zookeeper=args.zookeeper or None
        )
    except Exception as error:
        if service_fault(error):
            return _stopped_by_fault(error)
        raise
    rng = random.Random(args.seed)
    print("ready", flush=True)
    code = 0
    try:
        while writer.state.next_op < args.ops:
            _publish_session(args, writer)
            try:
                writer.random_step(rng, leases=not args.no_leases)
            except SoakFailure:
                raise
            except AcidError as error:
                if service_fault(error):
                    raise
                # A statement refused (a lock, a conflict) is aborted and journaled as such; the
                # driver reports every one of these.
                _event(args.events, {"role": "writer", "error": f"{type(error).__name__}: {error}"})
                writer.check("a refused statement")
    except SoakFailure as failure:
        writer.journal.append({"t": "fail", "message": f"{failure} (writer seed {args.seed})"})
        print(f"SOAK FAILURE (writer seed {args.seed}): {failure}", file=sys.stderr, flush=True)
        return 3
    except Exception as error:
        if not service_fault(error):
            raise
        code = _stopped_by_fault(error)
    finally:
        try:
            writer.close()
        except Exception as error:  # releasing the locks needs the service that just failed
            if not service_fault(error):
                raise
    return code


def run_compactor(args: argparse.Namespace) -> int:
    rng = random.Random(args.seed)
    print("ready", flush=True)
    while True:
        choice = rng.random()
        kind = "minor" if choice < 0.45 else "major"
        if choice < 0.8:
            action: tuple[str, ...] = (
                "compact",
                "--table",
                TABLE,
                "--type",
                kind,
                "--executor",
                "embedded",
                "--max",
                "1",
            )
        else:
            _run(args, "initiate")
            action = ("compact", "--executor", "embedded", "--max", "1")
        code, output = _run(args, *action)
        _event(
            args.events, {"role": "compactor", "action": " ".join(action[:5]), "rc": code, "output": output}
        )
        time.sleep(rng.uniform(0, 0.2))


def run_cleaner(args: argparse.Namespace) -> int:
    rng = random.Random(args.seed)
    print("ready", flush=True)
    while True:
        choice = rng.random()
        if choice < 0.7:
            action: tuple[str, ...] = ("clean", "--json")
        elif choice < 0.9:
            action = ("clean", "--quarantine", "--json")
        else:
            action = ("clean", "--purge-trash", TABLE)
        code, output = _run(args, *action)
        _event(args.events, {"role": "cleaner", "action": " ".join(action), "rc": code, "output": output})
        time.sleep(rng.uniform(0, 0.2))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.reliability.actors")
    parser.add_argument("role", choices=("writer", "compactor", "cleaner"))
    parser.add_argument("--warehouse", required=True)
    parser.add_argument("--metastore", default="")
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--events", required=True)
    parser.add_argument("--journal", default="")
    parser.add_argument("--ops", type=int, default=0)
    parser.add_argument("--no-leases", action="store_true", help="the writer takes no leases")
    parser.add_argument("--zookeeper", default="", help="the writer's locks in this ZooKeeper (host:port)")
    parser.add_argument("--session-file", default="", help="the writer publishes its ZooKeeper session here")
    args = parser.parse_args(argv)
    try:
        return {"writer": run_writer, "compactor": run_compactor, "cleaner": run_cleaner}[args.role](args)
    except SoakFailure:
        raise
    except Exception:
        _event(args.events, {"role": args.role, "crash": traceback.format_exc()[-3000:]})
        raise


if __name__ == "__main__":
    sys.exit(main())
