"""`mem0_lib`: mem0's `Memory` class, its calls recorded, its Qdrant store in the pack.

Build (once per conversation): a fresh `mem0.Memory` whose LLM and embedder are mem0's own
OpenAI providers pointed at memorybench's recording endpoint (`LibraryEndpoint`), whose
vector store is a local Qdrant folder at `memory/library_stores/mem0_lib/<sample_id>/qdrant`
and whose history database is `.../history.db` beside it (verify reads no records there,
but scans it for gold). As in mem0's own LoCoMo
evaluation, each speaker has a memory of their own (`user_id`), and each session is added
to both, `batch_size` turns per `Memory.add` call, the speaker's turns as `user` messages
and the other's as `assistant` ones; the session's date and turn ids ride along as
metadata. mem0 decides what to store (its additive extraction prompt, one call per add).

Questions: `Memory.search` on each speaker's memory (`top_k` each), merged best first; each
memory is shown with its speaker and its session's date.

The store folder is removed before a build, so a killed build restarts its conversation
cleanly; a committed conversation is loaded from the pack (`ManagedMethod`) and its store
reopened for search only. Telemetry is off before mem0 is imported (`MEM0_TELEMETRY=False`),
and mem0's home folder (`MEM0_DIR`) is the run's cache folder, never ~/.mem0.
"""

from __future__ import annotations

import atexit
import logging
import os
from typing import Any, ClassVar

from omegaconf import DictConfig

from memorybench.data.records import AskedQuestion, Conversation
from memorybench.errors import UserError
from memorybench.memory._managed import Retrieved
from memorybench.memory._writer_calls import WriterCallEstimate, exact
from memorybench.memory.base import BuildContext, BuiltMemory, MemoryItem
from memorybench.memory.library_endpoint import LibraryEndpoint, fresh_store

METHOD = "mem0_lib"
JOINER = "\n"
#: the reply shape mem0 2.x parses from its extraction call (`{"memory": [{"id", "text"}]}`)
EXTRACT_REPLY_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "memory": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"id": {"type": "string", "maxLength": 4}, "text": {"type": "string"}},
                "required": ["id", "text"],
                "additionalProperties": False,
            },
        }
    },
    "required": ["memory"],
    "additionalProperties": False,
}
#: mem0ai 2.2.1's ADDITIVE_EXTRACTION_PROMPT in tokens, by SmolLM2's tokenizer (Gemma 3's
#: counts 8,131): `count_tokens` of prompts/library/mem0_lib/mem0ai-2.2.1_additive_extraction.txt
EXTRACTION_PROMPT_TOKENS = 8530
#: what every extraction call adds to mem0's prompt besides the new messages: the chat
#: format and mem0's headings (1024), the last 10 messages and up to 10 memories (60 each)
CALL_TOKENS = 1024 + 10 * 60


def import_mem0(home: str) -> Any:
    """mem0's modules, imported with telemetry off and its home folder under `home`
    (both are read once, at import time)."""
    os.environ["MEM0_TELEMETRY"] = "False"
    # the run's own folder, not a user's exported MEM0_DIR: mem0 writes its config.json there
    os.environ["MEM0_DIR"] = home
    os.makedirs(os.environ["MEM0_DIR"], exist_ok=True)
    try:
        import mem0
        from mem0 import Memory
        from mem0.configs import prompts
    except ImportError as e:
        raise UserError(
            f"memory=mem0_lib needs mem0ai: {e}; install it with `.venv/bin/pip install -e plugins/mem0_lib`"
        ) from None
    from mem0.memory import telemetry

    if telemetry.MEM0_TELEMETRY:
        raise UserError("mem0 was imported with telemetry on (MEM0_TELEMETRY); import mem0 only through memory=mem0_lib")
    return mem0, Memory, prompts


class Mem0Lib:
    name: ClassVar[str] = METHOD
    question_dependent: ClassVar[bool] = True
    software_only: ClassVar[bool] = False
    uses_writer: ClassVar[bool] = True
    uses_embedder: ClassVar[bool] = True
    writer_templates: ClassVar[dict[str, frozenset[str]]] = {"extract": frozenset()}
    #: the least every writer call holds (mem0's prompt and what each call adds), before the
    #: new messages: `plan` refuses a local writer whose context cannot hold it, naming the writer
    WRITER_PROMPT_TOKENS: ClassVar[int] = EXTRACTION_PROMPT_TOKENS + CALL_TOKENS
    WRITER_PROMPT_NOTE: ClassVar[str] = (
        f"mem0's own extraction prompt ({EXTRACTION_PROMPT_TOKENS:,}) and what each call "
        f"adds to it (the last 10 messages, up to 10 memories: {CALL_TOKENS:,})"
    )

    @classmethod
    def writer_calls(cls, conversation: Conversation, cfg: DictConfig) -> WriterCallEstimate:
        """One call per `Memory.add`: per session and speaker, one add per `batch_size` turns;
        mem0ai 2.x's additive pipeline makes a single extraction call per add and no update
        call (`Memory._add_to_vector_store`, 2.2.1), so the number is exact. Its prompts are
        mem0's own (not counted here)."""
        batch = max(1, int(cfg.memory.batch_size))
        adds = sum(2 * -(-len(s.turns) // batch) for s in conversation.sessions)  # ceil: the last batch may be short
        return WriterCallEstimate(
            tasks=[exact("extract", adds)], uncounted=None
        )  # the endpoint asks no repair; mem0 retries none

    def __init__(self, cfg: DictConfig) -> None:
        node = cfg.memory
        self.top_k = int(node.top_k)
        self.batch_size = int(node.batch_size)
        self.json_max_items, self.json_max_chars = int(node.json_max_items), int(node.json_max_chars)
        if self.top_k < 1 or self.batch_size < 1:
            raise UserError(f"memory=mem0_lib: top_k={self.top_k} and batch_size={self.batch_size} must each be at least 1")
        self._endpoint: LibraryEndpoint | None = None

    @classmethod
    def run_notes(cls, cfg: DictConfig) -> list[str]:
        return [
            "memory=mem0_lib runs mem0's own library (mem0ai), not a clone; its model and embedding calls went "
            "through memorybench's recording endpoint to writer= and embedder="
        ]

    # -- the endpoint and the library --------------------------------------------------
    def endpoint(self, ctx: BuildContext) -> LibraryEndpoint:
        if self._endpoint is None:
            mem0, _, prompts = import_mem0(str(ctx.cache_dir / "mem0_home"))
            copy = ctx.writer.templates["extract"]
            if copy.text.strip() != prompts.ADDITIVE_EXTRACTION_PROMPT.strip():
                raise UserError(
                    f"prompts/{copy.relpath} is not the extraction prompt of the installed mem0ai "
                    f"{getattr(mem0, '__version__', '?')}; reinstall the plugin (pip install -e plugins/mem0_lib)"
                )
            self._endpoint = LibraryEndpoint(
                ctx,
                method=METHOD,
                roles={"extract": prompts.ADDITIVE_EXTRACTION_PROMPT},
                reply_schemas={"extract": EXTRACT_REPLY_SCHEMA},
                max_items=self.json_max_items,
                max_chars=self.json_max_chars,
                # mem0's failures ("Error parsing extraction response: ...") are ERROR records; its
                # warnings say that an optional package (fastembed, spaCy) is missing: remarks
                loggers={"mem0": logging.ERROR},
            ).__enter__()
        return self._endpoint

    def size_local_writer(self, ctx: BuildContext, sessions: Any) -> None:
        """Before the embedded writer starts: its context must hold mem0's own system prompt
        (~9k tokens), the new messages of the longest batch, the last 10 messages mem0 adds
        again, and up to 10 existing memories. Counted with the model's own tokenizer."""
        writer = ctx.writer
        if writer is None or not writer.is_local or writer._endpoint is not None:
            return
        from memorybench.llm.local.models import LOCAL_MODELS, count_tokens
        from memorybench.llm.sizing import estimate_tokens

        _, _, prompts = import_mem0(str(ctx.cache_dir / "mem0_home"))
        spec = LOCAL_MODELS.get(str(writer.node.model))
        batches = [s.turns[i : i + self.batch_size] for s in sessions for i in range(0, len(s.turns), self.batch_size)]
        longest = max((estimate_tokens("\n".join(t.render() for t in b)) for b in batches), default=0)
        need = count_tokens(prompts.ADDITIVE_EXTRACTION_PROMPT, spec) + 2 * longest + CALL_TOKENS
        writer.longest_prompt_tokens = max(writer.longest_prompt_tokens, need)

    def open_memory(self, ctx: BuildContext, store: Any) -> Any:
        endpoint = self.endpoint(ctx)
        _, Memory, _ = import_mem0(str(ctx.cache_dir / "mem0_home"))
        dims = ctx.embedder.dim or int(endpoint.in_worker(ctx.embedder.embed, ["dimension probe"]).shape[1])
        writer = ctx.writer.node
        config = {
            "vector_store": {
                "provider": "qdrant",
                "config": {
                    "collection_name": "mem0",
                    "path": str(store / "qdrant"),
                    "on_disk": True,
                    "embedding_model_dims": dims,
                },
            },
            "llm": {
                "provider": "openai",
                "config": {
                    "model": "memorybench-writer",
                    "openai_base_url": endpoint.base_url,
                    "api_key": endpoint.api_key,
                    "temperature": float(writer.temperature),
                    "max_tokens": int(writer.max_tokens),
                },
            },
            "embedder": {
                "provider": "openai",
                "config": {
                    "model": "memorybench-embedder",
                    "openai_base_url": endpoint.base_url,
                    "api_key": endpoint.api_key,
                    "embedding_dims": dims,
                },
            },
            "history_db_path": str(store / "history.db"),
        }
        memory = Memory.from_config(config)
        # Qdrant's local client closes itself in __del__, which at interpreter shutdown finds
        # the import machinery gone and prints a traceback: close it while Python still runs
        atexit.register(_close_store, memory)
        for part, client in (("llm", memory.llm.client), ("embedder", memory.embedding_model.client)):
            if not str(client.base_url).startswith(endpoint.base_url):
                raise UserError(
                    f"mem0's {part} calls {client.base_url}, not memorybench's recording endpoint (is "
                    "OPENROUTER_API_KEY set? mem0 then ignores its configured base URL); unset it for memory=mem0_lib"
                )
        return memory

    # -- build -------------------------------------------------------------------------
    def build(self, conversation: Conversation, ctx: BuildContext) -> BuiltMemory:
        sid = conversation.sample_id
        relstore, store = fresh_store(ctx, METHOD, sid)  # a killed build restarts its conversation from nothing
        endpoint = self.endpoint(ctx)
        speakers = [conversation.speaker_a, conversation.speaker_b]
        users = {speaker: _user_id(sid, n) for n, speaker in enumerate(speakers)}
        sources: dict[str, set[str]] = {}
        adds = 0
        sessions = conversation.sessions  # the first memory.max_sessions of them when set (ManagedMethod)
        self.size_local_writer(ctx, sessions)
        with endpoint.scope(sid):
            memory = self.open_memory(ctx, store)
            for session in sessions:
                for speaker in speakers:
                    for start in range(0, len(session.turns), self.batch_size):
                        turns = session.turns[start : start + self.batch_size]
                        messages = [
                            {"role": "user" if t.speaker == speaker else "assistant", "content": t.render()} for t in turns
                        ]
                        metadata = {"session": session.index, "date": session.date_time, "dia_ids": [t.dia_id for t in turns]}
                        result = memory.add(messages, user_id=users[speaker], metadata=metadata)
                        adds += 1
                        for row in (result or {}).get("results", []):
                            sources.setdefault(str(row.get("id")), set()).update(t.dia_id for t in turns)
            items = []
            for speaker in speakers:
                listed = memory.get_all(filters={"user_id": users[speaker]}, top_k=100000)
                for row in sorted(listed.get("results", []), key=lambda r: (str(r.get("created_at")), str(r["id"]))):
                    meta = row.get("metadata") or {}
                    text = f"{speaker} ({meta.get('date', '?')}): {row['memory']}"
                    items.append(MemoryItem(str(row["id"]), text, tuple(sorted(sources.get(str(row["id"]), ())))))
        built = BuiltMemory(sid, items, state={"store": relstore, "users": users})
        built.runtime["memory"] = memory
        import mem0

        built.metadata["library"] = {
            "distribution": "mem0ai",
            "version": mem0.__version__ if hasattr(mem0, "__version__") else None,
            "class": "mem0.Memory",
            "vector_store": "qdrant (local folder)",
            "store": relstore,
            "add_calls": adds,
            "sessions_built": len(sessions),
            "endpoint_rows": dict(endpoint.rows),
            "refused": len(endpoint.proxy.refused),
        }
        if endpoint.json_bounds:
            built.metadata["library"]["json_bounds"] = dict(endpoint.json_bounds)
        return built

    # -- questions ---------------------------------------------------------------------
    def retrieve(self, built: BuiltMemory, asked: AskedQuestion, ctx: BuildContext) -> Retrieved:
        endpoint = self.endpoint(ctx)
        with endpoint.scope(asked.sample_id, asked.question_id):
            memory = built.runtime.get("memory")
            if memory is None:  # a resumed run: the committed store, reopened for search
                memory = built.runtime["memory"] = self.open_memory(ctx, ctx.pack.path(built.state["store"]))
            found = []
            for speaker, user in built.state["users"].items():
                result = memory.search(asked.question, top_k=self.top_k, filters={"user_id": user})
                for row in result.get("results", []):
                    found.append((float(row.get("score") or 0.0), speaker, row))
        found.sort(key=lambda hit: -hit[0])
        texts = [f"{speaker} ({(row.get('metadata') or {}).get('date', '?')}): {row['memory']}" for _, speaker, row in found]
        return Retrieved(
            texts=texts,
            hits=[{"item_id": str(row["id"]), "score": round(score, 6), "speaker": speaker} for score, speaker, row in found],
            render=lambda keep: JOINER.join(texts[n] for n in keep),
            extra={"joiner": JOINER},
        )

    def for_question(self, built: BuiltMemory, asked: AskedQuestion, ctx: BuildContext) -> str:
        retrieved = self.retrieve(built, asked, ctx)
        return retrieved.render(list(range(len(retrieved.texts))))


def _user_id(sample_id: str, n: int) -> str:
    return f"{sample_id}-speaker-{'ab'[n]}"


def _close_store(memory: Any) -> None:
    """Close a mem0 Memory's vector store client (Qdrant's local folder), ignoring a store
    already closed."""
    client = getattr(getattr(memory, "vector_store", None), "client", None)
    try:
        if client is not None:
            client.close()
    except Exception:  # noqa: BLE001 - closing at exit: nothing left to report to
        pass
