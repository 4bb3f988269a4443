"""`graph`: our single-writer graph. One writer call per session (session text only,
`memory.prompts.extract`, JSON mode) returns entities and relations; replies are checked
against `GraphReply` (a reply that does not parse or match gets one repair turn, then the
session is skipped: recorded in `memory/writer/failures.jsonl`, said on stderr and in the
memory text). Sessions are merged in order: a node per normalized entity name, an edge
per normalized (source, relation, target), each with the sessions that produced it
(`memory/graph/nodes.jsonl`, `memory/graph/edges.jsonl`). The reader gets the graph as
text: entities, then relations in the order they were first seen, with session dates.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, ClassVar, Optional

from pydantic import BaseModel, ConfigDict, Field, field_validator

from memorybench.config import store_schema
from memorybench.data.records import AskedQuestion, Conversation
from memorybench.memory._context import session_text
from memorybench.memory._failures import WriterMemoryConfig
from memorybench.memory.base import BuildContext, BuiltMemory, MemoryItem
from memorybench.registry import MEMORY

if TYPE_CHECKING:  # a type only: reading a class off its registry needs no OmegaConf (verify)
    from omegaconf import DictConfig

    from memorybench.memory._writer_calls import WriterCallEstimate


store_schema("memory", "graph", WriterMemoryConfig)  # no keys of its own beyond the writer bound


def norm(name: str) -> str:
    """The identity of an entity or relation name: casefolded, words only, single spaces."""
    return " ".join(re.sub(r"[^\w]+", " ", name.casefold()).split())


class _Strict(BaseModel):
    model_config = ConfigDict(extra="ignore")

    @field_validator("*", mode="before")
    @classmethod
    def _strip(cls, value: Any) -> Any:
        return " ".join(value.split()) if isinstance(value, str) else value


class GraphEntity(_Strict):
    name: str = Field(min_length=1)
    type: Optional[str] = None


class GraphRelation(_Strict):
    source: str = Field(min_length=1)
    relation: str = Field(min_length=1)
    target: str = Field(min_length=1)
    when: Optional[str] = None

    @field_validator("source", "relation", "target")
    @classmethod
    def _has_word(cls, value: str) -> str:
        if not norm(value):
            raise ValueError("must contain a word")
        return value


#: the entity types the extraction prompts name; a grammar-constrained writer picks one of them
ENTITY_TYPES = ("person", "place", "organization", "event", "object", "activity", "other")


def _text(**extra: Any) -> dict[str, Any]:
    return {"type": "string", "minLength": 1, **extra}


class GraphReply(BaseModel):
    """What the writer must return for one session (or message pair)."""

    model_config = ConfigDict(extra="ignore")
    entities: list[GraphEntity]
    relations: list[GraphRelation]

    @classmethod
    def grammar_schema(cls, context: Any = None) -> dict[str, Any]:
        """The shape a grammar-constrained writer is held to: names and relations non-empty,
        an entity's type one of `ENTITY_TYPES` (not free text the model could fill with
        noise), `when` a string or null. Parsing stays as lenient as the model above."""
        entity = {
            "type": "object",
            "properties": {"name": _text(), "type": {"enum": list(ENTITY_TYPES)}},
            "required": ["name", "type"],
        }
        relation = {
            "type": "object",
            "properties": {
                "source": _text(),
                "relation": _text(),
                "target": _text(),
                "when": {"anyOf": [{"type": "string"}, {"type": "null"}]},
            },
            "required": ["source", "relation", "target", "when"],
        }
        return {
            "type": "object",
            "properties": {"entities": {"type": "array", "items": entity}, "relations": {"type": "array", "items": relation}},
            "required": ["entities", "relations"],
        }


class Graph:
    """Nodes and edges merged in a fixed order (the order `add` is called in)."""

    def __init__(self) -> None:
        self.nodes: dict[str, dict[str, Any]] = {}
        self.edges: dict[tuple[str, str, str], dict[str, Any]] = {}

    def node(self, name: str, type_: str | None, session: int) -> dict[str, Any]:
        key = norm(name)
        node = self.nodes.get(key)
        if node is None:
            node = self.nodes[key] = {
                "node_id": f"n{len(self.nodes) + 1}",
                "name": name,
                "type": type_ or "other",
                "sessions": [],
            }
        elif node["type"] == "other" and type_:
            node["type"] = type_
        if session not in node["sessions"]:
            node["sessions"].append(session)
        return node

    def add(self, reply: GraphReply, session: int, date: str) -> None:
        for entity in reply.entities:
            if norm(entity.name):
                self.node(entity.name, entity.type, session)
        for rel in reply.relations:
            source, target = self.node(rel.source, None, session), self.node(rel.target, None, session)
            key = (norm(rel.source), norm(rel.relation), norm(rel.target))
            edge = self.edges.get(key)
            if edge is None:
                edge = self.edges[key] = {
                    "edge_id": f"e{len(self.edges) + 1}",
                    "source": source["name"],
                    "relation": rel.relation,
                    "target": target["name"],
                    "sessions": [],
                    "dates": [],
                    "when": [],
                }
            if session not in edge["sessions"]:
                edge["sessions"].append(session)
                edge["dates"].append(date)
            if rel.when and rel.when not in edge["when"]:
                edge["when"].append(rel.when)

    def render(self, failed: list[int]) -> str:
        lines = ["Entities:"]
        for node in self.nodes.values():
            sessions = ", ".join(str(s) for s in node["sessions"])
            lines.append(f"- {node['name']} ({node['type']}; session {sessions})")
        lines += ["", "Relations:"]
        for edge in self.edges.values():
            when = f"; when: {', '.join(edge['when'])}" if edge["when"] else ""
            lines.append(f"- {edge['source']} -- {edge['relation']} --> {edge['target']} ({edge['dates'][0]}{when})")
        if failed:
            lines += ["", f"Sessions without a graph (the writer failed): {', '.join(str(s) for s in failed)}"]
        return "\n".join(lines)


@MEMORY.register("graph")
class GraphMemory:
    name: ClassVar[str]
    question_dependent: ClassVar[bool] = False
    software_only: ClassVar[bool] = False
    uses_writer: ClassVar[bool] = True
    writer_templates: ClassVar[dict[str, frozenset[str]]] = {"extract": frozenset({"date", "session"})}

    @classmethod
    def writer_calls(cls, conversation: Conversation, cfg: DictConfig) -> WriterCallEstimate:
        """One extraction per session with turns, its prompt that session's text: exact."""
        from memorybench.memory._writer_calls import WriterCallEstimate, exact, filler

        fill = filler(cls, cfg, "extract")
        prompts = [fill({"date": s.date_time, "session": session_text(s)}) for s in conversation.sessions if s.turns]
        return WriterCallEstimate(tasks=[exact("extract", len(prompts), prompts)])

    def __init__(self, cfg: DictConfig) -> None:
        self.cfg = cfg
        self.writer_max_tokens = int(cfg.writer.get("max_tokens") or 0)

    def memory_tokens_bound(self, conversations: list[Conversation]) -> int:
        """The rendered graph is shorter than the JSON replies it merges (writer.max_tokens each)."""
        sessions = max((len(c.sessions) for c in conversations), default=0)
        return sessions * self.writer_max_tokens + 64

    def build(self, conversation: Conversation, ctx: BuildContext) -> BuiltMemory:
        sid = conversation.sample_id
        graph, failed = Graph(), []
        for session in conversation.sessions:
            if not session.turns:
                continue
            reply = ctx.writer.call(
                "extract",
                {"date": session.date_time, "session": session_text(session)},
                sample_id=sid,
                schema=GraphReply,
                session=session.index,
            )
            if not reply.ok:
                failed.append(session.index)
                ctx.writer.record_failure(
                    reply,
                    sample_id=sid,
                    role="extract",
                    session=session.index,
                    sources=[t.dia_id for t in session.turns],
                    action="the session is left out of the graph",
                )
                continue
            graph.add(reply.data, session.index, session.date_time)
        nodes, edges = ctx.pack.journal("memory/graph/nodes.jsonl"), ctx.pack.journal("memory/graph/edges.jsonl")
        for node in graph.nodes.values():
            nodes.append({"schema": "graph_node.v1", "sample_id": sid, **node})
        for edge in graph.edges.values():
            edges.append({"schema": "graph_edge.v1", "sample_id": sid, **edge})
        items = [
            MemoryItem(n["node_id"], f"{n['name']} ({n['type']})", tuple(f"session_{s}" for s in n["sessions"]))
            for n in graph.nodes.values()
        ] + [
            MemoryItem(
                e["edge_id"], f"{e['source']} -- {e['relation']} --> {e['target']}", tuple(f"session_{s}" for s in e["sessions"])
            )
            for e in graph.edges.values()
        ]
        metadata = {"nodes": len(graph.nodes), "edges": len(graph.edges), "failed_sessions": failed}
        return BuiltMemory(sid, items, text=graph.render(failed), metadata=metadata)

    def for_question(self, built: BuiltMemory, asked: AskedQuestion, ctx: BuildContext) -> str:
        assert built.text is not None
        return built.text
