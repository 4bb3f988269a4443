"""What every released-results format is read into: rows with their own scores, and stated figures.

A format reader (`ReleasedFormat`) turns its files into `Released`: one `ReleasedRow` per
answer, in file order, holding the question, the gold and the category as the file writes
them (checked against the dataset when the rows are mapped), the prediction, and the
file's own per-row scores keyed by our metric names (`locomo_f1`, `mem0_f1`,
`mem0_bleu1`, and `label` for a judge's label). Nothing here knows the dataset.
"""

from __future__ import annotations

import errno
import json
import math
import os
import stat
import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Protocol

from memorybench.errors import UserError

__all__ = [
    "JudgeLabels",
    "Released",
    "ReleasedFormat",
    "ReleasedRow",
    "Stated",
    "category_of",
    "depth_at_most",
    "is_finite_number",
    "read_bytes",
    "read_json",
    "shape_error",
]


@dataclass(frozen=True)
class ReleasedRow:
    #: the file's conversation key (`"3"`, `locomo_experiment_user_3`, `conv-43`) and the row's
    #: position under it (0-based): where the row is, for error messages and audit rows
    key: str
    index: int
    question: str
    #: the gold as the file writes it (mem0's evals.py writes `str(answer)`; Zep keeps ints)
    gold: Any
    category: int
    prediction: str
    #: the file's own per-row scores by our metric name: `locomo_f1`, `mem0_f1`, `mem0_bleu1`,
    #: `label` (a judge's label as written); absent when the file has none
    reported: dict[str, Any] = field(default_factory=dict)
    #: the row's other fields, kept as they are
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Stated:
    """A figure a stats file states for one category: its row count and score total."""

    rows: int
    total: float


@dataclass(frozen=True)
class JudgeLabels:
    """How a format's judge labels read: the field, and the label's J score (1 correct, 0 not)."""

    #: the file's field (`llm_score`, `grade`)
    field: str
    #: who gave the labels, in words, for the judge folder's notes
    described: str


@dataclass
class Released:
    rows: list[ReleasedRow]
    #: (role, path) of every file read: `results` first, then `stats`, `responses`
    files: list[tuple[str, Path]]
    #: the model key the rows were read under (LoCoMo's `<model>_prediction`), if any
    model_key: str | None = None
    #: metric -> category -> what a stats file states
    stated: dict[str, dict[int, Stated]] = field(default_factory=dict)
    #: the file's judge labels (`label` in each row's `reported`), if it has any
    labels: JudgeLabels | None = None
    #: the file's per-row score fields, by our metric name (`{"mem0_bleu1": "bleu_score"}`)
    fields: dict[str, str] = field(default_factory=dict)
    #: categories whose questions the format leaves out (mem0's evals.py and Zep drop 5)
    drops: tuple[int, ...] = ()
    #: rows the file has but did not answer (LoCoMo's qa rows without `<model>_prediction`: a run
    #: that stopped), where each is (`conv-26 qa[3]`); their questions are absent, so the file is
    #: partial: imported only with --allow-partial
    unanswered: list[str] = field(default_factory=list)
    #: what the format says of the file beyond its rows (a judged file's runs and their mean, a known
    #: release's nature): printed under the reproduction table, kept in imported/source.json's notes
    notes: list[str] = field(default_factory=list)


class ReleasedFormat(Protocol):
    """One released format: `memorybench import --format NAME`."""

    name: ClassVar[str]
    #: the shape, in one line, for the help text and for errors
    shape: ClassVar[str]

    def read(self, files: Sequence[Path], model_key: str | None) -> Released: ...


#: the largest released file read (the released files we know are under 1 MB; LoCoMo's own is 3 MB)
MAX_RELEASED_BYTES = 64 * 1024 * 1024
#: the deepest nesting of arrays and objects read (the formats we know nest 4 deep)
MAX_RELEASED_DEPTH = 32


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
    raw = _open_regular(path)
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


def category_of(value: Any, path: Path, where: str) -> int:
    """A row's category as an int (mem0's evals.py writes it as a string), or a UserError."""
    try:
        category = int(value)
    except (TypeError, ValueError, OverflowError):  # OverflowError: Infinity
        category = None
    if category not in (1, 2, 3, 4, 5) or isinstance(value, bool) or (isinstance(value, float) and not value.is_integer()):
        raise UserError(f"{path}: {where} has category {value!r}; LoCoMo's categories are 1, 2, 3, 4, 5")
    return category
