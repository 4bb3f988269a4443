"""Append-only JSONL journals that survive a kill -9.

Each row is written with one `write` of a whole line and flushed at once, so after a
SIGKILL the file holds every finished row plus at most one torn last line. `recover()`
drops that torn line (and any row that is not valid JSON) by truncating the file.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from memorybench.pack.schemas import dump_line


class Journal:
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
                json.loads(data[start:good])
                break
            except ValueError:
                good = start
        if good != len(data):
            with self.path.open("r+b") as f:
                f.truncate(good)
        return len(data) - good

    def rows(self) -> Iterator[dict[str, Any]]:
        if not self.path.exists():
            return
        with self.path.open("r", encoding="utf-8") as f:
            for line in f:
                if line.strip():
                    yield json.loads(line)

    def retain(self, keep: Callable[[dict[str, Any]], bool]) -> int:
        """Rewrite the journal with only the rows `keep` accepts, bytes unchanged (atomic)."""
        if not self.path.exists():
            return 0
        lines = self.path.read_bytes().splitlines(keepends=True)
        kept = [line for line in lines if line.strip() and keep(json.loads(line))]
        if len(kept) != len(lines):
            tmp = self.path.with_suffix(".jsonl.part")
            tmp.write_bytes(b"".join(kept))
            os.replace(tmp, self.path)
        return len(lines) - len(kept)

    def append(self, record: BaseModel | dict[str, Any]) -> None:
        if self._fh is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._fh = self.path.open("a", encoding="utf-8")
        line = dump_line(record) if isinstance(record, BaseModel) else json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n"
        self._fh.write(line)
        self._fh.flush()

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None
