"""How every importer reads a released file: bounded, never through a link, one line per fault.

A released file (another project's per-question results) is read as untrusted input: a
regular file only (`read_bytes`, `read_json`; no FIFO, device or folder, never through a
symbolic link), at most MAX_RELEASED_BYTES, nested at most MAX_RELEASED_DEPTH deep, a `.gz`
name gunzipped within MAX_UNZIPPED_BYTES (`released_json`). What its rows then hold a pack can
keep (`finite`, `bounded_rows`: no NaN or Infinity, answers within reader.max_answer_chars).
Every fault is one `UserError` line naming the file and the fix. Nothing here knows a
benchmark: each benchmark's importers read their formats' rows into their own records.
"""

from __future__ import annotations

import dataclasses
import errno
import gzip
import io
import json
import math
import os
import stat
import zlib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from memorybench.errors import UserError

__all__ = [
    "MAX_RELEASED_BYTES",
    "MAX_RELEASED_DEPTH",
    "MAX_UNZIPPED_BYTES",
    "bounded_rows",
    "depth_at_most",
    "finite",
    "is_finite_number",
    "need",
    "read_bytes",
    "read_json",
    "released_json",
    "shape_error",
]


#: the largest released file read (the released files we know are under 1 MB; LoCoMo's own is 3 MB)
MAX_RELEASED_BYTES = 64 * 1024 * 1024
#: the deepest nesting of arrays and objects read (the formats we know nest 4 deep)
MAX_RELEASED_DEPTH = 32
#: the largest unzipped released file read (AMB's BEAM 128K file with its retrieved contexts is some 25 MB)
MAX_UNZIPPED_BYTES = 512 * 1024 * 1024


def _open_regular(path: Path) -> bytes:
    """The bytes of `path` if it is a regular file of at most MAX_RELEASED_BYTES, else a
    one-line UserError. Opened without blocking, so a FIFO or a device is refused, never
    waited on or read forever; and with `O_NOFOLLOW`: a symbolic link as the file itself is
    refused, naming where it points (a link in a downloaded release may point at a host file,
    whose content would land in a pack meant to be shared; docs/design.md, section 10). The
    folders above it may be links: they are the user's own layout."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise UserError(f"released file {path} does not exist; pass the path of the file to import") from None
    except IsADirectoryError:
        raise UserError(f"{path} is a folder; pass the released JSON file itself") from None
    except OSError as e:
        if e.errno == errno.ELOOP and os.path.islink(path):
            raise UserError(
                f"released file {path} is a symbolic link (to {os.readlink(path)}); import reads no file through a "
                "link, so one in a downloaded release cannot make it read a host file: pass the real file's path"
            ) from None
        raise UserError(f"released file {path} cannot be read ({e.strerror}); pass a readable file") from None
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise UserError(f"{path} is a folder; pass the released JSON file itself")
        if not stat.S_ISREG(info.st_mode):
            raise UserError(
                f"released file {path} is not a regular file (a device, a FIFO or a socket); pass the JSON file itself"
            )
        too_big = UserError(
            f"released file {path} is larger than {MAX_RELEASED_BYTES // (1024 * 1024)} MiB; "
            "the released files this reads are under a few MiB: pass the file as released"
        )
        if info.st_size > MAX_RELEASED_BYTES:
            raise too_big
        with os.fdopen(fd, "rb", closefd=False) as f:
            data = f.read(MAX_RELEASED_BYTES + 1)
        if len(data) > MAX_RELEASED_BYTES:
            raise too_big
        return data
    finally:
        os.close(fd)


def read_bytes(path: Path) -> bytes:
    """A released file's bytes, refused as `read_json` refuses a file (a link, a FIFO, a device, a
    folder, more than MAX_RELEASED_BYTES): for a format that is not one JSON document (the
    LongMemEval authors' JSON lines)."""
    return _open_regular(path)


def depth_at_most(value: Any, limit: int = MAX_RELEASED_DEPTH) -> bool:
    """Whether `value` nests arrays and objects at most `limit` deep."""
    return _depth_at_most(value, limit)


def _depth_at_most(value: Any, limit: int) -> bool:
    """Whether `value` nests arrays and objects at most `limit` deep (walked without recursion)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, (dict, list)):
            if depth > limit:
                return False
            stack.extend((v, depth + 1) for v in (item.values() if isinstance(item, dict) else item))
    return True


def read_json(path: Path) -> Any:
    """A released JSON file, or a one-line UserError naming it: a regular file only, at most
    MAX_RELEASED_BYTES, nested at most MAX_RELEASED_DEPTH deep. NaN and Infinity are read as
    floats (a score may be one); `non_finite` finds them for the caller to report."""
    return _parsed(path, _open_regular(path))


def released_json(path: Path, kind: str = "released") -> Any:
    """A released JSON file (gunzipped where its name ends `.gz`), bounded as `read_json` bounds
    it; `kind` names such files in the size error ("released BEAM")."""
    raw = read_bytes(path)
    if path.name.endswith(".gz"):
        try:
            with gzip.GzipFile(fileobj=io.BytesIO(raw)) as f:
                raw = f.read(MAX_UNZIPPED_BYTES + 1)
        except (OSError, EOFError, zlib.error) as e:
            raise UserError(f"released file {path} is not gzip data ({e}); pass the file as released") from None
        if len(raw) > MAX_UNZIPPED_BYTES:
            raise UserError(
                f"released file {path} unzips to more than {MAX_UNZIPPED_BYTES // (1024 * 1024)} MiB; "
                f"the {kind} files are a few tens of MiB: pass the file as released"
            )
    return _parsed(path, raw)


def _parsed(path: Path, raw: bytes) -> Any:
    """`raw` as JSON, or one line naming `path`: not UTF-8, not JSON, nested too deep."""
    deep = UserError(
        f"released file {path} nests arrays and objects more than {MAX_RELEASED_DEPTH} deep; "
        "the released formats nest a few levels: pass the file as released"
    )
    try:
        data = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as e:
        raise UserError(f"released file {path} is not UTF-8 ({e.reason} at byte {e.start}); pass the file as released") from None
    except json.JSONDecodeError as e:
        raise UserError(
            f"released file {path} is not valid JSON ({e.msg} at line {e.lineno}); pass the file as released"
        ) from None
    except RecursionError:
        raise deep from None
    if not _depth_at_most(data, MAX_RELEASED_DEPTH):
        raise deep
    return data


def need(row: Mapping[str, Any], key: str, kind: type | tuple[type, ...], where: str, fmt: str) -> Any:
    """`row[key]` when it is of `kind` (a bool only where `kind` names bool), else one line naming
    the key, what it must be and the format the file was given as."""
    kinds = kind if isinstance(kind, tuple) else (kind,)
    value = row.get(key)
    if key not in row or not isinstance(value, kind) or (isinstance(value, bool) and bool not in kinds):
        found = "no such key" if key not in row else type(value).__name__
        names = " or ".join(k.__name__ for k in kinds)
        raise UserError(
            f"{where}: key {key!r} must be {names} (found {found}); is this a {fmt} file? "
            "check --format (memorybench import --help lists the formats and their shapes)"
        )
    return value


def is_finite_number(value: Any) -> bool:
    """False for a float NaN or Infinity (which strict JSON cannot hold); True for anything else."""
    return not (isinstance(value, float) and not math.isfinite(value))


def finite(value: Any) -> tuple[Any, bool]:
    """`value` with every NaN and Infinity (as floats, anywhere inside) made null, and whether any was."""
    if isinstance(value, dict):
        pairs = {k: finite(v) for k, v in value.items()}
        return {k: v for k, (v, _) in pairs.items()}, any(hit for _, hit in pairs.values())
    if isinstance(value, list):
        items = [finite(v) for v in value]
        return [v for v, _ in items], any(hit for _, hit in items)
    return (None, True) if not is_finite_number(value) else (value, False)


def bounded_rows(
    rows: Sequence[Any], *, id_field: str, answer_field: str, answers: str = "answers"
) -> tuple[list[Any], list[str]]:
    """Released rows (dataclasses with `extra`) a pack can hold: NaN and Infinity in their other
    fields made null (strict JSON holds neither), each answer (`answer_field`) cut to
    reader.max_answer_chars as a qa answer is; a note for each kind of change, naming rows by
    `id_field` and the answers by `answers` ("hypotheses" for LongMemEval's)."""
    from memorybench.answer.reader import DEFAULT_MAX_ANSWER_CHARS

    out, held, cut = [], [], []
    for row in rows:
        extra, bad = finite(dict(row.extra))
        if bad:
            held.append(getattr(row, id_field))
            row = dataclasses.replace(row, extra=extra)
        text = getattr(row, answer_field)
        if len(text) > DEFAULT_MAX_ANSWER_CHARS:
            cut.append((getattr(row, id_field), len(text)))
            row = dataclasses.replace(row, **{answer_field: text[:DEFAULT_MAX_ANSWER_CHARS]})
        out.append(row)
    notes = []
    if held:
        notes.append(
            f"{len(held)} rows hold NaN or Infinity in other fields, kept as null (no value): {', '.join(held[:10])}"
            + (f" and {len(held) - 10} more" if len(held) > 10 else "")
        )
    if cut:
        notes.append(
            f"{len(cut)} {answers} longer than {DEFAULT_MAX_ANSWER_CHARS:,} characters (reader.max_answer_chars, as a qa "
            f"answer) were cut to it; first {cut[0][0]} of {cut[0][1]:,} characters"
        )
    return out, notes


def shape_error(path: Path, fmt: str, shape: str, found: str) -> UserError:
    """The one line for a file that is not of the format it was given as."""
    return UserError(
        f"{path} is not a {fmt} file: expected {shape}, found {found}; "
        "check --format (memorybench import --help lists the formats and their shapes)"
    )
