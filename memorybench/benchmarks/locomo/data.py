"""Load locomo10.json without edits, validating every field we read.

A malformed file raises `DataError` with one line that names the sample and the key.
The quirks of the released file (PINS.md) are handled here and nowhere else:
date keys without a session, int and missing gold answers, list-valued dia_ids in
observations (which we do not read), image turns.
"""

from __future__ import annotations

import hashlib
import re
import threading
from pathlib import Path
from typing import Any

from memorybench.data.files import encodable, parse_json, read_bytes, regular_file, require, samples_of
from memorybench.data.records import Conversation, Question, Session, Turn
from memorybench.errors import DataError
from memorybench.names import ALLOWED, unsafe_reason

__all__ = ["CATEGORIES", "load_locomo"]

_SESSION_KEY = re.compile(r"^session_(\d+)$")
_SUMMARY_KEY = re.compile(r"^session_(\d+)_summary$")
CATEGORIES = (1, 2, 3, 4, 5)


#: the conversations of the files read last, by the sha256 of their bytes (the records are
#: frozen): `show` reads the dataset for the walk and again for the gold-error overlay
_PARSED: dict[str, tuple[Conversation, ...]] = {}
_PARSED_LOCK = threading.Lock()


def load_locomo(path: str | Path) -> list[Conversation]:
    """Read a LoCoMo file into `Conversation` records, in file order."""
    path = regular_file(Path(path), expected="locomo10.json")
    raw_bytes = read_bytes(path)
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
    return samples_of(path, parse_json(path, raw_bytes), "conversations", "sample_id", _conversation)


def _conversation(item: Any, position: int, path: Path) -> Conversation:
    where = f"{path.name}[{position}]"
    if not isinstance(item, dict):
        raise DataError(f"{where}: a conversation must be a JSON object, got {type(item).__name__}")
    sample_id = require(item, "sample_id", str, where)
    reason = unsafe_reason(sample_id)
    if reason is not None:  # it names the pack's memory files and an agent's workspace folder
        raise DataError(
            f"{where}: sample_id {sample_id!r} cannot be a folder or file name ({reason}); LoCoMo's ids are like "
            f"conv-26: use {ALLOWED}"
        )
    where = f"{path.name} sample {sample_id}"
    conv = require(item, "conversation", dict, where)
    speaker_a = require(conv, "speaker_a", str, f"{where} conversation")
    speaker_b = require(conv, "speaker_b", str, f"{where} conversation")

    sessions: list[Session] = []
    for key, value in conv.items():
        m = _SESSION_KEY.match(key)
        # conv-26 has session_N_date_time keys with no session: only list values are sessions
        if not m or not isinstance(value, list):
            continue
        n = int(m.group(1))
        date = require(conv, f"session_{n}_date_time", str, f"{where} conversation")
        turns = tuple(_turn(t, f"{where} {key}[{j}]") for j, t in enumerate(value))
        sessions.append(Session(index=n, date_time=date, turns=turns))
    if not sessions:
        raise DataError(f"{where}: conversation has no session_N lists; the file is not LoCoMo")
    sessions.sort(key=lambda s: s.index)

    qa = require(item, "qa", list, where)
    questions = tuple(_question(q, sample_id, i, f"{where} qa[{i}]") for i, q in enumerate(qa))

    summaries: dict[int, str] = {}
    raw_summaries = item.get("session_summary", {})
    if not isinstance(raw_summaries, dict):
        raise DataError(f"{where}: key 'session_summary' must be dict, got {type(raw_summaries).__name__}")
    for key, text in raw_summaries.items():
        m = _SUMMARY_KEY.match(key)
        if m and isinstance(text, str):
            encodable(text, key, f"{where} session_summary")
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
        encodable(caption, "blip_caption", where)
    return Turn(
        speaker=require(raw, "speaker", str, where),
        dia_id=require(raw, "dia_id", str, where),
        text=require(raw, "text", str, where),
        blip_caption=caption or None,
    )


def _question(raw: Any, sample_id: str, qa_index: int, where: str) -> Question:
    if not isinstance(raw, dict):
        raise DataError(f"{where}: a qa row must be a JSON object, got {type(raw).__name__}")
    category = require(raw, "category", int, where)
    if category not in CATEGORIES:
        raise DataError(f"{where}: category {category} is not one of 1, 2, 3, 4, 5")
    question = require(raw, "question", str, where)
    answer = raw.get("answer")
    if answer is not None and (not isinstance(answer, (str, int)) or isinstance(answer, bool)):
        raise DataError(f"{where}: key 'answer' must be str or int, got {type(answer).__name__}")
    if isinstance(answer, str):
        encodable(answer, "answer", where)
    adversarial = raw.get("adversarial_answer")
    if adversarial is not None and not isinstance(adversarial, str):
        raise DataError(f"{where}: key 'adversarial_answer' must be str, got {type(adversarial).__name__}")
    if adversarial:
        encodable(adversarial, "adversarial_answer", where)
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
