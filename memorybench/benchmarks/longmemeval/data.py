"""Load a LongMemEval file (Wu et al., ICLR 2025) without edits, validating every field we read.

Each of the file's questions has a haystack of its own: it becomes one `Conversation` whose
sample id is the question id (so the resampling unit, a sample, is the question), whose
speakers are the roles `user` and `assistant`, whose sessions are the haystack's sessions in
file order (index 1, 2, ...; `session_id` from `haystack_session_ids`, `date_time` from
`haystack_dates`, as `2023/05/11 (Thu) 17:50`), and whose one question carries

- `category`: the number of its type (`TYPES`, in the order of the authors' README);
- `question_type`, `question_date`, `abstention` (an id ending in `_abs`);
- gold kept scorer-side: `answer` (a string or a number: an int stays an int), the turns
  flagged `has_answer` as `evidence` (turn ids `SESSION_ID:N`, N the 0-based turn index),
  and `answer_session_ids`.

A turn's `has_answer` flag never enters a `Turn`: nothing a model or a memory sees holds it.
The oracle file's sessions are not sorted by time; they are kept in file order, as the
file gives them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from memorybench.data.files import encodable, read_json_file, regular_file, samples_of
from memorybench.data.records import Conversation, Question, Session, Turn
from memorybench.errors import DataError
from memorybench.names import ALLOWED, unsafe_reason

#: question types in the order of the authors' README; the number is the question's category
TYPES: dict[int, str] = {
    1: "single-session-user",
    2: "single-session-assistant",
    3: "single-session-preference",
    4: "multi-session",
    5: "temporal-reasoning",
    6: "knowledge-update",
}
CATEGORY_OF: dict[str, int] = {name: number for number, name in TYPES.items()}
ABSTENTION_SUFFIX = "_abs"
#: longmemeval_m_cleaned.json is 2.7 GB; a bigger file is not LongMemEval
MAX_BYTES = 3 * 1024 * 1024 * 1024
ROLES = ("user", "assistant")


def load_longmemeval(path: str | Path) -> list[Conversation]:
    """Read a LongMemEval file into one `Conversation` per question, in file order."""
    path = regular_file(Path(path), max_bytes=MAX_BYTES, expected="a LongMemEval file (longmemeval_oracle.json, ...)")
    return samples_of(path, read_json_file(path), "questions", "question_id", _haystack)


def _field(obj: dict[str, Any], key: str, kind: type | tuple[type, ...], where: str) -> Any:
    if key not in obj:
        raise DataError(f"{where}: missing key {key!r}; the file is not LongMemEval")
    value = obj[key]
    if not isinstance(value, kind) or isinstance(value, bool):
        names = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
        raise DataError(f"{where}: key {key!r} must be {names}, got {type(value).__name__}")
    return value


def _haystack(item: Any, position: int, path: Path) -> Conversation:
    where = f"{path.name}[{position}]"
    if not isinstance(item, dict):
        raise DataError(f"{where}: a question must be a JSON object, got {type(item).__name__}")
    qid = _field(item, "question_id", str, where)
    reason = unsafe_reason(qid)
    if reason is not None:  # it names the pack's memory files and an agent's workspace folder
        raise DataError(f"{where}: question_id {qid!r} cannot be a folder or file name ({reason}); use {ALLOWED}")
    where = f"{path.name} question {qid}"
    qtype = _field(item, "question_type", str, where)
    if qtype not in CATEGORY_OF:
        raise DataError(f"{where}: question_type {qtype!r} is not one of {', '.join(TYPES.values())}")
    question = _field(item, "question", str, where)
    answer = _field(item, "answer", (str, int, float), where)
    if isinstance(answer, float):
        answer = int(answer) if answer.is_integer() else str(answer)
    if isinstance(answer, str):
        encodable(answer, "answer", where)
    ids = _field(item, "haystack_session_ids", list, where)
    dates = _field(item, "haystack_dates", list, where)
    sessions_raw = _field(item, "haystack_sessions", list, where)
    if not (len(ids) == len(dates) == len(sessions_raw)) or not ids:
        raise DataError(
            f"{where}: haystack_session_ids, haystack_dates and haystack_sessions must be non-empty lists "
            f"of one length, got {len(ids)}, {len(dates)} and {len(sessions_raw)}"
        )
    sessions, evidence = [], []
    for n, (sid, date, turns_raw) in enumerate(zip(ids, dates, sessions_raw, strict=True), start=1):
        at = f"{where} haystack_sessions[{n - 1}]"
        if not isinstance(sid, str) or not isinstance(date, str) or not isinstance(turns_raw, list):
            raise DataError(f"{at}: a session needs a str id, a str date and a list of turns")
        turns = []
        for j, turn in enumerate(turns_raw):
            role = _field(turn, "role", str, f"{at}[{j}]") if isinstance(turn, dict) else None
            if role not in ROLES:
                raise DataError(f"{at}[{j}]: a turn must be an object with role 'user' or 'assistant' and a content")
            content = _field(turn, "content", str, f"{at}[{j}]")
            turns.append(Turn(speaker=role, dia_id=f"{sid}:{j}", text=content))
            if turn.get("has_answer") is True:
                evidence.append(f"{sid}:{j}")
        sessions.append(Session(index=n, date_time=date, turns=tuple(turns), session_id=sid))
    answer_sessions = _field(item, "answer_session_ids", list, where)
    q = Question(
        question_id=qid,
        sample_id=qid,
        qa_index=0,
        category=CATEGORY_OF[qtype],
        question=question,
        answer=answer,
        adversarial_answer=None,
        evidence=tuple(evidence),
        question_date=_field(item, "question_date", str, where),
        question_type=qtype,
        abstention=qid.endswith(ABSTENTION_SUFFIX),
        answer_session_ids=tuple(str(s) for s in answer_sessions),
    )
    return Conversation(
        sample_id=qid, speaker_a="user", speaker_b="assistant", sessions=tuple(sessions), questions=(q,), session_summaries={}
    )
