"""Read a BEAM tier folder into `Conversation` records, and each probing question's scorer-side record.

A tier folder (the pinned `chats/100K`, or a local copy: `dataset.path` names the folder) holds
one numbered folder per conversation, `N/chat.json` and `N/probing_questions/probing_questions.json`
(the paths of the authors' answer_generation.py and run_evaluation.py), read in the order of N.

- `chat.json` is a list of batches, `{"batch_number", "time_anchor", "turns"}`, `turns` a list of
  chats, each a list of turns `{"role", "id", "content"}` (user turns also carry `index` and
  `question_type`). In the 128K tier every batch's own `time_anchor` is null and its first turn
  carries it ("March-15-2024"): a batch's date is its `time_anchor`, else the one anchor its turns
  carry. A batch is a `Session` (index: its position, 1-based; id `batch-<batch_number>`; date:
  that anchor, as written); its turns, chats flattened in order, are `Turn(role, str(id), content)`.
  `id` runs through the whole conversation and is what the questions' `source_chat_ids` name, so
  it is the turn id. The 10M tier, as the authors' code reads it (long_term_memory_methods.py:
  `list(plan.values())[0]`), is a list of plans `{name: [batch, ...]}`: read the same way, batches
  numbered on across plans, session id `<plan name>/batch-<batch_number>`.
- `probing_questions.json` maps an ability to its questions (2 each in the pinned tier, ten
  abilities). Question `qa_index` counts through the file (abilities in file order, then list
  order): question id `beam-<tier>-<N>-q-<qa_index>`, sample id `beam-<tier>-<N>` (`<tier>` the
  folder's name, "100K"). Its category is the ability's number (`ABILITIES`), its `answer` the
  ability's reference (named five ways: `REFERENCE_KEY`), its evidence the `source_chat_ids`
  (a list, or a dict of lists, flattened in order), its `question_type` the ability's own type
  field (`SUBTYPE_KEY`). Only the question's text is ever asked (`Question.asked()`).
- Everything else a question has, `difficulty`, the reference, `rubric` and the ability-specific
  fields, is gold-like: kept in a `BeamQuestion` (`read_tier(path).questions`), which only a
  scorer reads; its rubric items and the strings of those fields also ride with the `Question`
  as `other_gold` (scorer-side, like `answer`, and scanned as gold by verify). The official
  scoring judges the answer against each rubric item; event ordering also aligns the answer's
  lines with the rubric items (`score.py`).

Every malformed input is one `DataError` line naming the file and the key.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

from memorybench.benchmarks.beam.pins import CHAT_FILE, QUESTIONS_FILE
from memorybench.data.files import encodable, read_json_file, regular_file, require
from memorybench.data.records import Conversation, Question, Session, Turn
from memorybench.errors import DataError

__all__ = [
    "ABILITIES",
    "REFERENCE_KEY",
    "SUBTYPE_KEY",
    "TIERS",
    "BeamQuestion",
    "BeamTier",
    "beam_questions",
    "load_beam",
    "question_columns",
    "read_tier",
]

#: BEAM's ten abilities, in the order of the files' keys and of report_results.py's columns; an
#: ability's category number is its position here plus one
ABILITIES: tuple[str, ...] = (
    "abstention",
    "contradiction_resolution",
    "event_ordering",
    "information_extraction",
    "instruction_following",
    "knowledge_update",
    "multi_session_reasoning",
    "preference_following",
    "summarization",
    "temporal_reasoning",
)
#: the field that holds an ability's reference answer (the files use five names for it)
REFERENCE_KEY: Mapping[str, str] = MappingProxyType(
    {
        "abstention": "ideal_response",
        "contradiction_resolution": "ideal_answer",
        "event_ordering": "answer",
        "information_extraction": "answer",
        "instruction_following": "expected_compliance",
        "knowledge_update": "answer",
        "multi_session_reasoning": "answer",
        "preference_following": "expected_compliance",
        "summarization": "ideal_summary",
        "temporal_reasoning": "answer",
    }
)
#: the field that names an ability's own kind of question ("missing_detail", "mention_sequence", ...)
SUBTYPE_KEY: Mapping[str, str] = MappingProxyType(
    {
        "abstention": "abstention_type",
        "contradiction_resolution": "contradiction_type",
        "event_ordering": "ordering_type",
        "information_extraction": "question_type",
        "instruction_following": "instruction_type",
        "knowledge_update": "update_type",
        "multi_session_reasoning": "reasoning_type",
        "preference_following": "preference_type",
        "summarization": "summarization_type",
        "temporal_reasoning": "temporal_type",
    }
)
#: the tier folders of the repository (`chats/<tier>`; 100K is the paper's 128K tier): a question
#: id carries its tier, so a local copy keeps the folder's name
TIERS: tuple[str, ...] = ("100K", "500K", "1M", "10M")
#: the largest chat file read (the 10M tier's conversations are some 40 MB of JSON each)
MAX_CHAT_BYTES = 512 * 1024 * 1024
_EXPECTED = "BEAM's tier folder (chats/100K: its numbered conversation folders)"


@dataclass(frozen=True)
class BeamQuestion:
    """A probing question's gold-like fields: scorer-side only, never shown to a memory or a model."""

    question_id: str
    sample_id: str
    ability: str
    #: its position in its ability's list (run_evaluation.py's `index`, which `get_rubric` reads)
    index: int
    #: as written ("easy", "medium", "hard", "clear"; one summarization question has "")
    difficulty: str
    #: the ability's own kind of question (`SUBTYPE_KEY`); None where the file has none
    subtype: str | None
    #: which field held the reference (`REFERENCE_KEY`) and its text
    reference_key: str
    ideal_response: str
    #: what the judge checks, one request per item; event ordering's reference order too
    rubric: tuple[str, ...]
    #: the turn ids the question was written from (`source_chat_ids`, flattened in order)
    source_chat_ids: tuple[int, ...]
    #: every other field of the question, raw (read-only)
    details: Mapping[str, Any]

    #: the question as asked (a detail quoting a phrase of it leaks nothing)
    question: str = ""

    def gold_strings(self) -> tuple[str, ...]:
        """The reference, the rubric items and every string of the other fields, but those the
        question itself holds (`key_elements_tested` repeats its phrases): what a contamination
        check looks for in anything a model or memory was given."""
        found = [self.ideal_response, *self.rubric]
        stack: list[Any] = [self.details]
        while stack:
            node = stack.pop()
            if isinstance(node, str):
                found.append(node)
            elif isinstance(node, Mapping):
                stack.extend(node.values())
            elif isinstance(node, (list, tuple)):
                stack.extend(node)
        return tuple(dict.fromkeys(s for s in found if s and s not in self.question))


@dataclass(frozen=True)
class BeamTier:
    """A tier folder read: its conversations and, by question id, their questions' gold-like fields."""

    tier: str
    path: Path
    conversations: tuple[Conversation, ...]
    questions: Mapping[str, BeamQuestion]

    @property
    def turn_count(self) -> int:
        return sum(c.turn_count for c in self.conversations)


def load_beam(path: str | os.PathLike[str]) -> list[Conversation]:
    """The conversations of a tier folder, with their questions (the benchmark's `loader`)."""
    return list(read_tier(path).conversations)


def beam_questions(path: str | os.PathLike[str]) -> dict[str, BeamQuestion]:
    """The scorer-side records of a tier folder's questions, by question id."""
    return dict(read_tier(path).questions)


def question_columns(path: str | os.PathLike[str]) -> dict[str, dict[str, str]]:
    """`plan --questions`'s columns beside the ability (the benchmark's `question_columns`): each
    question's difficulty, as written ("-" where the file has an empty one)."""
    return {qid: {"difficulty": q.difficulty or "-"} for qid, q in read_tier(path).questions.items()}


def read_tier(path: str | os.PathLike[str]) -> BeamTier:
    """A tier folder: every numbered conversation folder, in the order of its number."""
    folder = _tier_folder(Path(path))
    tier = folder.name
    numbers = sorted((int(p.name) for p in folder.iterdir() if p.is_dir() and p.name.isdigit()), key=int)
    if not numbers:
        raise DataError(f"dataset.path {folder} has no numbered conversation folders (1/, 2/, ...); point it at {_EXPECTED}")
    conversations: list[Conversation] = []
    questions: dict[str, BeamQuestion] = {}
    for number in numbers:
        conversation, scorer = _conversation(folder / str(number), f"beam-{tier}-{number}")
        conversations.append(conversation)
        questions.update((q.question_id, q) for q in scorer)
    return BeamTier(tier, folder, tuple(conversations), MappingProxyType(questions))


def _tier_folder(path: Path) -> Path:
    if not path.exists():
        raise DataError(f"dataset.path {path} does not exist; run `memorybench fetch` or point it at {_EXPECTED}")
    if not path.is_dir():
        raise DataError(f"dataset.path {path} is a file; BEAM's dataset is a folder: point it at {_EXPECTED}")
    if path.name not in TIERS:
        raise DataError(
            f"dataset.path {path}: the folder must keep its tier's name ({', '.join(TIERS)}), which every "
            f"question id carries; rename the copy or point at {_EXPECTED}"
        )
    return path


def _conversation(folder: Path, sample_id: str) -> tuple[Conversation, list[BeamQuestion]]:
    chat_path = regular_file(folder / CHAT_FILE, max_bytes=MAX_CHAT_BYTES, expected=f"{folder}/{CHAT_FILE}")
    sessions = _sessions(chat_path, read_json_file(chat_path))
    turn_ids = {t.dia_id for s in sessions for t in s.turns}
    questions_path = regular_file(folder / QUESTIONS_FILE, expected=f"{folder}/{QUESTIONS_FILE}")
    asked, scorer = _questions(questions_path, read_json_file(questions_path), sample_id, turn_ids)
    return Conversation(sample_id, "user", "assistant", tuple(sessions), tuple(asked), {}), scorer


def _batches(path: Path, raw: Any) -> list[tuple[str, dict[str, Any], str]]:
    """(session id prefix, batch, where) for each batch: a list of batches, or of 10M's plans."""
    if not isinstance(raw, list) or not raw:
        raise DataError(f"{path} must hold a non-empty JSON list of batches, got {type(raw).__name__}; use BEAM's chat.json")
    out: list[tuple[str, dict[str, Any], str]] = []
    for n, item in enumerate(raw):
        where = f"{path}[{n}]"
        if isinstance(item, dict) and "turns" in item:
            out.append(("", item, where))
        elif isinstance(item, dict) and len(item) == 1 and isinstance(next(iter(item.values())), list):
            ((plan, batches),) = item.items()  # the 10M tier: one plan's batches under its name
            for b, batch in enumerate(batches):
                if not isinstance(batch, dict):
                    raise DataError(f"{where}.{plan}[{b}]: a batch must be a JSON object, got {type(batch).__name__}")
                out.append((f"{plan}/", batch, f"{where}.{plan}[{b}]"))
        else:
            raise DataError(
                f"{where}: neither a batch (an object with key 'turns') nor a plan ({{name: [batches]}}); use BEAM's chat.json"
            )
    return out


def _sessions(path: Path, raw: Any) -> list[Session]:
    sessions: list[Session] = []
    seen: set[int] = set()
    for index, (prefix, batch, where) in enumerate(_batches(path, raw), 1):
        number = require(batch, "batch_number", int, where)
        chats = require(batch, "turns", list, where)
        turns: list[Turn] = []
        anchors: list[str] = []
        for c, chat in enumerate(chats):
            if not isinstance(chat, list):
                raise DataError(f"{where}.turns[{c}]: key 'turns' must hold lists of turns, got {type(chat).__name__}")
            for t, turn in enumerate(chat):
                at = f"{where}.turns[{c}][{t}]"
                if not isinstance(turn, dict):
                    raise DataError(f"{at}: a turn must be a JSON object, got {type(turn).__name__}")
                role = require(turn, "role", str, at)
                turn_id = require(turn, "id", int, at)
                content = require(turn, "content", str, at)
                if turn_id in seen:
                    raise DataError(f"{at}: key 'id' {turn_id} occurs twice in the conversation; turn ids must be unique")
                seen.add(turn_id)
                if turn.get("time_anchor") is not None:
                    anchors.append(require(turn, "time_anchor", str, at))
                turns.append(Turn(role, str(turn_id), content))
        sessions.append(Session(index, _anchor(batch, anchors, where), tuple(turns), f"{prefix}batch-{number}"))
    return sessions


def _anchor(batch: dict[str, Any], turn_anchors: list[str], where: str) -> str:
    """A batch's date: its own `time_anchor`, else the one its turns carry (the 128K tier's shape)."""
    if batch.get("time_anchor") is not None:
        return str(require(batch, "time_anchor", str, where))
    distinct = list(dict.fromkeys(turn_anchors))
    if len(distinct) != 1:
        found = "none" if not distinct else ", ".join(repr(a) for a in distinct)
        raise DataError(
            f"{where}: key 'time_anchor' is null and its turns carry {found} (one expected); "
            "a batch's date is its time anchor: use BEAM's chat.json"
        )
    return distinct[0]


def _questions(path: Path, raw: Any, sample_id: str, turn_ids: set[str]) -> tuple[list[Question], list[BeamQuestion]]:
    if not isinstance(raw, dict) or not raw:
        raise DataError(
            f"{path} must hold a non-empty JSON object of abilities, got {type(raw).__name__}; use BEAM's probing_questions.json"
        )
    asked: list[Question] = []
    scorer: list[BeamQuestion] = []
    for ability, items in raw.items():
        if ability not in ABILITIES:
            raise DataError(f"{path}: key {ability!r} is not one of BEAM's ten abilities ({', '.join(ABILITIES)})")
        if not isinstance(items, list):
            raise DataError(f"{path}: key {ability!r} must hold a list of questions, got {type(items).__name__}")
        for index, item in enumerate(items):
            where = f"{path}.{ability}[{index}]"
            if not isinstance(item, dict):
                raise DataError(f"{where}: a probing question must be a JSON object, got {type(item).__name__}")
            qid = f"{sample_id}-q-{len(asked)}"
            question, record = _question(item, ability, index, qid, sample_id, len(asked), where, turn_ids)
            asked.append(question)
            scorer.append(record)
    return asked, scorer


def _question(
    item: dict[str, Any], ability: str, index: int, qid: str, sample_id: str, qa_index: int, where: str, turn_ids: set[str]
) -> tuple[Question, BeamQuestion]:
    text = require(item, "question", str, where)
    reference_key = REFERENCE_KEY[ability]
    reference = require(item, reference_key, str, where)
    difficulty = require(item, "difficulty", str, where)
    rubric = require(item, "rubric", list, where)
    # compute_metrics.py divides by len(rubric) and sends each item as text: none can be empty or not text
    if not rubric or not all(isinstance(r, str) for r in rubric):
        raise DataError(f"{where}: key 'rubric' must be a non-empty list of strings; use BEAM's probing_questions.json")
    for r in rubric:
        encodable(r, "rubric", where)
    subtype_key = SUBTYPE_KEY[ability]
    subtype = require(item, subtype_key, str, where) if subtype_key in item else None
    sources = tuple(_ids(item.get("source_chat_ids", []), f"{where}.source_chat_ids"))
    missing = [s for s in sources if str(s) not in turn_ids]
    if missing:
        raise DataError(
            f"{where}: key 'source_chat_ids' names turn {missing[0]}, which chat.json does not have; "
            "use the chat.json of the same conversation"
        )
    skip = {"question", reference_key, "difficulty", "rubric", subtype_key, "source_chat_ids"}
    details = MappingProxyType({k: v for k, v in item.items() if k not in skip})
    record = BeamQuestion(
        qid, sample_id, ability, index, difficulty, subtype, reference_key, reference, tuple(rubric), sources, details, text
    )
    # the rubric and the answer-bearing fields ride with the question as gold (`Question.other_gold`):
    # scorer-side, and what verify's contamination check looks for beside the reference
    question = Question(
        question_id=qid,
        sample_id=sample_id,
        qa_index=qa_index,
        category=ABILITIES.index(ability) + 1,
        question=text,
        answer=reference,
        adversarial_answer=None,
        evidence=tuple(str(s) for s in sources),
        question_type=subtype,
        other_gold=tuple(g for g in record.gold_strings() if g != reference),
    )
    return question, record


def _ids(value: Any, where: str) -> list[int]:
    """Turn ids of `source_chat_ids`: a list of ints, or an object of such lists, in order."""
    if isinstance(value, bool) or not isinstance(value, (int, list, dict)):
        raise DataError(f"{where}: turn ids must be ints, lists or objects of them, got {type(value).__name__}")
    if isinstance(value, int):
        return [value]
    parts = value.values() if isinstance(value, dict) else value
    return [i for part in parts for i in _ids(part, where)]
