"""Read LoCoMo-Plus: LoCoMo's ten conversations and their questions (categories 1-5), then one
stitched conversation per cue/trigger item of `locomo_plus.json` (category 6, "Cognitive").

`load_locomo_plus(path)` reads `path` (the pinned `locomo_plus.json`, or a local copy) and
the pinned `locomo10.json` (the same file LoCoMo's runs read; the LoCoMo-Plus repository's
copy has the same sha256). A stitched sample (`stitch.py`) is

- `sample_id` `plus-NNN` (the item's 0-based index in the file), speakers those of the
  conversation it was stitched into, its sessions that conversation's with the cue as a
  session of its own at the cue's time (turn ids `CUE:1`, `CUE:2`; LoCoMo's turns keep theirs;
  sessions numbered in their new order);
- one question `plus-NNN-q-0`: the trigger, its speakers mapped as the cue's, asked at the
  trigger's time (`question_date`), category 6. It has no reference answer: its gold, kept
  scorer-side as every gold is, is the cue as the authors' judge reads it (`SPEAKER：TEXT`
  lines), which that judge compares the answer with; its evidence is the cue's turn ids.

The stitching seed is `SEED` (recorded in the dataset's notes and in each sample's `Stitch`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from memorybench.benchmarks.locomo_plus.stitch import Stitch, cue_evidence, parse_ab_dialogue, stitch
from memorybench.benchmarks.locomo.data import load_locomo
from memorybench.data.files import encodable, read_json_file, regular_file
from memorybench.data.records import Conversation, Question, Session, Turn
from memorybench.errors import DataError

__all__ = ["COGNITIVE", "SEED", "load_cognitive", "load_locomo_plus", "stitches"]

#: the category number of LoCoMo-Plus's sixth, "Cognitive", category
COGNITIVE = 6
#: the seed of the conversation each item is stitched into (the authors' pick is unseeded)
SEED = 20260206
#: the fields of an item this loader reads (the others, similarity scores and ranks, are not used)
FIELDS = ("relation_type", "cue_dialogue", "trigger_query", "time_gap")
_STITCHES: dict[str, Stitch] = {}


def load_locomo_plus(path: str | Path) -> list[Conversation]:
    """LoCoMo's conversations, then one stitched conversation per item, in file order."""
    from memorybench.benchmarks.locomo.pins import LOCOMO10
    from memorybench.data.pins import pin_path

    path = regular_file(Path(path), expected="locomo_plus.json")
    items = read_json_file(path)
    if not isinstance(items, list) or not items:
        raise DataError(f"dataset file {path} must hold a non-empty JSON list of LoCoMo-Plus items, got {type(items).__name__}")
    for n, item in enumerate(items):
        _check_item(item, f"{path.name}[{n}]")
    base = load_locomo(pin_path(LOCOMO10))
    out = list(base)
    for conversation, record in stitch(items, base, SEED):
        sample = _stitched(conversation, record, items[record.item])
        _STITCHES[sample.sample_id] = record
        out.append(sample)
    return out


def load_cognitive(path: str | Path) -> list[Conversation]:
    """The stitched conversations alone (`dataset=locomo_plus_cognitive`): the sixth category."""
    return [c for c in load_locomo_plus(path) if c.sample_id.startswith("plus-")]


def stitch_note(sample_id: str) -> str | None:
    """The stitching of a sample read in this process, in words (None: a LoCoMo conversation)."""
    record = _STITCHES.get(sample_id)
    return None if record is None else f"{record.describe()} (seed {SEED})"


def stitches() -> dict[str, Stitch]:
    """How each stitched sample read so far was built, by sample id (for `show`)."""
    return dict(_STITCHES)


def _check_item(item: Any, where: str) -> None:
    if not isinstance(item, dict):
        raise DataError(f"{where}: a LoCoMo-Plus item must be a JSON object, got {type(item).__name__}")
    for key in FIELDS:
        if not isinstance(item.get(key), str):
            raise DataError(f"{where}: key {key!r} must be a string; the file is not LoCoMo-Plus's locomo_plus.json")
        encodable(item[key], key, where)
    for key in ("cue_dialogue", "trigger_query"):
        if not parse_ab_dialogue(item[key]):
            raise DataError(f"{where}: {key} has no line starting `A:` or `B:`; the file is not LoCoMo-Plus's")


def _stitched(conversation: Conversation, record: Stitch, item: dict[str, Any]) -> Conversation:
    sid = f"plus-{record.item:03d}"
    named = record.speakers
    cue = [(named[who], text) for who, text in parse_ab_dialogue(item["cue_dialogue"])]
    trigger = [(named[who], text) for who, text in parse_ab_dialogue(item["trigger_query"])]
    cue_session = tuple(Turn(speaker, f"CUE:{n}", text) for n, (speaker, text) in enumerate(cue, 1))
    ordered = [*conversation.sessions[: record.cue_position], None, *conversation.sessions[record.cue_position :]]
    sessions = tuple(
        Session(index, record.cue_time, cue_session) if s is None else Session(index, s.date_time, s.turns, s.session_id)
        for index, s in enumerate(ordered, 1)
    )
    question = Question(
        question_id=f"{sid}-q-0",
        sample_id=sid,
        qa_index=0,
        category=6,
        question="\n".join(f"{speaker}: {text}" for speaker, text in trigger),
        answer=cue_evidence(cue),
        adversarial_answer=None,
        evidence=tuple(t.dia_id for t in cue_session),
        question_date=record.query_time,
        question_type=record.relation_type or None,
    )
    return Conversation(sid, conversation.speaker_a, conversation.speaker_b, sessions, (question,), {})
