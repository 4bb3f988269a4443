"""`session_summaries`: `[Session N]\\n<summary>` blocks in session order, blank-line joined.

`source=released` uses the file's own `session_summary` texts; the writer-made variant
(`source=writer`) lands with the writer group and is recorded as such in run metadata.
"""

from __future__ import annotations

from typing import ClassVar

from omegaconf import DictConfig

from memorybench.data.records import AskedQuestion, Conversation
from memorybench.errors import DataError, UserError
from memorybench.memory.base import BuildContext, BuiltMemory, MemoryItem, register_memory


@register_memory("session_summaries")
class SessionSummaries:
    name: ClassVar[str]
    question_dependent: ClassVar[bool] = False
    software_only: ClassVar[bool] = True

    def __init__(self, cfg: DictConfig) -> None:
        self.source = str(cfg.memory.source)
        if self.source != "released":
            raise UserError(
                f"memory.source={self.source} is not available yet; use memory.source=released"
            )

    def build(self, conversation: Conversation, ctx: BuildContext) -> BuiltMemory:
        items = []
        for session in conversation.sessions:
            summary = conversation.session_summaries.get(session.index)
            if summary is None:
                raise DataError(
                    f"sample {conversation.sample_id}: no released session_{session.index}_summary; "
                    "use memory=full_context or a writer"
                )
            items.append(
                MemoryItem(
                    item_id=f"session_{session.index}",
                    text=f"[Session {session.index}]\n{summary}",
                    sources=(f"session_{session.index}",),
                )
            )
        return BuiltMemory(
            conversation.sample_id,
            items,
            text="\n\n".join(i.text for i in items),
            metadata={"summaries": "released"},
        )

    def for_question(self, built: BuiltMemory, asked: AskedQuestion, ctx: BuildContext) -> str:
        assert built.text is not None
        return built.text
