"""Opt-in, content-addressed response cache: sha256(canonical request) -> stored result.

A rerun or a rescore never pays twice for the same request. Entries are written
atomically and durably (`memorybench.fs.write_atomic`), so a killed run or a crash never
leaves a half entry.
"""

from __future__ import annotations

import os
from pathlib import Path

from memorybench.fs import write_atomic
from memorybench.llm.records import ChatResult


class ResponseCache:
    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)

    def _path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str) -> ChatResult | None:
        path = self._path(key)
        try:
            return ChatResult.model_validate_json(path.read_text("utf-8"))
        except FileNotFoundError:
            return None
        except ValueError:
            # an unreadable entry is a miss; the fresh answer overwrites it
            return None

    def put(self, key: str, result: ChatResult) -> None:
        write_atomic(self._path(key), result.model_dump_json())
