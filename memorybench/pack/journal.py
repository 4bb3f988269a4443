"""Append-only JSONL journals that survive a kill -9 and a full disk.

Each row is written at once as a whole line, unbuffered, so after a SIGKILL the file holds
every finished row plus at most one torn last line. `recover()` drops that torn line (and
any row that is not valid JSON) by truncating the file. A write that fails (a full disk)
is cut back to the last whole row before the error is raised, so the rows already written
stay valid and a rerun appends after them.
"""

from __future__ import annotations

import errno
import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel

from memorybench.errors import UserError
from memorybench.fs import NO_SPACE, write_atomic
from memorybench.pack.reader import PackError
from memorybench.pack.schemas import dump_line
from memorybench.records import Record, SchemaError, load_json, parse_record
from memorybench.secrets import scrub

T = TypeVar("T", bound=Record)


class DiskFullError(UserError):
    """A pack file could not be written: no space left on the device that holds it."""


def disk_full(path: str | os.PathLike[str] | None, error: OSError) -> DiskFullError:
    """The one-line error for a write that failed with ENOSPC/EDQUOT (at `path`, when known)."""
    reason = "no space left on device" if error.errno == errno.ENOSPC else str(error.strerror or error).lower()
    where, disk = (f" writing {path}", "that disk") if path else ("", "the disk that holds the pack")
    return DiskFullError(
        f"{reason}{where}; free space on {disk} (or move the pack to a bigger one: qa takes paths.packs=NEW_ROOT, "
        "a later stage the moved pack folder), then rerun the same command to resume; rows already written are kept"
    )


class Journal:
    """One append-only JSONL file of a pack being written; rows are framed by `\\n` only
    (a journal writes U+2028 raw inside JSON strings, which `str.splitlines` would cut)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fh = None

    def recover(self) -> int:
        """Truncate a torn last line; return how many bytes were dropped."""
        if not self.path.exists():
            return 0
        data = self.path.read_bytes()
        good = len(data)
        if data and not data.endswith(b"\n"):
            good = data.rfind(b"\n") + 1
        # a last full line that is not JSON was torn mid-write by an earlier crash
        while good > 0:
            start = data.rfind(b"\n", 0, good - 1) + 1
            try:
                load_json(data[start:good])
                break
            except ValueError:
                good = start
        if good != len(data):
            with self.path.open("r+b") as f:
                f.truncate(good)
        return len(data) - good

    def _lines(self) -> Iterator[tuple[int, bytes]]:
        """(1-based line number, line) of every non-blank line; a binary file splits on `\\n` only."""
        if not self.path.exists():
            return
        with self.path.open("rb") as f:
            for number, line in enumerate(f, start=1):
                if line.strip():
                    yield number, line

    def rows(self) -> Iterator[dict[str, Any]]:
        """The decoded rows, in file order (none when the file does not exist)."""
        for _, line in self._lines():
            yield load_json(line)

    def records(self, model: type[T] | None = None) -> Iterator[T]:
        """The rows as records: each validated against `model`, or the schema its `schema` names."""
        for number, line in self._lines():
            try:
                yield parse_record(load_json(line), model)  # type: ignore[misc]
            except ValueError as e:  # json's and SchemaError
                detail = str(e) if isinstance(e, SchemaError) else "not valid JSON"
                raise PackError(f"{self.path} line {number}: {detail}; run `memorybench verify` on the pack") from None

    def retain(self, keep: Callable[[dict[str, Any]], bool]) -> int:
        """Rewrite the journal with only the rows `keep` accepts, bytes unchanged (atomic)."""
        if not self.path.exists():
            return 0
        with self.path.open("rb") as f:
            lines = list(f)  # split after each `\n` only, endings kept
        kept = [line for line in lines if line.strip() and keep(load_json(line))]
        if len(kept) != len(lines):
            write_atomic(self.path, b"".join(kept))
        return len(lines) - len(kept)

    def append(self, record: BaseModel | dict[str, Any]) -> None:
        line = (
            dump_line(record)
            if isinstance(record, BaseModel)
            else json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n"
        )
        # every journal row of every stage passes here: no known credential is written
        line = scrub(line)
        data = memoryview(line.encode("utf-8"))
        end: int | None = None
        try:
            if self._fh is None:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                # unbuffered: a failed write leaves no bytes behind in a buffer that a later flush would add
                self._fh = self.path.open("ab", buffering=0)
            end = os.fstat(self._fh.fileno()).st_size
            while data:
                data = data[self._fh.write(data) :]  # a full disk may take part of a line before it fails
        except OSError as e:
            self._cut_back(end)
            if e.errno in NO_SPACE:
                raise disk_full(self.path, e) from None
            raise

    def _cut_back(self, end: int | None) -> None:
        """After a failed write: drop its part line (this also frees the space it took) and the handle."""
        if self._fh is None:
            return
        try:
            if end is not None:
                self._fh.truncate(end)
            self._fh.close()
        except OSError:
            pass  # recover() drops a torn line on the next run
        self._fh = None

    def close(self) -> None:
        """Close the journal, its rows flushed to the disk first (a `_SUCCESS` written after
        it records them: a crash must not leave a marker over rows still in the page cache)."""
        if self._fh is not None:
            try:
                os.fsync(self._fh.fileno())
            except OSError:
                pass  # a file system without fsync: closing is all it offers
            self._fh.close()
            self._fh = None
