"""Reading a benchmark's dataset file: a regular file of a sane size, UTF-8 JSON, every
string text (no lone surrogate), its samples unique by id. Each benchmark's loader
(`memorybench/benchmarks/<name>/data.py`) builds its records on these, so a broken file is
one `DataError` line naming the file and the place, whichever benchmark it is.
"""

from __future__ import annotations

import errno
import json
import os
import re
import stat
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from memorybench.data.records import Conversation, Question
from memorybench.errors import DataError
from memorybench.hashing import sha256_file

__all__ = [
    "MAX_DATASET_BYTES",
    "encodable",
    "file_sha256",
    "iter_questions",
    "parse_json",
    "read_bytes",
    "read_json_file",
    "regular_file",
    "require",
    "samples_of",
]

#: the largest dataset file read by default (locomo10.json is 2.8 MB); a benchmark with larger
#: files names its own bound (`Dataset.max_bytes`)
MAX_DATASET_BYTES = 256 * 1024 * 1024


def file_sha256(path: Path) -> str:
    return sha256_file(regular_file(Path(path)))


def regular_file(path: Path, *, max_bytes: int = MAX_DATASET_BYTES, expected: str = "the dataset file") -> Path:
    """`path` when it is a readable regular file of a sane size, else one DataError line: a
    FIFO would block the read forever, a device or a symlink loop never yields a dataset.
    `expected` names the file a user should point at (LoCoMo's, or another benchmark's)."""
    try:
        info = path.stat()
    except FileNotFoundError:
        raise DataError(f"dataset file {path} does not exist; run `memorybench fetch` or set dataset.path") from None
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise DataError(f"dataset.path {path} is a symlink loop; point it at {expected} itself") from None
        raise DataError(f"dataset file {path} cannot be read ({e.strerror}); check the path and its permissions") from None
    if stat.S_ISDIR(info.st_mode):
        raise DataError(f"dataset.path {path} is a folder, not a file; point it at {expected}")
    if not stat.S_ISREG(info.st_mode):
        kind = "a FIFO" if stat.S_ISFIFO(info.st_mode) else "a socket" if stat.S_ISSOCK(info.st_mode) else "a device"
        raise DataError(f"dataset.path {path} is {kind}, not a regular file; point it at {expected}")
    if info.st_size > max_bytes:
        raise DataError(
            f"dataset file {path} is {info.st_size} bytes, more than any such file "
            f"({max_bytes} at most); point dataset.path at {expected}"
        )
    return path


def read_json_file(path: Path) -> Any:
    """A dataset file's JSON; a file that cannot be read, is not UTF-8 or not JSON is one
    DataError line naming the file and where."""
    return parse_json(path, read_bytes(path))


def read_bytes(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as e:
        raise DataError(
            f"dataset file {path} cannot be read ({e.strerror or os.strerror(e.errno or 0)}); check its permissions"
        ) from None


def parse_json(path: Path, raw_bytes: bytes) -> Any:
    try:
        return _text_only(path, raw_bytes, json.loads(raw_bytes.decode("utf-8")))
    except UnicodeDecodeError as e:
        raise DataError(f"dataset file {path} is not UTF-8 ({e.reason} at byte {e.start}); use the released file") from None
    except json.JSONDecodeError as e:
        raise DataError(f"dataset file {path} is not valid JSON ({e.msg} at line {e.lineno}); use the released file") from None
    except RecursionError:
        raise DataError(
            f"dataset file {path} nests its JSON deeper than any released file (Python's limit); use the released file"
        ) from None


#: a JSON escape of a UTF-16 surrogate (`\\ud800`), high or low
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


def _lone_surrogate_escape(raw_bytes: bytes) -> bool:
    """Whether the file's text holds a surrogate escape that is not half of a pair (a high one
    right before a low one: an emoji as `json.dumps` escapes it, which files written with
    ensure_ascii hold many of). Only such a file is worth walking string by string."""
    pending = None  # where a high escape without its low one yet ended
    for m in _SURROGATE_ESCAPE.finditer(raw_bytes):
        high = raw_bytes[m.start() + 3] in b"89abAB"
        if pending is not None and (high or m.start() != pending):
            return True  # the high one before this is alone
        if high:
            pending = m.end()
        elif pending is None:
            return True  # a low one without its high one
        else:
            pending = None
    return pending is not None


def _text_only(path: Path, raw_bytes: bytes, value: Any) -> Any:
    """`value` when no string in it (a key, a value, at any depth) holds a lone surrogate, which
    no UTF-8 file can hold and which fails the first hash or JSON line of a pack: else one
    DataError naming the place. Every string of every benchmark's file is checked here, where
    it is read; a file with no lone surrogate escape (every released one) is not walked."""
    if not _lone_surrogate_escape(raw_bytes):
        return value
    stack: list[tuple[Any, str]] = [(value, path.name)]
    while stack:
        node, where = stack.pop()
        if isinstance(node, str):
            encodable(node, where.rsplit(".", 1)[-1].split("[", 1)[0], where)
        elif isinstance(node, dict):
            for key, item in node.items():
                encodable(str(key), "a key", where)
                stack.append((item, f"{where}.{key}"))
        elif isinstance(node, list):
            stack.extend((item, f"{where}[{n}]") for n, item in enumerate(node))
    return value


def samples_of(
    path: Path, raw: Any, items: str, id_field: str, build: Callable[[Any, int, Path], Conversation]
) -> list[Conversation]:
    """A dataset file's samples: `raw` must be a non-empty JSON list of `items`, each built by
    `build(item, index, path)`, their ids (the file's `id_field`) unique."""
    if not isinstance(raw, list) or not raw:
        raise DataError(f"dataset file {path} must hold a non-empty JSON list of {items}, got {type(raw).__name__}")
    samples = [build(item, i, path) for i, item in enumerate(raw)]
    seen: set[str] = set()
    for s in samples:
        if s.sample_id in seen:
            raise DataError(f"dataset file {path}: {id_field} {s.sample_id!r} occurs twice; ids must be unique")
        seen.add(s.sample_id)
    return samples


def iter_questions(conversations: Iterable[Conversation]) -> Iterator[Question]:
    """Every question of the first conversation, then the next, in source array order."""
    for conversation in conversations:
        yield from conversation.questions


def require(obj: dict[str, Any], key: str, kind: type | tuple[type, ...], where: str) -> Any:
    if key not in obj:
        raise DataError(f"{where}: missing key {key!r}")
    value = obj[key]
    if not isinstance(value, kind) or isinstance(value, bool):
        names = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
        raise DataError(f"{where}: key {key!r} must be {names}, got {type(value).__name__}")
    if isinstance(value, str):
        encodable(value, key, where)
    return value


def encodable(value: str, key: str, where: str) -> None:
    """A JSON `\\ud800` escape decodes to a lone surrogate, which no UTF-8 file can hold:
    refused here, naming the place, rather than failing when the pack is written."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as e:
        raise DataError(
            f"{where}: key {key!r} holds a lone surrogate {value[e.start]!r} at character {e.start}, which is not "
            "text; fix the escape in the file (the released files have none)"
        ) from None
