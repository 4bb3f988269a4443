"""Load locomo10.json without edits, validating every field we read.

A malformed file raises `DataError` with one line that names the sample and the key.
The quirks of the released file (PINS.md) are handled here and nowhere else:
date keys without a session, int and missing gold answers, list-valued dia_ids in
observations (which we do not read), image turns.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import re
import stat
import threading
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from memorybench.hashing import sha256_file
from memorybench.names import ALLOWED, unsafe_reason
from memorybench.data.records import Conversation, Question, Session, Turn
from memorybench.errors import DataError

_SESSION_KEY = re.compile(r"^session_(\d+)$")
_SUMMARY_KEY = re.compile(r"^session_(\d+)_summary$")
CATEGORIES = (1, 2, 3, 4, 5)
#: the largest dataset file read (locomo10.json is 2.8 MB): a bigger one is not LoCoMo
MAX_DATASET_BYTES = 256 * 1024 * 1024


def file_sha256(path: Path) -> str:
    return sha256_file(regular_file(Path(path)))


def regular_file(path: Path, *, max_bytes: int = MAX_DATASET_BYTES, expected: str = "locomo10.json") -> Path:
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
        raise DataError(f"dataset file {path} is {info.st_size} bytes, more than any such file "
                        f"({max_bytes} at most); point dataset.path at {expected}")
    return path


def read_json_file(path: Path) -> Any:
    """A dataset file's JSON; a file that cannot be read, is not UTF-8 or not JSON is one
    DataError line naming the file and where."""
    return _parse_json(path, _read_bytes(path))


def _read_bytes(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as e:
        raise DataError(f"dataset file {path} cannot be read ({e.strerror or os.strerror(e.errno or 0)}); check its permissions") from None


def _parse_json(path: Path, raw_bytes: bytes) -> Any:
    try:
        return _text_only(path, raw_bytes, json.loads(raw_bytes.decode("utf-8")))
    except UnicodeDecodeError as e:
        raise DataError(f"dataset file {path} is not UTF-8 ({e.reason} at byte {e.start}); use the released file") from None
    except json.JSONDecodeError as e:
        raise DataError(f"dataset file {path} is not valid JSON ({e.msg} at line {e.lineno}); use the released file") from None
    except RecursionError:
        raise DataError(f"dataset file {path} nests its JSON deeper than any released file (Python's limit); use the released file") from None


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
            _encodable(node, where.rsplit(".", 1)[-1].split("[", 1)[0], where)
        elif isinstance(node, dict):
            for key, item in node.items():
                _encodable(str(key), "a key", where)
                stack.append((item, f"{where}.{key}"))
        elif isinstance(node, list):
            stack.extend((item, f"{where}[{n}]") for n, item in enumerate(node))
    return value


#: the conversations of the files read last, by the sha256 of their bytes (the records are
#: frozen): `show` reads the dataset for the walk and again for the gold-error overlay
_PARSED: dict[str, tuple[Conversation, ...]] = {}
_PARSED_LOCK = threading.Lock()


def load_locomo(path: str | Path) -> list[Conversation]:
    """Read a LoCoMo file into `Conversation` records, in file order."""
    path = regular_file(Path(path))
    raw_bytes = _read_bytes(path)
    key = hashlib.sha256(raw_bytes).hexdigest()
    parsed = _PARSED.get(key)
    if parsed is None:
        parsed = tuple(_conversations(path, raw_bytes))
        with _PARSED_LOCK:  # the report reads from several threads
            while len(_PARSED) >= 2:
                _PARSED.pop(next(iter(_PARSED)))
            _PARSED[key] = parsed
    return list(parsed)


def _conversations(path: Path, raw_bytes: bytes) -> list[Conversation]:
    return samples_of(path, _parse_json(path, raw_bytes), "conversations", "sample_id", _conversation)


def samples_of(path: Path, raw: Any, items: str, id_field: str,
               build: Callable[[Any, int, Path], Conversation]) -> list[Conversation]:
    """A dataset file's samples: `raw` must be a non-empty JSON list of `items`, each built by
    `build(item, index, path)`, their ids (the file's `id_field`) unique. LoCoMo's and LongMemEval's."""
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


def _require(obj: dict[str, Any], key: str, kind: type | tuple[type, ...], where: str) -> Any:
    if key not in obj:
        raise DataError(f"{where}: missing key {key!r}")
    value = obj[key]
    if not isinstance(value, kind) or isinstance(value, bool):
        names = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
        raise DataError(f"{where}: key {key!r} must be {names}, got {type(value).__name__}")
    if isinstance(value, str):
        _encodable(value, key, where)
    return value


def _encodable(value: str, key: str, where: str) -> None:
    """A JSON `\\ud800` escape decodes to a lone surrogate, which no UTF-8 file can hold:
    refused here, naming the place, rather than failing when the pack is written."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as e:
        raise DataError(
            f"{where}: key {key!r} holds a lone surrogate {value[e.start]!r} at character {e.start}, which is not "
            "text; fix the escape in the file (the released files have none)"
        ) from None


def _conversation(item: Any, position: int, path: Path) -> Conversation:
    where = f"{path.name}[{position}]"
    if not isinstance(item, dict):
        raise DataError(f"{where}: a conversation must be a JSON object, got {type(item).__name__}")
    sample_id = _require(item, "sample_id", str, where)
    reason = unsafe_reason(sample_id)
    if reason is not None:  # it names the pack's memory files and an agent's workspace folder
        raise DataError(
            f"{where}: sample_id {sample_id!r} cannot be a folder or file name ({reason}); LoCoMo's ids are like "
            f"conv-26: use {ALLOWED}"
        )
    where = f"{path.name} sample {sample_id}"
    conv = _require(item, "conversation", dict, where)
    speaker_a = _require(conv, "speaker_a", str, f"{where} conversation")
    speaker_b = _require(conv, "speaker_b", str, f"{where} conversation")

    sessions: list[Session] = []
    for key, value in conv.items():
        m = _SESSION_KEY.match(key)
        # conv-26 has session_N_date_time keys with no session: only list values are sessions
        if not m or not isinstance(value, list):
            continue
        n = int(m.group(1))
        date = _require(conv, f"session_{n}_date_time", str, f"{where} conversation")
        turns = tuple(_turn(t, f"{where} {key}[{j}]") for j, t in enumerate(value))
        sessions.append(Session(index=n, date_time=date, turns=turns))
    if not sessions:
        raise DataError(f"{where}: conversation has no session_N lists; the file is not LoCoMo")
    sessions.sort(key=lambda s: s.index)

    qa = _require(item, "qa", list, where)
    questions = tuple(_question(q, sample_id, i, f"{where} qa[{i}]") for i, q in enumerate(qa))

    summaries: dict[int, str] = {}
    raw_summaries = item.get("session_summary", {})
    if not isinstance(raw_summaries, dict):
        raise DataError(f"{where}: key 'session_summary' must be dict, got {type(raw_summaries).__name__}")
    for key, text in raw_summaries.items():
        m = _SUMMARY_KEY.match(key)
        if m and isinstance(text, str):
            _encodable(text, key, f"{where} session_summary")
            summaries[int(m.group(1))] = text

    return Conversation(
        sample_id=sample_id,
        speaker_a=speaker_a,
        speaker_b=speaker_b,
        sessions=tuple(sessions),
        questions=questions,
        session_summaries=summaries,
    )


def _turn(raw: Any, where: str) -> Turn:
    if not isinstance(raw, dict):
        raise DataError(f"{where}: a turn must be a JSON object, got {type(raw).__name__}")
    caption = raw.get("blip_caption")
    if caption is not None and not isinstance(caption, str):
        raise DataError(f"{where}: key 'blip_caption' must be str, got {type(caption).__name__}")
    if caption:
        _encodable(caption, "blip_caption", where)
    return Turn(
        speaker=_require(raw, "speaker", str, where),
        dia_id=_require(raw, "dia_id", str, where),
        text=_require(raw, "text", str, where),
        blip_caption=caption or None,
    )


def _question(raw: Any, sample_id: str, qa_index: int, where: str) -> Question:
    if not isinstance(raw, dict):
        raise DataError(f"{where}: a qa row must be a JSON object, got {type(raw).__name__}")
    category = _require(raw, "category", int, where)
    if category not in CATEGORIES:
        raise DataError(f"{where}: category {category} is not one of 1, 2, 3, 4, 5")
    question = _require(raw, "question", str, where)
    answer = raw.get("answer")
    if answer is not None and (not isinstance(answer, (str, int)) or isinstance(answer, bool)):
        raise DataError(f"{where}: key 'answer' must be str or int, got {type(answer).__name__}")
    if isinstance(answer, str):
        _encodable(answer, "answer", where)
    adversarial = raw.get("adversarial_answer")
    if adversarial is not None and not isinstance(adversarial, str):
        raise DataError(f"{where}: key 'adversarial_answer' must be str, got {type(adversarial).__name__}")
    if adversarial:
        _encodable(adversarial, "adversarial_answer", where)
    if answer is None and category != 5:
        raise DataError(f"{where}: missing key 'answer' (only category 5 rows may lack it)")
    evidence = raw.get("evidence", [])
    if not isinstance(evidence, list):
        raise DataError(f"{where}: key 'evidence' must be list, got {type(evidence).__name__}")
    return Question(
        question_id=f"{sample_id}-q-{qa_index}",
        sample_id=sample_id,
        qa_index=qa_index,
        category=category,
        question=question,
        answer=answer,
        adversarial_answer=adversarial,
        # nine evidence ids are malformed in the release; they are kept verbatim
        evidence=tuple(str(e) for e in evidence),
    )
