"""Which models answered a run, from its journals: true after any number of resumes.

A resumed run's answerers only see the calls of their own attempt, and a run killed after
its last answer resumes with none left to ask; the journals hold every call of every
attempt. So run_meta.json's `models[].answered` is the union of what each model's journal
says answered (the reader's traces, the writer's calls) and what the live model reports.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from memorybench.llm.records import ModelIdentity
from memorybench.pack import layout
from memorybench.records import jsonl_lines, load_json

__all__ = ["with_answered_from_journals"]

#: the journal whose rows hold a `response` (a ChatResult) for each call, by model role
JOURNAL_OF_ROLE = {"reader": layout.READER_TRACES, "writer": layout.WRITER_CALLS}


def _answered(path: Path) -> set[str]:
    if not path.is_file():
        return set()
    found = set()
    for _, line in jsonl_lines(path.read_bytes()):
        try:
            response = load_json(line).get("response") or {}
        except (ValueError, AttributeError):
            continue  # a torn row is verify's finding, not this tally's
        if isinstance(response, dict) and isinstance(response.get("model_answered"), str):
            found.add(response["model_answered"])
    return found


def with_answered_from_journals(root: Path, models: Sequence[ModelIdentity]) -> list[ModelIdentity]:
    """`models` with each one's `answered` widened by its role's journal in the pack at `root`
    (one model per role reads the journal: a run has one reader and one writer)."""
    out = []
    for model in models:
        relpath = JOURNAL_OF_ROLE.get(model.role)
        if relpath is None:
            out.append(model)
            continue
        answered = sorted(set(model.answered) | _answered(root / relpath))
        out.append(model.model_copy(update={"answered": answered}))
    return out
