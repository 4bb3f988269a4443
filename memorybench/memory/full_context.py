"""`full_context`: every turn, one line each: `DATE | SPEAKER: TEXT [image: CAPTION]`; or the
whole history as the benchmark's authors render it, where its record names a `history`."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from memorybench.benchmark import benchmark_of, imported
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


@MEMORY.register("full_context")
class FullContext:
    name: ClassVar[str]
    question_dependent: ClassVar[bool] = False
    software_only: ClassVar[bool] = True

    def __init__(self, cfg: DictConfig) -> None:
        self.cfg = cfg

    def build(self, conversation: Conversation, ctx: BuildContext) -> BuiltMemory:
        history = benchmark_of(str(self.cfg.dataset.name)).history
        if history is not None:  # the benchmark's own rendering of a whole history
            return imported(history)(conversation, self.cfg.paths.get("pins"))
        items = render_sessions(conversation)
        return BuiltMemory(conversation.sample_id, items, text="\n".join(i.text for i in items))

    def for_question(self, built: BuiltMemory, asked: AskedQuestion, ctx: BuildContext) -> str:
        assert built.text is not None
        return built.text
