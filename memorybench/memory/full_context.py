"""`full_context`: every turn, one line each: `DATE | SPEAKER: TEXT [image: CAPTION]`."""

from __future__ import annotations

from typing import ClassVar

from omegaconf import DictConfig

from memorybench.data.records import AskedQuestion, Conversation
from memorybench.memory.base import BuiltMemory, MemoryItem, register_memory


def render_lines(conversation: Conversation) -> list[MemoryItem]:
    return [
        MemoryItem(item_id=turn.dia_id, text=f"{session.date_time} | {turn.render()}", sources=(turn.dia_id,))
        for session in conversation.sessions
        for turn in session.turns
    ]


@register_memory("full_context")
class FullContext:
    name: ClassVar[str]
    question_dependent: ClassVar[bool] = False

    def __init__(self, cfg: DictConfig) -> None:
        self.cfg = cfg

    def build(self, conversation: Conversation) -> BuiltMemory:
        items = render_lines(conversation)
        return BuiltMemory(conversation.sample_id, items, text="\n".join(i.text for i in items))

    def for_question(self, built: BuiltMemory, asked: AskedQuestion) -> str:
        assert built.text is not None
        return built.text
