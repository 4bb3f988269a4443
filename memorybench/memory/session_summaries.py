"""`session_summaries`: `[Session N]\\n<summary>` blocks in session order, blank-line joined.

`source=released` uses the file's own `session_summary` texts. `source=writer` has the
writer summarize each session from that session's text alone (one call per session,
`memory.prompts.summary`); the summaries are stored under
`memory/writer/sessions/<sample_id>/session_<N>.txt`, the calls in
`memory/writer/calls.jsonl`, and the manifest metadata says `summaries: writer` with the
writer model. The reader's template is the same for both.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Optional

from memorybench.config import store_schema
from memorybench.data.records import AskedQuestion, Conversation
from memorybench.errors import DataError, UserError
from memorybench.memory._context import session_text
from memorybench.memory._failures import WriterMemoryConfig
from memorybench.memory.base import BuildContext, BuiltMemory, MemoryItem
from memorybench.registry import MEMORY

if TYPE_CHECKING:  # a type only: reading a class off its registry needs no OmegaConf (verify)
    from omegaconf import DictConfig

    from memorybench.memory._writer_calls import WriterCallEstimate

SOURCES = ("released", "writer")


@dataclass
class SessionSummariesConfig(WriterMemoryConfig):
    """`max_failed_share` applies with `source=writer` only."""

    #: `released` (the file's summaries) or `writer` (needs writer.model)
    source: Optional[str] = None


store_schema("memory", "session_summaries", SessionSummariesConfig)
#: what the reader sees for a session whose summary the writer failed to write (twice)
FAILED = "(no summary: the writer failed on this session)"


@MEMORY.register("session_summaries")
class SessionSummaries:
    name: ClassVar[str]
    question_dependent: ClassVar[bool] = False
    software_only: bool = True
    writer_templates: ClassVar[dict[str, frozenset[str]]] = {"summary": frozenset({"date", "session"})}
    #: the subject of the run note when a writer wrote the summaries
    written_what: ClassVar[str] = "The session summaries were"
    #: the file's released summaries are text this method may hand the reader (verify's
    #: gold scan counts them as source text, like the turns)
    shows_released_summaries: ClassVar[bool] = True

    @classmethod
    def check(cls, cfg: DictConfig) -> None:
        source = cfg.memory.source
        if source not in SOURCES:
            raise UserError(f"memory.source={source!r} is not one of: {', '.join(SOURCES)}")
        if source == "writer" and not cfg.writer.get("model"):
            raise UserError("memory.source=writer needs a writer model; add writer=... with writer.model set")

    @classmethod
    def writes_memory(cls, cfg: DictConfig) -> bool:
        return cfg.memory.get("source") == "writer"

    @classmethod
    def run_notes(cls, cfg: DictConfig) -> list[str]:
        return [f"session_summaries from the {cfg.memory.source} summaries."]

    @classmethod
    def writer_calls(cls, conversation: Conversation, cfg: DictConfig) -> WriterCallEstimate:
        """One summary per session with turns, its prompt that session's text: exact."""
        from memorybench.memory._writer_calls import WriterCallEstimate, exact, filler

        fill = filler(cls, cfg, "summary")
        prompts = [fill({"date": s.date_time, "session": session_text(s)}) for s in conversation.sessions if s.turns]
        return WriterCallEstimate(tasks=[exact("summary", len(prompts), prompts)])

    def __init__(self, cfg: DictConfig) -> None:
        self.source = str(cfg.memory.source)
        if self.source not in SOURCES:
            raise UserError(f"memory.source={self.source!r} is not one of: {', '.join(SOURCES)}")
        self.uses_writer = self.source == "writer"
        self.software_only = not self.uses_writer
        self.writer_max_tokens = int(cfg.writer.get("max_tokens") or 0)

    def memory_tokens_bound(self, conversations: list[Conversation]) -> int | None:
        """Written summaries: at most writer.max_tokens each (released ones are built up front)."""
        if not self.uses_writer:
            return None
        sessions = max((len(c.sessions) for c in conversations), default=0)
        return sessions * (self.writer_max_tokens + 8)

    def build(self, conversation: Conversation, ctx: BuildContext) -> BuiltMemory:
        if self.uses_writer:
            return self._write(conversation, ctx)
        items = []
        for session in conversation.sessions:
            summary = conversation.session_summaries.get(session.index)
            if summary is None:
                raise DataError(
                    f"sample {conversation.sample_id}: no released session_{session.index}_summary; "
                    "use memory=full_context or memory.source=writer"
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

    def _write(self, conversation: Conversation, ctx: BuildContext) -> BuiltMemory:
        writer = ctx.writer
        sid = conversation.sample_id
        items, failed = [], []
        for session in conversation.sessions:
            if not session.turns:
                continue
            reply = writer.call(
                "summary", {"date": session.date_time, "session": session_text(session)}, sample_id=sid, session=session.index
            )
            summary = " ".join(reply.text.split()) if reply.ok else FAILED
            if not reply.ok:
                failed.append(session.index)
                writer.record_failure(
                    reply,
                    sample_id=sid,
                    role="summary",
                    session=session.index,
                    sources=[t.dia_id for t in session.turns],
                    action="the session has no summary",
                )
            ctx.pack.write_text(f"memory/writer/sessions/{sid}/session_{session.index}.txt", summary + "\n")
            items.append(
                MemoryItem(
                    item_id=f"session_{session.index}",
                    text=f"[Session {session.index}]\n{summary}",
                    sources=(f"session_{session.index}",),
                )
            )
        metadata: dict[str, Any] = {"summaries": "writer", "failed_sessions": failed}
        return BuiltMemory(sid, items, text="\n\n".join(i.text for i in items), metadata=metadata)

    def for_question(self, built: BuiltMemory, asked: AskedQuestion, ctx: BuildContext) -> str:
        assert built.text is not None
        return built.text
