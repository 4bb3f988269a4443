"""`mem0`: a local clone of Mem0's two phases (Chhikara et al., 2025, "Mem0: Building
Production-Ready AI Agents with Scalable Long-Term Memory"), not the mem0 package.

Build, per session and per speaker (speaker_a first), over the session's messages in
pairs (Mem0's evaluation adds two messages at a time, stamped with the session time):

1. extraction: one writer call (`memory.prompts.extract`) with the pair and the session
   date returns candidate facts about that speaker (`{"facts": [...]}`);
2. update: for each fact, the `similar_k` most similar memories of that speaker's vector
   index (cosine, `embedder=...`) and the fact go to one writer call
   (`memory.prompts.update`) that answers ADD, UPDATE (id, merged text), DELETE (id) or
   NOOP; an id that is not one of the memories shown is a malformed reply. As in Mem0,
   DELETE removes the contradicted memory (the operation log keeps its text).

Every step is a row of `memory/<method>/operations.jsonl` (EXTRACT, ADD, UPDATE, DELETE,
NOOP, and FAILED when a reply stayed malformed after its repair turn: that pair or fact
is skipped). The final memories are the items. At question time the question is embedded
and the `top_k` (default 30) memories of each speaker, best first, go to the reader with
their times, as Mem0's evaluation shows them ("Memories for SPEAKER:" blocks).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Literal, Optional

import numpy as np
from pydantic import BaseModel, ConfigDict, ValidationInfo, field_validator, model_validator

from memorybench.config import store_schema
from memorybench.data.records import AskedQuestion, Conversation, Session, Turn
from memorybench.embed import rank
from memorybench.errors import UserError
from memorybench.memory._failures import WriterMemoryConfig
from memorybench.memory._managed import Retrieved
from memorybench.memory.base import BuildContext, BuiltMemory, MemoryItem
from memorybench.registry import MEMORY

if TYPE_CHECKING:  # a type only: reading a class off its registry needs no OmegaConf (verify)
    from omegaconf import DictConfig

    from memorybench.memory._writer_calls import WriterCallEstimate

CLONE_OF = "Mem0 (Chhikara et al., 2025): extraction and update phases, vector memory per speaker"


@dataclass
class Mem0Config(WriterMemoryConfig):
    #: memories per speaker per question
    top_k: Optional[int] = None
    #: stored memories shown to the update call for each candidate fact
    similar_k: Optional[int] = None


store_schema("memory", "mem0", Mem0Config)


class FactsReply(BaseModel):
    model_config = ConfigDict(extra="ignore")
    facts: list[str]

    @field_validator("facts")
    @classmethod
    def _clean(cls, facts: list[str]) -> list[str]:
        return list(dict.fromkeys(" ".join(f.split()) for f in facts if isinstance(f, str) and f.strip()))


class UpdateReply(BaseModel):
    model_config = ConfigDict(extra="ignore")
    event: Literal["ADD", "UPDATE", "DELETE", "NOOP"]
    id: Optional[str] = None
    text: Optional[str] = None

    @field_validator("event", mode="before")
    @classmethod
    def _upper(cls, value: Any) -> Any:
        return value.strip().upper() if isinstance(value, str) else value

    @field_validator("id", "text", mode="before")
    @classmethod
    def _blank_is_none(cls, value: Any) -> Any:
        if value is None:
            return None
        value = " ".join(str(value).split())
        return value or None

    @classmethod
    def grammar_schema(cls, context: Any = None) -> dict[str, Any]:
        """One shape per event, so that a grammar-constrained reply always parses: ADD
        carries a text, UPDATE an id of the memories shown and a text, DELETE such an id,
        NOOP nothing else; UPDATE and DELETE are left out when no memory was shown."""
        shown = list((context or {}).get("shown") or [])

        def shape(event: str, **fields: dict[str, Any]) -> dict[str, Any]:
            return {"type": "object", "properties": {"event": {"const": event}, **fields}, "required": ["event", *fields]}

        text, memory_id = {"type": "string", "minLength": 1}, {"enum": shown}
        shapes = [shape("ADD", text=text)]
        if shown:
            shapes += [shape("UPDATE", id=memory_id, text=text), shape("DELETE", id=memory_id)]
        return {"anyOf": [*shapes, shape("NOOP")]}

    @model_validator(mode="after")
    def _needs(self, info: ValidationInfo) -> UpdateReply:
        if self.event in ("ADD", "UPDATE") and not self.text:
            raise ValueError(f"{self.event} needs a text")
        if self.event in ("UPDATE", "DELETE"):
            if not self.id:
                raise ValueError(f"{self.event} needs the id of a stored memory")
            shown = (info.context or {}).get("shown")
            if shown is not None and self.id not in shown:
                raise ValueError(
                    f"id {self.id!r} is not one of the stored memories shown ({', '.join(shown) or 'none were shown'})"
                )
        return self


def pairs(turns: tuple[Turn, ...]) -> list[tuple[Turn, ...]]:
    return [turns[i : i + 2] for i in range(0, len(turns), 2)]


def render_messages(turns: tuple[Turn, ...]) -> str:
    return "\n".join(turn.render() for turn in turns)


class SpeakerStore:
    """One speaker's memories and their vectors (rows in insertion order, deleted ones removed)."""

    def __init__(self, speaker: str) -> None:
        self.speaker = speaker
        self.memories: list[dict[str, Any]] = []
        self.vectors: list[np.ndarray] = []
        self.next_id = 1

    def similar(self, vector: np.ndarray, k: int) -> list[tuple[dict[str, Any], float]]:
        if not self.memories:
            return []
        return [(self.memories[i], s) for i, s in rank(np.stack(self.vectors), vector, k)]

    def find(self, memory_id: str) -> int:
        return next(i for i, m in enumerate(self.memories) if m["id"] == memory_id)


@MEMORY.register("mem0")
class Mem0:
    name: ClassVar[str]
    question_dependent: ClassVar[bool] = True
    software_only: ClassVar[bool] = False
    uses_writer: ClassVar[bool] = True
    uses_embedder: ClassVar[bool] = True
    clone_of: ClassVar[str] = CLONE_OF
    writer_templates: ClassVar[dict[str, frozenset[str]]] = {
        "extract": frozenset({"speaker", "date", "messages"}),
        "update": frozenset({"speaker", "fact", "memories"}),
    }

    def __init__(self, cfg: DictConfig) -> None:
        node = cfg.memory
        self.top_k = int(node.get("top_k") or 0)
        self.similar_k = int(node.get("similar_k") or 0)
        if self.top_k < 1 or self.similar_k < 1:
            raise UserError(
                f"memory={node.name} needs memory.top_k and memory.similar_k of at least 1 (got {node.get('top_k')}, {node.get('similar_k')})"
            )

    #: a high estimate of one rendered memory line (time + fact), in tokens
    LINE_TOKENS: ClassVar[int] = 64
    #: update calls per extraction call (one per fact extracted), as the embedded writer made
    #: them (`writer_calls`): see WRITER_CALLS_BASIS and docs/writers.md
    UPDATES_PER_EXTRACTION: ClassVar[float] = 1.76
    WRITER_CALLS_BASIS: ClassVar[str] = (
        "mem0 on conv-26 with writer=local (SmolLM2-135M, json_max_items 4), memory.max_sessions=2 and 4: 114 "
        "extraction and 201 update calls, no repair (bench/local_memory_smoke.py, docs/writers.md); another writer "
        "may find more facts"
    )

    @classmethod
    def writer_calls(cls, conversation: Conversation, cfg: DictConfig) -> WriterCallEstimate:
        """One extraction per message pair and speaker, its prompt known: exact. Then one update
        per fact extracted, which only the replies decide: UPDATES_PER_EXTRACTION per extraction
        (measured), at most `writer.json_max_items` each where the writer sends the schema."""
        from memorybench.memory._writer_calls import WriterCallEstimate, exact, expected, filler, json_bounds, listing, stand_in

        extract, update = filler(cls, cfg, "extract"), filler(cls, cfg, "update")
        prompts = [
            extract({"speaker": speaker, "date": session.date_time, "messages": render_messages(pair)})
            for session in conversation.sessions
            for speaker in (conversation.speaker_a, conversation.speaker_b)
            for pair in pairs(session.turns)
        ]
        items, chars = json_bounds(cfg)
        shown = int(cfg.memory.get("similar_k") or 0)  # the most similar memories shown with each fact
        typical = update(
            {"speaker": conversation.speaker_a, "fact": stand_in(chars), "memories": listing(shown, chars, "m{n}: ")}
        )
        updates = expected(
            "update",
            len(prompts),
            cls.UPDATES_PER_EXTRACTION,
            "update calls per extraction call (one per fact)",
            high=None if items is None else len(prompts) * items,
            typical_prompt=typical,
        )
        return WriterCallEstimate(tasks=[exact("extract", len(prompts), prompts), updates], basis=cls.WRITER_CALLS_BASIS)

    def memory_tokens_bound(self, conversations: list[Conversation]) -> int:
        return 2 * self.top_k * self.LINE_TOKENS + 16

    # -- build -------------------------------------------------------------------------
    def build(self, conversation: Conversation, ctx: BuildContext) -> BuiltMemory:
        self._ops = ctx.pack.journal(f"memory/{self.name}/operations.jsonl")
        stores = {s: SpeakerStore(s) for s in (conversation.speaker_a, conversation.speaker_b)}
        counts: dict[str, int] = {}
        self._counts = counts
        for session in conversation.sessions:
            for speaker, store in stores.items():
                for pair in pairs(session.turns):
                    self._add_pair(conversation.sample_id, session, speaker, store, pair, ctx, counts)
            self._after_session(conversation, session, ctx)
        items = [
            MemoryItem(f"{speaker}/{m['id']}", m["text"], tuple(m["sources"]))
            for speaker, store in stores.items()
            for m in store.memories
        ]
        state = {"speakers": list(stores), "memories": {s: store.memories for s, store in stores.items()}}
        built = BuiltMemory(conversation.sample_id, items, state=state, metadata={"operations": counts})
        built.runtime["vectors"] = {s: np.stack(st.vectors) if st.vectors else None for s, st in stores.items()}
        self._finish(conversation, built, ctx)
        return built

    def _after_session(self, conversation: Conversation, session: Session, ctx: BuildContext) -> None:
        """mem0g adds its graph here."""

    def _finish(self, conversation: Conversation, built: BuiltMemory, ctx: BuildContext) -> None:
        """mem0g adds its relations here."""

    def _log(self, sample_id: str, counts: dict[str, int], **row: Any) -> None:
        counts[row["event"]] = counts.get(row["event"], 0) + 1
        self._ops.append({"schema": "mem0_operation.v1", "sample_id": sample_id, **row})

    def _add_pair(
        self,
        sid: str,
        session: Session,
        speaker: str,
        store: SpeakerStore,
        pair: tuple[Turn, ...],
        ctx: BuildContext,
        counts: dict[str, int],
    ) -> None:
        writer, sources = ctx.writer, [t.dia_id for t in pair]
        where = {"session": session.index, "speaker": speaker, "sources": sources}
        reply = writer.call(
            "extract",
            {"speaker": speaker, "date": session.date_time, "messages": render_messages(pair)},
            sample_id=sid,
            schema=FactsReply,
            session=session.index,
            speaker=speaker,
        )
        if not reply.ok:
            writer.record_failure(
                reply,
                sample_id=sid,
                role="extract",
                session=session.index,
                speaker=speaker,
                sources=sources,
                action="no facts from these messages",
            )
            self._log(sid, counts, event="FAILED", step="extract", error=reply.error, **where)
            return
        facts = reply.data.facts
        self._log(sid, counts, event="EXTRACT", facts=facts, **where)
        if not facts:
            return
        vectors = ctx.embedder.embed(facts)
        for fact, vector in zip(facts, vectors):
            similar = store.similar(vector, self.similar_k)
            shown = [m["id"] for m, _ in similar]
            listing = "\n".join(f"{m['id']}: {m['text']}" for m, _ in similar) or "(none)"
            reply = writer.call(
                "update",
                {"speaker": speaker, "fact": fact, "memories": listing},
                sample_id=sid,
                schema=UpdateReply,
                context={"shown": shown},
                session=session.index,
                speaker=speaker,
            )
            similar_log = [{"id": m["id"], "score": round(s, 6)} for m, s in similar]
            if not reply.ok:
                writer.record_failure(
                    reply,
                    sample_id=sid,
                    role="update",
                    session=session.index,
                    speaker=speaker,
                    sources=sources,
                    action="the fact is dropped",
                )
                self._log(sid, counts, event="FAILED", step="update", fact=fact, similar=similar_log, error=reply.error, **where)
                continue
            op: UpdateReply = reply.data
            row: dict[str, Any] = {"event": op.event, "fact": fact, "similar": similar_log, **where}
            if op.event == "ADD":
                memory = {
                    "id": f"m{store.next_id}",
                    "text": op.text,
                    "created": session.date_time,
                    "updated": None,
                    "time": session.date_time,
                    "sources": list(sources),
                }
                store.next_id += 1
                store.memories.append(memory)
                store.vectors.append(ctx.embedder.embed([op.text])[0])
                row.update(memory_id=memory["id"], after=op.text)
            elif op.event == "UPDATE":
                i = store.find(op.id)
                memory = store.memories[i]
                row.update(memory_id=op.id, before=memory["text"], after=op.text)
                memory.update(
                    text=op.text,
                    updated=session.date_time,
                    time=session.date_time,
                    sources=list(dict.fromkeys([*memory["sources"], *sources])),
                )
                store.vectors[i] = ctx.embedder.embed([op.text])[0]
            elif op.event == "DELETE":
                i = store.find(op.id)
                row.update(memory_id=op.id, before=store.memories[i]["text"])
                del store.memories[i]
                del store.vectors[i]
            self._log(sid, counts, **row)

    # -- questions ---------------------------------------------------------------------
    def _vectors(self, built: BuiltMemory, ctx: BuildContext) -> dict[str, np.ndarray | None]:
        vectors = built.runtime.get("vectors")
        if vectors is None:
            memories = built.state["memories"]
            vectors = built.runtime["vectors"] = {
                s: ctx.embedder.embed([m["text"] for m in memories[s]]) if memories[s] else None for s in built.state["speakers"]
            }
        return vectors

    def _memory_hits(self, built: BuiltMemory, query: np.ndarray, ctx: BuildContext) -> list[dict[str, Any]]:
        vectors = self._vectors(built, ctx)
        hits = []
        for speaker in built.state["speakers"]:
            memories = built.state["memories"][speaker]
            if vectors[speaker] is None:
                continue
            for i, score in rank(vectors[speaker], query, self.top_k):
                m = memories[i]
                hits.append(
                    {
                        "item_id": f"{speaker}/{m['id']}",
                        "score": round(score, 6),
                        "speaker": speaker,
                        "line": f"- {m['time']}: {m['text']}",
                    }
                )
        return hits

    def retrieve(self, built: BuiltMemory, asked: AskedQuestion, ctx: BuildContext) -> Retrieved:
        query = ctx.embedder.embed([asked.question])[0]
        hits = sorted(self._memory_hits(built, query, ctx), key=lambda h: -h["score"])  # stable: speaker order on ties
        return self._retrieved(built, hits)

    def _retrieved(self, built: BuiltMemory, hits: list[dict[str, Any]]) -> Retrieved:
        speakers = built.state["speakers"]

        def render(keep: list[int]) -> str:
            kept = [hits[n] for n in keep]
            blocks = []
            for speaker in speakers:
                lines = [h["line"] for h in kept if h.get("speaker") == speaker]
                blocks.append(f"Memories for {speaker}:\n" + ("\n".join(lines) if lines else "(none)"))
            relations = [h["line"] for h in kept if h.get("kind") == "relation"]
            if relations:
                blocks.append("Relations:\n" + "\n".join(relations))
            return "\n\n".join(blocks)

        return Retrieved(
            texts=[h["line"] for h in hits],
            hits=[{k: v for k, v in h.items() if k != "line"} for h in hits],
            render=render,
            extra={"joiner": "\n"},
        )

    def for_question(self, built: BuiltMemory, asked: AskedQuestion, ctx: BuildContext) -> str:
        retrieved = self.retrieve(built, asked, ctx)
        return retrieved.render(list(range(len(retrieved.texts))))
