"""A local MLflow store (`sqlite:///PATH`) shared by several drivers: one at a time, and never half-built.

Two `memorybench track`s (or a sweep's driver and a `track`) on one sqlite file would
both create a fresh store's tables ("table experiments already exists") and both find no
run for a pack and log it twice; a process killed while MLflow creates the tables leaves
a store every later open refuses ("table secrets already exists"). So:

- `store_lock`: a driver logs under a file lock beside the database (`<db>.lock`,
  `memorybench.pack.lock.WriterLock`, waiting for the holder), from its first open to its
  parent run's end; the next driver then finds the runs the first logged;
- `prepare_sqlite_store` (under that lock, before MLflow opens the file): a new store is
  built beside its path and renamed into place whole, so a kill leaves no store at all;
  one left half-built by an earlier kill, holding no run, is moved aside and built anew.

An MLflow server (`http(s)://`) serializes its clients itself: nothing here applies.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import sqlite3
import sys
from collections.abc import Iterator
from pathlib import Path

from memorybench.errors import UserError
from memorybench.fs import replace_durable
from memorybench.pack.lock import WriterLock

__all__ = ["prepare_sqlite_store", "sqlite_file", "store_lock"]


def sqlite_file(tracking_uri: str) -> Path | None:
    """The database file of a `sqlite:///PATH` URI, resolved; None for a server or an in-memory store."""
    if not tracking_uri.startswith("sqlite:///"):
        return None
    path = tracking_uri[len("sqlite:///") :].split("?", 1)[0]
    return Path(path).expanduser().resolve() if path and path != ":memory:" else None


@contextlib.contextmanager
def store_lock(tracking_uri: str) -> Iterator[None]:
    """Hold the store's lock (`<db>.lock`) for a sqlite URI, waiting for another driver; nothing else."""
    db = sqlite_file(tracking_uri)
    if db is None:
        yield
        return
    with WriterLock(db.with_name(db.name + ".lock"), "MLflow store", folder=db, wait=True):
        yield


def prepare_sqlite_store(db: Path, artifact_location: str | None) -> None:
    """Make the store at `db` whole before MLflow opens it (hold `store_lock`).

    MLflow creates a store's tables on first use in many steps (the initial tables, then
    each alembic migration, and sqlite commits each DDL statement at once), so a kill in
    between leaves tables that no recorded revision accounts for. A store that is not at
    this MLflow's schema head, or lacks tables, and holds no run is such a leftover: it is
    moved aside (`<db>.broken-<time>`, kept) and built anew, with one line on stderr. One
    that holds runs is never touched (an interrupted upgrade: `mlflow db upgrade`).
    """
    if db.is_file() and db.stat().st_size > 0:
        problem = _schema_problem(db)
        if problem is None:
            return
        if _holds_runs(db):
            raise UserError(
                f"MLflow store {db} is {problem} and holds runs, so it is not rebuilt; back it up, then run "
                f"`mlflow db upgrade sqlite:///{db}` (or track into another store with --uri)"
            )
        stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
        aside = db.with_name(f"{db.name}.broken-{stamp}")
        os.replace(db, aside)
        print(
            f"mlflow: store {db} was left half-initialized ({problem}) and held no run; "
            f"moved it to {aside.name} and built a new one",
            file=sys.stderr,
        )
    _build_store(db, artifact_location)


def _schema_problem(db: Path) -> str | None:
    """How the store differs from a whole one of this MLflow; None when it is whole."""
    import sqlalchemy

    try:  # the checks MLflow itself runs when it opens a store
        from mlflow.store.db.utils import _all_tables_exist, _get_latest_schema_revision, _get_schema_version
    except ImportError:  # another MLflow layout: leave the store to MLflow's own checks
        return None
    engine = sqlalchemy.create_engine(f"sqlite:///{db}")
    try:
        revision, head = _get_schema_version(engine), _get_latest_schema_revision()
        if revision != head:
            return f"at schema revision {revision}, not this MLflow's {head}"
        if not _all_tables_exist(engine):
            return f"missing tables at schema revision {revision}"
        return None
    except sqlalchemy.exc.DatabaseError as e:
        raise UserError(f"MLflow store {db} is not an SQLite database ({e.orig}); pass --uri to another store") from None
    finally:
        engine.dispose()


def _holds_runs(db: Path) -> bool:
    """Whether the store holds a run (a store left half-built by its first use holds none)."""
    try:
        with contextlib.closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as conn:
            return conn.execute("SELECT 1 FROM runs LIMIT 1").fetchone() is not None
    except sqlite3.Error:
        return False  # no runs table: no run


def _build_store(db: Path, artifact_location: str | None) -> None:
    """A new store at `db` with every migration applied, renamed into place whole."""
    from mlflow.store.tracking.sqlalchemy_store import SqlAlchemyStore

    db.parent.mkdir(parents=True, exist_ok=True)
    tmp = db.with_name(db.name + ".init.part")
    for stale in (tmp, tmp.with_name(tmp.name + "-journal")):
        stale.unlink(missing_ok=True)  # left by a build that was killed
    store = SqlAlchemyStore(f"sqlite:///{tmp}", artifact_location or (db.parent / "mlartifacts").resolve().as_uri())
    store.engine.dispose()
    replace_durable(tmp, db)  # under the store's lock: the fixed temp name is this builder's alone
