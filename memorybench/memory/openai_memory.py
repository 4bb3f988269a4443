"""`openai_memory`: a local clone of ChatGPT-style saved memories (the "OpenAI" baseline
of the Mem0 paper, which read the memories ChatGPT saved), not OpenAI's feature itself.

After each session, for each speaker (speaker_a first), one writer call
(`memory.prompts.update`, JSON mode) gets that speaker's saved facts and the session's
text and returns the updated list (`{"facts": [...]}`); the list keeps at most
`max_facts` facts (extra ones are dropped and counted). A reply that stays malformed
after its repair turn leaves the list as it was (recorded as a failure). Each update is a
row of `memory/openai_memory/updates.jsonl` (before, after, added, removed). Every saved
fact goes to the reader; a fact's sources are the sessions since which it has stood
unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Optional

from memorybench.config import store_schema
from memorybench.data.records import AskedQuestion, Conversation
from memorybench.errors import UserError
from memorybench.memory._context import session_text
from memorybench.memory._failures import WriterMemoryConfig
from memorybench.memory.base import BuildContext, BuiltMemory, MemoryItem
from memorybench.memory.mem0 import FactsReply
from memorybench.registry import MEMORY

if TYPE_CHECKING:  # a type only: reading a class off its registry needs no OmegaConf (verify)
    from omegaconf import DictConfig

    from memorybench.memory._writer_calls import WriterCallEstimate

CLONE_OF = "ChatGPT saved memories (the Mem0 paper's OpenAI baseline): a bounded fact list per speaker"


@dataclass
class OpenAIMemoryConfig(WriterMemoryConfig):
    #: the most saved facts kept per speaker
    max_facts: Optional[int] = None


store_schema("memory", "openai_memory", OpenAIMemoryConfig)


@MEMORY.register("openai_memory")
class OpenAIMemory:
    name: ClassVar[str]
    question_dependent: ClassVar[bool] = False
    software_only: ClassVar[bool] = False
    uses_writer: ClassVar[bool] = True
    clone_of: ClassVar[str] = CLONE_OF
    writer_templates: ClassVar[dict[str, frozenset[str]]] = {
        "update": frozenset({"speaker", "max_facts", "facts", "date", "session"})
    }

    @classmethod
    def writer_calls(cls, conversation: Conversation, cfg: DictConfig) -> WriterCallEstimate:
        """One update per session with turns and speaker: exact. Each prompt holds that
        session's text and the speaker's saved facts so far, which only the replies decide:
        sized with the list full (`max_facts` facts at the writer's string bound)."""
        from memorybench.memory._writer_calls import WriterCallEstimate, exact, filler, json_bounds, listing

        fill, (_, chars) = filler(cls, cfg, "update"), json_bounds(cfg)
        max_facts = int(cfg.memory.get("max_facts") or 0)
        prompts = [
            fill(
                {
                    "speaker": speaker,
                    "max_facts": str(max_facts),
                    # the first session's list is empty; every later one sized full
                    "facts": "(none yet)" if n == 0 else listing(max_facts, chars),
                    "date": session.date_time,
                    "session": session_text(session),
                }
            )
            for n, session in enumerate(s for s in conversation.sessions if s.turns)
            for speaker in (conversation.speaker_a, conversation.speaker_b)
        ]
        return WriterCallEstimate(tasks=[exact("update", len(prompts), prompts, prompts_exact=False)])

    def __init__(self, cfg: DictConfig) -> None:
        self.max_facts = int(cfg.memory.get("max_facts") or 0)
        if self.max_facts < 1:
            raise UserError(f"memory.max_facts={cfg.memory.get('max_facts')} must be at least 1 for memory=openai_memory")

    def memory_tokens_bound(self, conversations: list[Conversation]) -> int:
        return 2 * self.max_facts * 48 + 16

    def build(self, conversation: Conversation, ctx: BuildContext) -> BuiltMemory:
        sid, writer = conversation.sample_id, ctx.writer
        journal = ctx.pack.journal(f"memory/{self.name}/updates.jsonl")
        speakers = (conversation.speaker_a, conversation.speaker_b)
        saved: dict[str, list[dict[str, Any]]] = {s: [] for s in speakers}  # {text, sources}
        failures = 0
        for session in conversation.sessions:
            if not session.turns:
                continue
            for speaker in speakers:
                before = saved[speaker]
                listing = "\n".join(f"- {f['text']}" for f in before) or "(none yet)"
                values = {
                    "speaker": speaker,
                    "max_facts": str(self.max_facts),
                    "facts": listing,
                    "date": session.date_time,
                    "session": session_text(session),
                }
                reply = writer.call(
                    "update",
                    values,
                    sample_id=sid,
                    schema=FactsReply,
                    session=session.index,
                    speaker=speaker,
                    max_items=self.max_facts,
                )
                if not reply.ok:
                    failures += 1
                    writer.record_failure(
                        reply,
                        sample_id=sid,
                        role="update",
                        session=session.index,
                        speaker=speaker,
                        sources=[t.dia_id for t in session.turns],
                        action="the saved facts stay as they were",
                    )
                    continue
                facts = reply.data.facts
                dropped = max(0, len(facts) - self.max_facts)
                old = {f["text"]: f for f in before}
                after = [
                    old.get(text) or {"text": text, "sources": [f"session_{session.index}"]} for text in facts[: self.max_facts]
                ]
                saved[speaker] = after
                texts_before, texts_after = [f["text"] for f in before], [f["text"] for f in after]
                journal.append(
                    {
                        "schema": "openai_memory_update.v1",
                        "sample_id": sid,
                        "session": session.index,
                        "speaker": speaker,
                        "before": texts_before,
                        "after": texts_after,
                        "added": [t for t in texts_after if t not in old],
                        "removed": [t for t in texts_before if t not in set(texts_after)],
                        "dropped_over_max_facts": dropped,
                    }
                )
        items = [
            MemoryItem(f"{speaker}/fact_{n + 1}", fact["text"], tuple(fact["sources"]))
            for speaker in speakers
            for n, fact in enumerate(saved[speaker])
        ]
        blocks = [
            f"Saved memories about {speaker}:\n" + ("\n".join(f"- {f['text']}" for f in saved[speaker]) or "(none)")
            for speaker in speakers
        ]
        metadata = {"max_facts": self.max_facts, "facts": {s: len(saved[s]) for s in speakers}, "failed_updates": failures}
        return BuiltMemory(sid, items, text="\n\n".join(blocks), metadata=metadata)

    def for_question(self, built: BuiltMemory, asked: AskedQuestion, ctx: BuildContext) -> str:
        assert built.text is not None
        return built.text
