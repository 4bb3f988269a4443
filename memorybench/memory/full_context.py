"""`full_context`: every turn, one line each: `DATE | SPEAKER: TEXT [image: CAPTION]`; a
LongMemEval haystack as its authors' reader shows it (`authors_history`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from memorybench.benchmark import benchmark_of
from memorybench.benchmark import imported
from memorybench.data.records import AskedQuestion, Conversation
from memorybench.memory.base import BuildContext, BuiltMemory, MemoryItem
from memorybench.registry import MEMORY

if TYPE_CHECKING:  # a type only: reading a class off its registry needs no OmegaConf (verify)
    from omegaconf import DictConfig


def render_sessions(conversation: Conversation) -> list[MemoryItem]:
    """One item per session: its turn lines, in order; `sources` are their dia_ids, line by line."""
    return [
        MemoryItem(
            item_id=f"session_{session.index}",
            text="\n".join(f"{session.date_time} | {turn.render()}" for turn in session.turns),
            sources=tuple(turn.dia_id for turn in session.turns),
        )
        for session in conversation.sessions
        if session.turns
    ]


def authors_history(conversation: Conversation, pins: str | None = None) -> BuiltMemory:
    """A LongMemEval haystack as its authors' reader sees it: every session, sorted by date,
    in run_generation.py's json history format (`memorybench.data.longmemeval_reader`); one
    item per session (its turns as the json the history holds), the text the whole history."""
    import json

    from memorybench.data.longmemeval_reader import HistorySession, render_history

    sessions = [HistorySession(s.date_time, tuple({"role": t.speaker, "content": t.text} for t in s.turns))
                for s in conversation.sessions]
    items = [MemoryItem(item_id=f"session_{s.index}", text=json.dumps([dict(t) for t in h.turns]),
                        sources=tuple(t.dia_id for t in s.turns)) for s, h in zip(conversation.sessions, sessions) if s.turns]
    return BuiltMemory(conversation.sample_id, items, text=render_history(sessions, pins=pins))


@MEMORY.register("full_context")
class FullContext:
    name: ClassVar[str]
    question_dependent: ClassVar[bool] = False
    software_only: ClassVar[bool] = True

    def __init__(self, cfg: DictConfig) -> None:
        self.cfg = cfg

    def build(self, conversation: Conversation, ctx: BuildContext) -> BuiltMemory:
        history = benchmark_of(str(self.cfg.dataset.name)).history
        if history is not None:  # the benchmark's own rendering of a whole history (LongMemEval's authors')
            return imported(history)(conversation, self.cfg.paths.get("pins"))
        items = render_sessions(conversation)
        return BuiltMemory(conversation.sample_id, items, text="\n".join(i.text for i in items))

    def for_question(self, built: BuiltMemory, asked: AskedQuestion, ctx: BuildContext) -> str:
        assert built.text is not None
        return built.text
