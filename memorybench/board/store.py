"""board.json (`board.v1`): the board's rows, kept between builds so a new pack adds only its own.

`update_board(sources, out)` scans the sources for finished packs (local folders or `gs://`
prefixes, `memorybench.compare.aggregate.scan_packs`), keys each by its location and the bytes of
its `_SUCCESS` files (`memorybench.board.row.pack_key`: two small reads), keeps every row of
`out/board.json` whose key is still there, reads only the packs whose key is new (in a few
processes when there are several local ones), drops the rows of packs no longer given, and writes
board.json whole (`memorybench.fs.write_atomic`) when a row came, went or changed.
"""

from __future__ import annotations

import multiprocessing
import os
import sys
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import ValidationError

from memorybench.board.row import BoardRow, board_row, pack_key
from memorybench.errors import UserError
from memorybench.fs import write_atomic
from memorybench.pack.reader import PackReader
from memorybench.records import Record

__all__ = ["BOARD_FILE", "Board", "BoardUpdate", "read_board", "update_board"]

BOARD_FILE = "board.json"
#: new local packs read in worker processes from this many on (below it, starting them costs more)
_PARALLEL_FROM = 4


class Board(Record, schema="board.v1"):
    """Every row of a board, in the order of their packs' locations."""

    rows: list[BoardRow] = []


@dataclass
class BoardUpdate:
    board: Board
    #: keys of the rows read now, kept from before, and dropped (their packs no longer given)
    added: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)
    unfinished: int = 0


def read_board(out: Path) -> Board | None:
    """The board.json in `out`, or None where there is none or it is another version (rebuilt whole)."""
    path = out / BOARD_FILE
    if not path.is_file():
        return None
    try:
        return Board.model_validate_json(path.read_bytes())
    except (ValidationError, ValueError):
        print(f"board: {path} is not a board.v1 file of this version; every pack is read again", file=sys.stderr)
        return None


def _build(task: tuple[str, str]) -> BoardRow:
    return board_row(task[0], task[1])


def _workers(count: int) -> int:
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(1, min(cores, count, 8))


def _read_rows(tasks: list[tuple[str, str]]) -> list[BoardRow]:
    local = [t for t in tasks if "://" not in t[0]]
    remote = [t for t in tasks if "://" in t[0]]
    rows: list[BoardRow] = []
    workers = _workers(len(local) - 1)
    if len(local) >= _PARALLEL_FROM and workers > 1 and "fork" in multiprocessing.get_all_start_methods():
        # the first pack read here: what every row needs (scipy.stats, pyarrow, the benchmark's
        # gold audit) is then loaded once and shared by the forked workers, not loaded by each
        rows.append(_build(local[0]))
        rest = local[1:]
        with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork")) as pool:
            rows.extend(pool.map(_build, rest, chunksize=max(1, len(rest) // (workers * 4))))
    else:
        rows.extend(_build(t) for t in local)
    rows.extend(_build(t) for t in remote)  # a bucket's client is not shared across a fork
    return rows


def update_board(sources: Sequence[str | os.PathLike[str]], out: Path) -> BoardUpdate:
    """Bring `out/board.json` up to date with the finished packs of `sources` (see the module docstring)."""
    from memorybench.compare.aggregate import scan_packs

    scan = scan_packs(sources)
    if not scan.finished:
        raise UserError(f"no finished pack in {', '.join(map(str, sources))}: a pack is finished when it has _SUCCESS")
    before = read_board(out)
    old = {row.key: row for row in (before.rows if before else [])}
    keyed: list[tuple[str, str]] = []
    for location in sorted(scan.finished, key=str):
        pack = PackReader.open(location)
        keyed.append((pack.uri(), pack_key(pack)))
    new = [(uri, key) for uri, key in keyed if key not in old]
    built = {row.key: row for row in _read_rows(new)}
    rows = [old.get(key) or built[key] for _, key in keyed]
    kept = [key for _, key in keyed if key in old]
    given = {key for _, key in keyed}
    board = Board(rows=rows)
    out.mkdir(parents=True, exist_ok=True)
    if before is None or before.rows != rows:  # rewritten only when a row changed, came or went
        write_atomic(out / BOARD_FILE, board.model_dump_json(by_alias=True) + "\n")
    return BoardUpdate(
        board=board,
        added=[key for _, key in new],
        kept=kept,
        dropped=sorted(k for k in old if k not in given),
        unfinished=len(scan.unfinished),
    )
