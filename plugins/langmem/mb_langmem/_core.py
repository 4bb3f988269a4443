"""`langmem`: LangMem's memory store manager, its calls recorded, its store in the pack.

Build (once per conversation): LangMem's own `create_memory_store_manager` (langmem
0.0.30: search the store for related memories, have the model extract new memories and
patch the related ones through trustcall, put the results) over LangGraph's `InMemoryStore`
with a vector index. Its chat model is LangChain's `ChatOpenAI` and the index's embeddings
LangChain's `OpenAIEmbeddings`, both pointed at memorybench's recording endpoint
(`ToolCallEndpoint`, which sends LangMem's tool calls to the writer as JSON replies:
`mb_langmem._tools`). Each speaker has a namespace of their own (LangMem's default
`("memories", "{langgraph_user_id}")`, one user id per speaker), as in Mem0's evaluation of
LangMem (one agent per speaker). Each session is handed to the manager once per speaker (or
`batch_size` turns at a time), the speaker's turns as the user's messages and the other
speaker's as the assistant's, each message `DATE | SPEAKER: text` (the form of Mem0's
evaluation of LangMem): LangMem's background use, a finished thread at a time. LangMem
decides what to store.

The store is the pack's: after the build, what the InMemoryStore holds (`_data`, its items,
and `_vectors`, their embeddings: the two fields LangGraph names as its in-memory API) is
written to `memory/library_stores/langmem/<sample_id>/store.json`; a resumed run reads it
back into an InMemoryStore for search, with no call. The folder is emptied before a build,
so a killed build restarts its conversation from nothing.

Questions: LangMem's `MemoryStoreManager.search` on each speaker's namespace (`top_k`
each), merged best first; each memory is shown with its speaker and the date of the session
whose call last wrote it.

No other traffic: LangSmith tracing is off and its keys are removed from the environment
before LangChain is imported (trustcall traces every step with LangSmith's decorators);
OpenAIEmbeddings is told not to tokenize (its tokenizer, tiktoken, would fetch a vocabulary
from the network); the tests run the build under a socket audit.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import uuid
import warnings
from collections.abc import Iterator
from datetime import datetime
from importlib import metadata as importlib_metadata
from pathlib import Path
from typing import Any, ClassVar

from omegaconf import DictConfig

from memorybench.data.records import AskedQuestion, Conversation, Session, Turn
from memorybench.errors import ModelCallError, UserError
from memorybench.memory._managed import Retrieved
from memorybench.memory._writer_calls import WriterCallEstimate, expected
from memorybench.memory.base import BuildContext, BuiltMemory, MemoryItem
from memorybench.memory.library_endpoint import fresh_store

from mb_langmem._tools import ToolCallEndpoint, tools_text

METHOD = "langmem"
JOINER = "\n"
INSTALL = ".venv/bin/pip install -e plugins/langmem"
#: the versions this plugin was written for (its prompts, its store's fields); another is refused
PINNED = {"langmem": "0.0.30", "trustcall": "0.0.39", "langgraph-checkpoint": "4.3.2"}
#: LangMem's default namespace: one per user, here one per speaker
NAMESPACE = ("memories", "{langgraph_user_id}")
STORE_FILE = "store.json"
STORE_FORMAT = "langgraph InMemoryStore (_data, _vectors) as JSON, memorybench langmem plugin, v1"
#: LangSmith's switches, off; and its keys, removed (nothing may authenticate to it)
TRACING_OFF = {"LANGSMITH_TRACING": "false", "LANGCHAIN_TRACING_V2": "false", "LANGSMITH_TRACING_V2": "false"}
TRACING_KEYS = ("LANGSMITH_API_KEY", "LANGCHAIN_API_KEY")
#: the fixed part of LangMem's longest call (an update: its instructions, trustcall's update
#: header and the tools PatchDoc and Memory as the endpoint writes them), in SmolLM2's tokens
#: (Gemma 3's count 1,758): `count_tokens(update_call_text())`, checked by tests/test_langmem.py
FIXED_PROMPT_TOKENS = 1811
#: what each call adds besides the session's messages: the chat format and the session tags'
#: uuids (CALL_TOKENS), and up to `query_limit` memories shown (MEMORY_SHOWN_TOKENS each)
CALL_TOKENS = 128
MEMORY_SHOWN_TOKENS = 120


# -- which LangMem ---------------------------------------------------------------------------
def installed_versions() -> dict[str, str | None]:
    """The installed version of each pinned distribution (metadata only, no import); None: not installed."""
    out: dict[str, str | None] = {}
    for name in PINNED:
        try:
            out[name] = importlib_metadata.version(name)
        except importlib_metadata.PackageNotFoundError:
            out[name] = None
    return out


def check_installed() -> None:
    """One line when a pinned distribution is missing or at another version."""
    for name, have in installed_versions().items():
        want = PINNED[name]
        if have is None:
            raise UserError(f"memory=langmem needs {name} {want}, which is not installed; install the plugin with `{INSTALL}`")
        if have != want:
            raise UserError(
                f"memory=langmem was written for {name} {want} (its prompts, its tool calls, its store), but {name} "
                f"{have} is installed; reinstall the plugin's pins with `{INSTALL}`"
            )


def tracing_off() -> None:
    """LangSmith tracing off and its keys gone, before LangChain or trustcall is imported."""
    os.environ.update(TRACING_OFF)
    for key in TRACING_KEYS:
        os.environ.pop(key, None)


def import_langmem() -> dict[str, Any]:
    """LangMem and the LangChain pieces the plugin hands it, imported with tracing off (and
    LangSmith's keys removed again on every use: a run in a process that imported it before)."""
    tracing_off()
    if _LM:
        return _LM
    check_installed()
    try:
        with warnings.catch_warnings():  # trustcall imports Send from its langgraph 0.x place: said in docs/langmem.md
            warnings.simplefilter("ignore", DeprecationWarning)
            import langsmith.utils
            from langchain_core.utils.function_calling import convert_to_openai_tool
            from langchain_openai import ChatOpenAI, OpenAIEmbeddings
            from langgraph.store.base import Item
            from langgraph.store.memory import InMemoryStore
            from langmem import create_memory_store_manager
            from langmem.knowledge import extraction
    except ImportError as e:
        raise UserError(f"memory=langmem: {e}; reinstall the plugin with `{INSTALL}`") from None
    if langsmith.utils.tracing_is_enabled():
        raise UserError(
            "LangSmith tracing is on (LANGSMITH_TRACING / LANGCHAIN_TRACING_V2 read before memory=langmem could turn it "
            "off); import langchain only through memory=langmem, or unset those variables"
        )
    _LM.update(
        {
            "version": importlib_metadata.version("langmem"),
            "create_memory_store_manager": create_memory_store_manager,
            "extraction": extraction,
            "ChatOpenAI": ChatOpenAI,
            "OpenAIEmbeddings": OpenAIEmbeddings,
            "InMemoryStore": InMemoryStore,
            "Item": Item,
            "convert_to_openai_tool": convert_to_openai_tool,
        }
    )
    return _LM


_LM: dict[str, Any] = {}


def fixed_parts() -> dict[str, str]:
    """Every fixed text LangMem and trustcall send, by where it goes (LangMem's instructions
    and wrapper, trustcall's update header and repair request, each tool set as the endpoint
    writes it), from the installed libraries."""
    if _PARTS:
        return _PARTS
    lm = import_langmem()
    ex = lm["extraction"]
    from langchain_core.language_models.fake_chat_models import FakeListChatModel
    from trustcall._base import PatchDoc, PatchFunctionErrors, _create_patch_function_name_schema

    manager = ex.MemoryManager(FakeListChatModel(responses=[]), schemas=(ex.Memory,))  # never called
    wrapper = manager._prepare_messages([{"role": "user", "content": "{conversation}"}], max_steps=2)
    convert = lm["convert_to_openai_tool"]

    def tools(*models: Any, choice: Any) -> str:
        return tools_text([convert(m)["function"] for m in models], choice)

    # LangMem tags each session with a fresh uuid4: the file holds a placeholder, so that it is the same text every run
    session = re.sub(r"session_[0-9a-f-]{36}", "session_{id}", wrapper[1]["content"])
    _PARTS.update(
        {
            "system message (extract)": wrapper[0]["content"],
            "user message (extract, update)": session,
            "update: trustcall's header after the system message": (
                "Generate JSONPatches to update the existing schema instances. If you need to extract or insert *new* "
                'instances of the schemas, call the relevant function(s).\n<existing>\n<instance id={id} schema_type="Memory">'
                "\n{memory}\n</instance>\n</existing>"
            ),
            "repair: trustcall's request after a refused tool call": (
                "Error:\n\n```\n{error}\n```\nExpected Parameter Schema:\n\n```json\n{schema}\n```\nPlease use "
                "PatchFunctionErrors to fix all validation errors. for json_doc_id=[{id}].\nFix the validation error "
                "while also avoiding: {error}"
            ),
            "tools (extract)": tools(ex.Memory, choice=None),
            "tools (extract, a later step)": tools(ex.Memory, ex.Done, choice="required"),
            "tools (update)": tools(PatchDoc, ex.Memory, choice="required"),
            "tools (repair)": tools(PatchFunctionErrors, _create_patch_function_name_schema(["Memory"]), choice="required"),
        }
    )
    return _PARTS


_PARTS: dict[str, str] = {}
#: the parts of the longest call LangMem makes (an update over the memories shown)
UPDATE_CALL = (
    "system message (extract)",
    "user message (extract, update)",
    "update: trustcall's header after the system message",
    "tools (update)",
)


def fixed_prompt_text() -> str:
    """The pack's prompt file: every part of `fixed_parts`, so verify reads their words
    (trustcall's patch examples: "some", "values", "newer") as instructions, not leaked gold."""
    lm = import_langmem()
    head = (
        f"# LangMem's fixed text (langmem {lm['version']}, trustcall {importlib_metadata.version('trustcall')}), "
        "as the recording endpoint sends it; the session and the memories shown are filled in per call"
    )
    return "\n\n".join([head, *(f"## {name}\n{text}" for name, text in fixed_parts().items())]) + "\n"


def update_call_text() -> str:
    """The fixed text of LangMem's longest call (`UPDATE_CALL`)."""
    parts = fixed_parts()
    return "\n\n".join(parts[name] for name in UPDATE_CALL)


# -- repeatable ids --------------------------------------------------------------------------
class _StableUUID:
    """LangMem's `uuid` module with `uuid4` made repeatable: the n-th id of a conversation's
    build is uuid5 of (sample id, n). LangMem puts a fresh uuid4 into every prompt (its
    session tag) and keys new memories by uuid4; with these a rerun of a killed build sends
    the same prompts (the writer's response cache answers them) and keeps the same keys."""

    def __init__(self, seed: str) -> None:
        self.seed, self.n = seed, 0

    def uuid4(self) -> uuid.UUID:
        self.n += 1
        return uuid.uuid5(uuid.NAMESPACE_URL, f"memorybench/langmem/{self.seed}/{self.n}")

    def __getattr__(self, name: str) -> Any:
        return getattr(uuid, name)


@contextlib.contextmanager
def stable_ids(extraction: Any, seed: str) -> Iterator[None]:
    before = extraction.uuid
    extraction.uuid = _StableUUID(seed)
    try:
        yield
    finally:
        extraction.uuid = before


# -- the store in the pack ---------------------------------------------------------------------
def dump_store(store: Any, path: Path, dims: int) -> None:
    """What an InMemoryStore holds (items and their vectors) as one JSON file."""
    items = []
    for namespace in sorted(store._data):
        for key, item in sorted(store._data[namespace].items(), key=lambda kv: (str(kv[1].created_at), kv[0])):
            items.append(
                {
                    "namespace": list(namespace),
                    "key": key,
                    "value": item.value,
                    "created_at": item.created_at.isoformat(),
                    "updated_at": item.updated_at.isoformat(),
                    "vectors": {p: [float(x) for x in v] for p, v in store._vectors.get(namespace, {}).get(key, {}).items()},
                }
            )
    data = {"format": STORE_FORMAT, "index": {"dims": dims, "fields": ["$"]}, "items": items}
    path.write_text(json.dumps(data, ensure_ascii=False) + "\n", "utf-8")


def load_store(store: Any, path: Path) -> None:
    """An InMemoryStore filled from `dump_store`'s file (no embedding call)."""
    lm = import_langmem()
    data = json.loads(path.read_text("utf-8"))
    if data.get("format") != STORE_FORMAT:
        raise UserError(f"{path} is not a store this plugin wrote ({data.get('format')!r}); rerun the build in a new pack")
    for row in data["items"]:
        namespace = tuple(row["namespace"])
        store._data[namespace][row["key"]] = lm["Item"](
            value=row["value"],
            key=row["key"],
            namespace=namespace,
            created_at=datetime.fromisoformat(row["created_at"]),
            updated_at=datetime.fromisoformat(row["updated_at"]),
        )
        for p, vector in (row.get("vectors") or {}).items():
            store._vectors[namespace][row["key"]][p] = vector


def memory_text(value: Any) -> str:
    """A stored memory's text: LangMem's `Memory` content, else its JSON."""
    if isinstance(value, dict) and isinstance(value.get("content"), dict) and isinstance(value["content"].get("content"), str):
        return " ".join(value["content"]["content"].split())
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def message_text(session: Session, turn: Turn) -> str:
    """A turn as the manager reads it: `DATE | SPEAKER: text` (Mem0's evaluation of LangMem)."""
    return f"{session.date_time} | {turn.render()}"


# -- the method ---------------------------------------------------------------------------
class LangMemMemory:
    name: ClassVar[str] = METHOD
    question_dependent: ClassVar[bool] = True
    software_only: ClassVar[bool] = False
    uses_writer: ClassVar[bool] = True
    uses_embedder: ClassVar[bool] = True
    writer_templates: ClassVar[dict[str, frozenset[str]]] = {}
    #: the least every writer call holds (LangMem's fixed text and what each call adds), before
    #: the session's messages: `plan` refuses a local writer whose context cannot hold it
    WRITER_PROMPT_TOKENS: ClassVar[int] = FIXED_PROMPT_TOKENS + CALL_TOKENS + 5 * MEMORY_SHOWN_TOKENS
    WRITER_PROMPT_NOTE: ClassVar[str] = (
        f"LangMem's instructions, trustcall's update header and the tools as text ({FIXED_PROMPT_TOKENS:,}), the chat "
        f"format and session tags ({CALL_TOKENS}) and the 5 memories an update shows ({5 * MEMORY_SHOWN_TOKENS:,})"
    )
    #: writer calls per manager call: one extraction (or update) call; trustcall's repair calls
    #: come on top for a tool call its validation refuses
    CALLS_PER_INVOKE: ClassVar[float] = 1.0
    WRITER_CALLS_BASIS: ClassVar[str] = (
        "langmem: one extract or update call per manager call (trustcall, max_steps 1); conv-26's first session "
        "on writer=local made 2 calls for 2 manager calls (docs/langmem.md)"
    )

    @classmethod
    def writer_calls(cls, conversation: Conversation, cfg: DictConfig) -> WriterCallEstimate:
        """One manager call per session and speaker (or per `batch_size` turns), each one
        extraction or update call; a repair call comes on top where trustcall refuses a tool call."""
        invokes = sum(2 * len(batches(s, cfg.memory.get("batch_size"))) for s in conversation.sessions)
        task = expected("manage", invokes, cls.CALLS_PER_INVOKE, "calls per manager call", low=invokes, high=None)
        return WriterCallEstimate(tasks=[task], basis=cls.WRITER_CALLS_BASIS)

    @classmethod
    def check(cls, cfg: DictConfig) -> None:
        check_installed()  # the pinned LangMem is installed, before any model call

    @classmethod
    def run_notes(cls, cfg: DictConfig) -> list[str]:
        return [
            f"memory=langmem runs LangMem's own memory store manager (langmem {PINNED['langmem']}, trustcall "
            f"{PINNED['trustcall']}) over LangGraph's InMemoryStore, not a clone; its model and embedding calls went "
            "through memorybench's recording endpoint to writer= and embedder=, its tool calls sent as JSON replies "
            "(the tools written into the system message)"
        ]

    @classmethod
    def library_prompts(cls, cfg: DictConfig) -> dict[str, str]:
        """LangMem's and trustcall's fixed text as the endpoint sends it (`fixed_prompt_text`)."""
        return {f"library/{METHOD}/langmem-{PINNED['langmem']}_prompts.txt": fixed_prompt_text()}

    def __init__(self, cfg: DictConfig) -> None:
        node = cfg.memory
        self.top_k = int(node.top_k)
        self.query_limit = int(node.query_limit)
        self.batch_size = int(node.batch_size) if node.get("batch_size") is not None else None
        self.json_max_items, self.json_max_chars = int(node.json_max_items), int(node.json_max_chars)
        for key, value in (("top_k", self.top_k), ("query_limit", self.query_limit), ("batch_size", self.batch_size)):
            if value is not None and value < 1:
                raise UserError(f"memory=langmem: memory.{key}={value} must be at least 1")
        self._endpoint: ToolCallEndpoint | None = None

    # -- the endpoint and the library --------------------------------------------------
    def endpoint(self, ctx: BuildContext) -> ToolCallEndpoint:
        if self._endpoint is None:
            import_langmem()
            # trustcall logs a tool call it could not validate or a patch it could not apply at
            # ERROR on its logger "extraction"; LangMem's own logger is "langmem"
            self._endpoint = endpoint = ToolCallEndpoint(
                ctx,
                method=METHOD,
                max_items=self.json_max_items,
                max_chars=self.json_max_chars,
                loggers={"extraction": logging.ERROR, "langmem": logging.ERROR},
            ).__enter__()
            ctx.closers.append(lambda: endpoint.__exit__(None, None, None))
        return self._endpoint

    def size_local_writer(self, ctx: BuildContext, sessions: Any) -> None:
        """Before the embedded writer starts: its context must hold LangMem's fixed text, the
        longest manager call's messages and the memories shown. Counted with the model's tokenizer."""
        writer = ctx.writer
        if writer is None or not writer.is_local or writer._endpoint is not None:
            return
        from memorybench.llm.local.models import LOCAL_MODELS, count_tokens

        spec = LOCAL_MODELS.get(str(writer.node.model))
        longest = max(
            (
                count_tokens("\n\n".join(message_text(s, t) for t in turns), spec)
                for s in sessions
                for turns in batches(s, self.batch_size)
            ),
            default=0,
        )
        need = count_tokens(update_call_text(), spec) + CALL_TOKENS + longest + self.query_limit * MEMORY_SHOWN_TOKENS
        writer.longest_prompt_tokens = max(writer.longest_prompt_tokens, need)

    def open_store(self, ctx: BuildContext) -> tuple[Any, int]:
        """An empty InMemoryStore whose index embeds through the endpoint, and its dimensions."""
        endpoint = self.endpoint(ctx)
        lm = import_langmem()
        dims = ctx.embedder.dim or int(endpoint.in_worker(ctx.embedder.embed, ["dimension probe"]).shape[1])
        embeddings = lm["OpenAIEmbeddings"](
            model="memorybench-embedder",
            base_url=endpoint.base_url,
            api_key=endpoint.api_key,
            check_embedding_ctx_length=False,  # send texts, not tiktoken's token ids (no vocabulary fetched)
            max_retries=0,
            openai_proxy=None,
        )
        if not str(embeddings.client._client.base_url).startswith(endpoint.base_url):
            raise UserError(
                f"LangMem's embeddings call {embeddings.client._client.base_url}, not memorybench's recording endpoint"
            )
        return lm["InMemoryStore"](index={"dims": dims, "embed": embeddings}), dims

    def open_manager(self, ctx: BuildContext, store: Any) -> Any:
        endpoint = self.endpoint(ctx)
        lm = import_langmem()
        writer = ctx.writer.node
        chat = lm["ChatOpenAI"](
            model="memorybench-writer",
            base_url=endpoint.base_url,
            api_key=endpoint.api_key,
            temperature=float(writer.temperature),
            max_tokens=int(writer.max_tokens),
            max_retries=0,  # the writer's own client retries
            timeout=float(writer.get("timeout_s") or 900),
            openai_proxy=None,
        )
        if not str(chat.root_client.base_url).startswith(endpoint.base_url):
            raise UserError(f"LangMem's model calls {chat.root_client.base_url}, not memorybench's recording endpoint")
        return lm["create_memory_store_manager"](chat, namespace=NAMESPACE, store=store, query_limit=self.query_limit)

    # -- build -------------------------------------------------------------------------
    def build(self, conversation: Conversation, ctx: BuildContext) -> BuiltMemory:
        sid = conversation.sample_id
        relstore, store_dir = fresh_store(ctx, METHOD, sid)  # a killed build restarts its conversation from nothing
        endpoint = self.endpoint(ctx)
        lm = import_langmem()
        speakers = [conversation.speaker_a, conversation.speaker_b]
        users = {speaker: _user_id(sid, n) for n, speaker in enumerate(speakers)}
        sessions = conversation.sessions  # the first memory.max_sessions of them when set (ManagedMethod)
        self.size_local_writer(ctx, sessions)
        written: dict[str, dict[str, Any]] = {}
        calls = 0
        with endpoint.scope(sid), stable_ids(lm["extraction"], sid):
            store, dims = self.open_store(ctx)
            manager = self.open_manager(ctx, store)
            for session in sessions:
                for speaker in speakers:
                    for turns in batches(session, self.batch_size):
                        messages = [
                            {"role": "user" if t.speaker == speaker else "assistant", "content": message_text(session, t)}
                            for t in turns
                        ]
                        config = {"configurable": {"langgraph_user_id": users[speaker]}}
                        try:
                            puts = manager.invoke({"messages": messages}, config=config)
                        except (UserError, ModelCallError):
                            raise
                        except Exception as e:  # noqa: BLE001 - the library's own failure, named with where it happened
                            raise UserError(
                                f"memory=langmem: LangMem stopped on {sid}'s session {session.index} ({speaker}, turns "
                                f"{turns[0].dia_id}..{turns[-1].dia_id}): {type(e).__name__}: {' '.join(str(e).split())[:200]}; "
                                f"{ctx.writer.usage.failures} writer replies failed so far (memory/writer/failures.jsonl); "
                                "a rerun restarts this conversation"
                            ) from None
                        calls += 1
                        for put in puts or []:
                            row = written.setdefault(str(put["key"]), {"speaker": speaker, "dia_ids": []})
                            row.update(session=session.index, date=session.date_time)
                            row["dia_ids"] = list(dict.fromkeys([*row["dia_ids"], *(t.dia_id for t in turns)]))  # turn order
        dump_store(store, store_dir / STORE_FILE, dims)
        items = []
        for speaker in speakers:
            for item in store.search(("memories", users[speaker]), limit=100000):
                made = written.get(item.key, {})
                items.append(MemoryItem(item.key, render(speaker, made.get("date"), item.value), tuple(made.get("dia_ids", ()))))
        built = BuiltMemory(sid, items, state={"store": f"{relstore}/{STORE_FILE}", "users": users, "written": written})
        built.runtime["manager"] = manager
        built.metadata["library"] = {
            "distribution": "langmem",
            "version": lm["version"],
            "class": "langmem.create_memory_store_manager (MemoryStoreManager)",
            "store": "langgraph InMemoryStore, vector index; written to store.json after the build",
            "namespace": list(NAMESPACE),
            "manager_calls": calls,
            "memories": len(items),
            "sessions_built": len(sessions),
            "tool_calls_as_json": dict(endpoint.translated),
            "endpoint_rows": dict(endpoint.rows),
            "refused": len(endpoint.proxy.refused),
        }
        if endpoint.json_bounds:
            built.metadata["library"]["json_bounds"] = dict(endpoint.json_bounds)
        return built

    # -- questions ---------------------------------------------------------------------
    def retrieve(self, built: BuiltMemory, asked: AskedQuestion, ctx: BuildContext) -> Retrieved:
        endpoint = self.endpoint(ctx)
        written = built.state.get("written") or {}
        found = []
        with endpoint.scope(asked.sample_id, asked.question_id):
            manager = built.runtime.get("manager")
            if manager is None:  # a resumed run: the committed store, read back for search
                store, _ = self.open_store(ctx)
                load_store(store, ctx.pack.path(built.state["store"]))
                manager = built.runtime["manager"] = self.open_manager(ctx, store)
            for speaker, user in built.state["users"].items():
                config = {"configurable": {"langgraph_user_id": user}}
                for item in manager.search(query=asked.question, limit=self.top_k, config=config):
                    found.append((float(item.score or 0.0), speaker, item))
        found.sort(key=lambda hit: -hit[0])
        texts = [
            render(speaker, (written.get(item.key) or {}).get("date"), item.value.model_dump(mode="json"))
            if hasattr(item.value, "model_dump")
            else render(speaker, (written.get(item.key) or {}).get("date"), item.value)
            for _, speaker, item in found
        ]
        return Retrieved(
            texts=texts,
            hits=[{"item_id": str(item.key), "score": round(score, 6), "speaker": speaker} for score, speaker, item in found],
            render=lambda keep: JOINER.join(texts[n] for n in keep),
            extra={"joiner": JOINER},
        )

    def for_question(self, built: BuiltMemory, asked: AskedQuestion, ctx: BuildContext) -> str:
        retrieved = self.retrieve(built, asked, ctx)
        return retrieved.render(list(range(len(retrieved.texts))))


def batches(session: Session, size: Any) -> list[tuple[Turn, ...]]:
    """A session's turns in manager calls: all at once (size None), else `size` at a time."""
    turns = tuple(session.turns)
    if not turns:
        return []
    if size is None:
        return [turns]
    n = max(1, int(size))
    return [turns[i : i + n] for i in range(0, len(turns), n)]


def render(speaker: str, date: str | None, value: Any) -> str:
    """A memory as the reader sees it: `SPEAKER (DATE): text`, the date of the session whose call last wrote it."""
    if isinstance(value, dict) and "kind" not in value and isinstance(value.get("content"), str):
        value = {"kind": "Memory", "content": value}  # a coerced Memory (manager.search): its fields
    return f"{speaker} ({date or '?'}): {memory_text(value)}"


def _user_id(sample_id: str, n: int) -> str:
    return f"{sample_id}-speaker-{'ab'[n]}"
