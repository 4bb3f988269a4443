"""`mem0g`: a local clone of Mem0^g (Chhikara et al., 2025), Mem0 with graph memory; not
the mem0 package.

Everything `mem0` does, plus, after both speakers' passes over a session, for each
message pair of that session:

1. one writer call (`memory.prompts.graph`, JSON mode) extracts entities and relations
   (`{"entities": [...], "relations": [...]}`, the `graph` method's schema);
2. a relation already stored and valid (same normalized source, relation, target) only
   gains sources; the others are new. When stored valid relations touch a new relation's
   source, one call (`memory.prompts.conflict`) names those the new ones contradict or
   replace (`{"obsolete": [ids]}`): they are marked obsolete (with the session date and
   the relation that replaced them), never deleted, as Mem0^g does.

Operations go to `memory/mem0g/operations.jsonl` (RELATION_ADD, RELATION_SEEN,
RELATION_OBSOLETE, and FAILED for a graph or conflict reply that stayed malformed), the
final relations to `memory/mem0g/relations.jsonl`. At question time the entities the
question names (normalized whole-word match of stored entity names) select the relations
around them; the `relation_k` most similar to the question join the mem0 memories,
obsolete ones marked as such.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Optional

import numpy as np
from pydantic import BaseModel, ConfigDict, ValidationInfo, field_validator

from memorybench.config import store_schema
from memorybench.data.records import AskedQuestion, Conversation, Session
from memorybench.embed import rank
from memorybench.errors import UserError
from memorybench.memory._managed import Retrieved
from memorybench.memory.base import BuildContext, BuiltMemory, MemoryItem
from memorybench.memory.graph import GraphReply, norm
from memorybench.memory.mem0 import Mem0, Mem0Config, pairs, render_messages
from memorybench.registry import MEMORY

if TYPE_CHECKING:  # a type only: reading a class off its registry needs no OmegaConf (verify)
    from omegaconf import DictConfig

    from memorybench.memory._writer_calls import WriterCallEstimate


@dataclass
class Mem0gConfig(Mem0Config):
    #: graph relations added per question (around the entities the question names)
    relation_k: Optional[int] = None


store_schema("memory", "mem0g", Mem0gConfig)

#: stored relations shown to one conflict call, the most recent first
MAX_CONFLICT_CANDIDATES = 30


class ConflictReply(BaseModel):
    model_config = ConfigDict(extra="ignore")
    obsolete: list[str]

    @classmethod
    def grammar_schema(cls, context: Any = None) -> dict[str, Any]:
        """A grammar-constrained writer can only name the ids shown."""
        shown = list((context or {}).get("shown") or [])
        items: dict[str, Any] = {"enum": shown} if shown else {"type": "string"}
        array: dict[str, Any] = {"type": "array", "items": items, **({} if shown else {"maxItems": 0})}
        return {"type": "object", "properties": {"obsolete": array}, "required": ["obsolete"]}

    @field_validator("obsolete")
    @classmethod
    def _known(cls, ids: list[str], info: ValidationInfo) -> list[str]:
        ids = list(dict.fromkeys(str(i).strip() for i in ids))
        shown = (info.context or {}).get("shown")
        unknown = [i for i in ids if shown is not None and i not in shown]
        if unknown:
            raise ValueError(f"ids {unknown} are not among the stored relations shown")
        return ids


def relation_text(rel: dict[str, Any]) -> str:
    return f"{rel['source']} -- {rel['relation']} --> {rel['target']}"


@MEMORY.register("mem0g")
class Mem0G(Mem0):
    clone_of: ClassVar[str] = "Mem0^g (Chhikara et al., 2025): Mem0 plus an entity/relation graph with obsolete marking"
    writer_templates: ClassVar[dict[str, frozenset[str]]] = {
        **Mem0.writer_templates,
        "graph": frozenset({"date", "messages"}),
        "conflict": frozenset({"existing", "new"}),
    }

    #: conflict calls per graph call (one where a new relation meets stored ones it may
    #: contradict), as the embedded writer made them: see WRITER_CALLS_BASIS and docs/writers.md.
    #: They grow with the relations stored, so a whole conversation makes more per graph call
    #: than these prefixes did (docs/writers.md says by how much)
    CONFLICTS_PER_GRAPH: ClassVar[float] = 0.07
    WRITER_CALLS_BASIS: ClassVar[str] = (
        "mem0g on conv-26 with writer=local (SmolLM2-135M, json_max_items 4), memory.max_sessions=2 and 4: 114 "
        "extraction, 201 update, 57 graph and 4 conflict calls, no repair (bench/local_memory_smoke.py, docs/writers.md); "
        "another writer may find more facts and relations"
    )

    @classmethod
    def writer_calls(cls, conversation: Conversation, cfg: DictConfig) -> WriterCallEstimate:
        """mem0's calls, then after each session one graph extraction per message pair, its
        prompt known: exact; and at most one conflict call after each, which only the replies
        decide: CONFLICTS_PER_GRAPH per graph call (measured)."""
        from memorybench.memory._writer_calls import WriterCallEstimate, exact, expected, filler, json_bounds, listing

        mem0 = super().writer_calls(conversation, cfg)
        graph = filler(cls, cfg, "graph")
        prompts = [
            graph({"date": session.date_time, "messages": render_messages(pair)})
            for session in conversation.sessions
            for pair in pairs(session.turns)
        ]
        items, chars = json_bounds(cfg)
        # the stored relations shown (at most MAX_CONFLICT_CANDIDATES) and the new ones, each three strings
        typical = filler(cls, cfg, "conflict")(
            {"existing": listing(MAX_CONFLICT_CANDIDATES, 3 * chars, "r{n}: "), "new": listing(items or 4, 3 * chars)}
        )
        conflicts = expected(
            "conflict",
            len(prompts),
            cls.CONFLICTS_PER_GRAPH,
            "conflict calls per graph call",
            high=len(prompts),
            typical_prompt=typical,
        )
        return WriterCallEstimate(
            tasks=[*mem0.tasks, exact("graph", len(prompts), prompts), conflicts], basis=cls.WRITER_CALLS_BASIS
        )

    def __init__(self, cfg: DictConfig) -> None:
        super().__init__(cfg)
        self.relation_k = int(cfg.memory.get("relation_k") or 0)
        if self.relation_k < 1:
            raise UserError(f"memory.relation_k={cfg.memory.get('relation_k')} must be at least 1 for memory=mem0g")

    def memory_tokens_bound(self, conversations: list[Conversation]) -> int:
        return super().memory_tokens_bound(conversations) + self.relation_k * self.LINE_TOKENS

    def build(self, conversation: Conversation, ctx: BuildContext) -> BuiltMemory:
        self._relations: list[dict[str, Any]] = []
        self._entities: dict[str, dict[str, Any]] = {}
        return super().build(conversation, ctx)

    # -- graph phase ---------------------------------------------------------------------
    def _entity(self, name: str, type_: str | None) -> None:
        key = norm(name)
        if key and key not in self._entities:
            self._entities[key] = {"name": name, "type": type_ or "other"}

    def _after_session(self, conversation: Conversation, session: Session, ctx: BuildContext) -> None:
        sid, writer, counts = conversation.sample_id, ctx.writer, self._counts
        for pair in pairs(session.turns):
            sources = [t.dia_id for t in pair]
            where = {"session": session.index, "sources": sources}
            reply = writer.call(
                "graph",
                {"date": session.date_time, "messages": render_messages(pair)},
                sample_id=sid,
                schema=GraphReply,
                session=session.index,
            )
            if not reply.ok:
                writer.record_failure(
                    reply,
                    sample_id=sid,
                    role="graph",
                    session=session.index,
                    sources=sources,
                    action="no relations from these messages",
                )
                self._log(sid, counts, event="FAILED", step="graph", error=reply.error, **where)
                continue
            graph: GraphReply = reply.data
            for entity in graph.entities:
                self._entity(entity.name, entity.type)
            new: list[dict[str, Any]] = []
            for rel in graph.relations:
                self._entity(rel.source, None)
                self._entity(rel.target, None)
                key = (norm(rel.source), norm(rel.relation), norm(rel.target))
                same = next((r for r in self._relations if r["valid"] and r["key"] == key), None)
                same = same or next((r for r in new if r["key"] == key), None)
                if same is not None:
                    same["sources"] = list(dict.fromkeys([*same["sources"], *sources]))
                    self._log(sid, counts, event="RELATION_SEEN", relation_id=same["id"], **where)
                    continue
                new.append(
                    {
                        "id": f"r{len(self._relations) + len(new) + 1}",
                        "key": key,
                        "source": rel.source,
                        "relation": rel.relation,
                        "target": rel.target,
                        "when": rel.when,
                        "created": session.date_time,
                        "session": session.index,
                        "sources": list(sources),
                        "valid": True,
                        "obsolete_since": None,
                        "obsoleted_by": None,
                    }
                )
            if new:
                self._resolve_conflicts(sid, session, new, sources, ctx)
            for rel in new:
                self._relations.append(rel)
                self._log(sid, counts, event="RELATION_ADD", relation_id=rel["id"], relation=relation_text(rel), **where)

    def _resolve_conflicts(
        self, sid: str, session: Session, new: list[dict[str, Any]], sources: list[str], ctx: BuildContext
    ) -> None:
        touched = {r["key"][0] for r in new}
        candidates = [r for r in self._relations if r["valid"] and (r["key"][0] in touched or r["key"][2] in touched)]
        candidates = candidates[-MAX_CONFLICT_CANDIDATES:]
        if not candidates:
            return
        shown = [r["id"] for r in candidates]
        values = {
            "existing": "\n".join(f"{r['id']}: {relation_text(r)}" for r in candidates),
            "new": "\n".join(relation_text(r) for r in new),
        }
        reply = ctx.writer.call(
            "conflict", values, sample_id=sid, schema=ConflictReply, context={"shown": shown}, session=session.index
        )
        where = {"session": session.index, "sources": sources}
        if not reply.ok:
            ctx.writer.record_failure(
                reply,
                sample_id=sid,
                role="conflict",
                session=session.index,
                sources=sources,
                action="no stored relation is marked obsolete for these messages",
            )
            self._log(sid, self._counts, event="FAILED", step="conflict", error=reply.error, **where)
            return
        by_id = {r["id"]: r for r in candidates}
        for rid in reply.data.obsolete:
            rel = by_id[rid]
            rel.update(valid=False, obsolete_since=session.date_time, obsoleted_by=[r["id"] for r in new])
            self._log(
                sid,
                self._counts,
                event="RELATION_OBSOLETE",
                relation_id=rid,
                relation=relation_text(rel),
                replaced_by=[r["id"] for r in new],
                **where,
            )

    def _finish(self, conversation: Conversation, built: BuiltMemory, ctx: BuildContext) -> None:
        sid = conversation.sample_id
        journal = ctx.pack.journal(f"memory/{self.name}/relations.jsonl")
        relations = [{k: v for k, v in r.items() if k != "key"} for r in self._relations]
        for rel in relations:
            journal.append({"schema": "mem0g_relation.v1", "sample_id": sid, **rel})
        built.items.extend(MemoryItem(f"relation/{r['id']}", relation_text(r), tuple(r["sources"])) for r in relations)
        built.state["relations"] = relations
        built.state["entities"] = self._entities
        built.metadata["relations"] = {
            "valid": sum(r["valid"] for r in relations),
            "obsolete": sum(not r["valid"] for r in relations),
        }
        built.runtime["relation_vectors"] = ctx.embedder.embed([relation_text(r) for r in relations]) if relations else None

    # -- questions -----------------------------------------------------------------------
    def _relation_vectors(self, built: BuiltMemory, ctx: BuildContext) -> np.ndarray | None:
        if "relation_vectors" not in built.runtime:
            relations = built.state.get("relations") or []
            built.runtime["relation_vectors"] = ctx.embedder.embed([relation_text(r) for r in relations]) if relations else None
        return built.runtime["relation_vectors"]

    def named_entities(self, built: BuiltMemory, question: str) -> list[str]:
        """Normalized names of stored entities that the question names (whole words)."""
        padded = f" {norm(question)} "
        return [key for key in built.state.get("entities", {}) if f" {key} " in padded]

    def retrieve(self, built: BuiltMemory, asked: AskedQuestion, ctx: BuildContext) -> Retrieved:
        query = ctx.embedder.embed([asked.question])[0]
        hits = self._memory_hits(built, query, ctx)
        named = set(self.named_entities(built, asked.question))
        relations = built.state.get("relations") or []
        around = [i for i, r in enumerate(relations) if norm(r["source"]) in named or norm(r["target"]) in named]
        vectors = self._relation_vectors(built, ctx)
        if around and vectors is not None:
            for j, score in rank(vectors[around], query, self.relation_k):
                rel = relations[around[j]]
                status = "" if rel["valid"] else f"; obsolete since {rel['obsolete_since']}"
                hits.append(
                    {
                        "item_id": f"relation/{rel['id']}",
                        "score": round(score, 6),
                        "kind": "relation",
                        "line": f"- {relation_text(rel)} ({rel['created']}{status})",
                    }
                )
        hits.sort(key=lambda h: -h["score"])  # stable: memories before relations on ties
        retrieved = self._retrieved(built, hits)
        retrieved.extra["entities"] = sorted(built.state["entities"][k]["name"] for k in named)
        return retrieved
