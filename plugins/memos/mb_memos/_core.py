"""`memos`: MemOS's own extraction, storage and search, its calls recorded, its store in the pack.

MemOS (PyPI `MemoryOS`) offers three textual memories: `naive_text` (a list in memory,
keyword search), `general_text` (an extractor LLM, an embedder and a vector database) and
`tree_text` (its graph memory, on a Neo4j, PolarDB or PostgreSQL server). This method runs
`general_text`, the one that keeps MemOS's extraction and vector search and runs offline:
built by MemOS's own `MemoryFactory`, its vector database its `qdrant` backend in Qdrant's
embedded mode (`path=`: a folder of the pack, no server).

Build (once per conversation): each session is extracted once from each speaker's side,
as MemOS's own LoCoMo harness adds each session for both speakers: the session's turns as
MemOS messages (`[DATE]: SPEAKER: text`, that speaker's turns `user`, the other's
`assistant`, the layout of MemOS's extraction prompt's own example), given to
`GeneralTextMemory.extract` (MemOS's `SIMPLE_STRUCT_MEM_READER_PROMPT`, one writer call),
and what it extracted, stamped with the speaker and the session as MemOS's `MOS.add`
stamps its items (`user_id`, `session_id`), given to `GeneralTextMemory.add` (one embedding
request, Qdrant's upsert). MemOS decides what to store; nothing of that is ours.

MemOS runs in an environment of its own (`mb_memos._env` says why): one worker process
per conversation (`mb_memos._worker`), its model and embedding calls sent to memorybench's
recording endpoint on 127.0.0.1 (`MemosEndpoint`), which forwards them to `writer=` and
`embedder=` and journals each one. The worker refuses every other connection (its socket
audit) and says which it saw; a connection anywhere else stops the run.

Structured replies: MemOS's extraction request asks for no format (its prompt describes
the JSON it wants). With `writer.json_schema` (writer=local) `MemosEndpoint` sends that
request with the JSON Schema of the reply the prompt describes (`EXTRACT_SCHEMA`), bounded to
fit writer.max_tokens, so llama.cpp's grammar makes the reply parse; with a writer on a
server the request goes as MemOS sent it. A reply MemOS cannot use (its `extract` raises:
no `memory list`, a list item without its keys) loses that task's memories: the worker
reports it, and it counts as a failed writer task with MemOS's words.

The store is the pack's: `memory/library_stores/memos/<sample_id>/` holds Qdrant's embedded
store (`qdrant/`: the collection's SQLite file) and MemOS's own folder (`.memos/logs/memos.log`,
its log). Emptied before a build, so a killed build restarts its conversation; a resumed run
opens it again for search, with no build call.

Questions: `GeneralTextMemory.search(question, top_k)`: MemOS embeds the question and asks
Qdrant for the nearest memories; the reader sees their texts, one a line, best first.
"""

from __future__ import annotations

import logging
import re
from typing import Any, ClassVar

from omegaconf import DictConfig

from memorybench.data.records import AskedQuestion, Conversation, Session
from memorybench.errors import UserError
from memorybench.memory._managed import Retrieved
from memorybench.memory._writer_calls import WriterCallEstimate, exact
from memorybench.memory.base import BuildContext, BuiltMemory, MemoryItem
from memorybench.memory.library_endpoint import fresh_store
from memorybench.memory.venv_method import PlainStringsEndpoint, VenvMethod

from mb_memos import _env

METHOD = "memos"
INSTALL = _env.INSTALL
#: the versions this plugin was written for (its prompt, its store, its search)
PINNED = {"MemoryOS": "2.0.33", "qdrant-client": "1.20.0"}
#: the writer task: MemOS's extraction (GeneralTextMemory.extract)
TASK = "extract"
#: the JSON object MemOS's extraction prompt asks for ("Return a single valid JSON object with
#: the following structure"), as a JSON Schema: sent only with writer.json_schema. At least one
#: memory (the prompt: "Do not omit any information"); the title, the tags and the summary
#: (which MemOS's `extract` drops) have bounds of their own, so that what memory.json_max_chars
#: leaves within writer.max_tokens goes to the memories' values
EXTRACT_SCHEMA: dict[str, Any] = {
    "title": "MemoryList",
    "type": "object",
    "properties": {
        "memory list": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "properties": {
                    "key": {"type": "string", "maxLength": 32},
                    "memory_type": {"type": "string", "enum": ["LongTermMemory", "UserMemory"]},
                    "value": {"type": "string"},
                    "tags": {"type": "array", "maxItems": 3, "items": {"type": "string", "maxLength": 16}},
                },
                "required": ["key", "memory_type", "value", "tags"],
                "additionalProperties": False,
            },
        },
        "summary": {"type": "string", "maxLength": 64},
    },
    "required": ["memory list", "summary"],
    "additionalProperties": False,
}
#: seconds the worker may take to import MemOS and open its store
START_TIMEOUT_S = 300.0
#: what MemOS logs when it cannot use a reply (a counted failure of that call)
UNUSABLE = ("failed to parse llm response", "extracting memory failed", "generaltextmemory.extract raised")
#: MemOS's extraction prompt in the local models' tokens (the larger count; checked by
#: tests/test_memos.py), and a call's chat format
FIXED_PROMPT_TOKENS = 1850
CALL_TOKENS = 100


# -- which MemOS -------------------------------------------------------------------------
def check_installed() -> None:
    """One line when the MemOS environment is missing, or holds other versions than pinned."""
    python = _env.LIBRARY.check_pins(PINNED, "its prompt, its store, its search")
    if _env.prompt() is None:
        raise UserError(
            f"memory=memos: MemOS's extraction prompt ({_env.EXTRACT_PROMPT} in {'/'.join(_env.PROMPT_MODULE)}) was not "
            f"found in {python.parent.parent}; reinstall the plugin's pins with `{INSTALL}`"
        )


def extract_prompt() -> str:
    """MemOS's extraction prompt, as its `GeneralTextMemory.extract` fills it (no custom tags)."""
    text = _env.prompt()
    if text is None:
        raise UserError(f"memory=memos: MemOS's extraction prompt was not found; install the plugin with `{INSTALL}`")
    return text.replace("${custom_tags_prompt}", "")


def prompt_text() -> str:
    """The pack's prompt file: MemOS's extraction prompt as its calls send it (the conversation
    filled in per call), read from the MemOS environment, so verify reads its words (its worked
    examples: Tom, Jerry, "Deep Work") as instructions."""
    return (
        f"# MemOS's fixed text (MemoryOS {PINNED['MemoryOS']}: {_env.EXTRACT_PROMPT}, memos/templates/mem_reader_prompts.py), "
        "as the recording endpoint receives it; ${conversation} is filled in per call\n\n"
        f"{extract_prompt().strip()}\n"
    )


# -- the endpoint ------------------------------------------------------------------------
class MemosEndpoint(PlainStringsEndpoint):
    """The recording endpoint, knowing MemOS's extraction call by its prompt (a user message:
    MemOS sends no system message) and, with writer.json_schema, sending it with the reply's
    schema (module doc), each bounded free string plain (MemOS parses with `json.loads`, which
    refuses a raw newline: `PlainStringsEndpoint`). Everything else is LibraryEndpoint's."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, reply_schemas={TASK: EXTRACT_SCHEMA}, **kwargs)
        self.prompt_head = " ".join(extract_prompt().split())[:120]
        #: extraction requests sent with the schema (writer.json_schema)
        self.schema_requests = 0

    def role_of(self, messages: list[dict[str, str]], response_format: Any = None) -> str:
        first = next((m["content"] for m in messages if m.get("role") == "user"), "")
        if " ".join(first.split()).startswith(self.prompt_head):
            return TASK
        return super().role_of(messages, response_format)

    def _chat(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        writer = self.ctx.writer
        if (
            writer is not None
            and writer.node.get("json_schema")
            and body.get("response_format") is None
            and isinstance(body.get("messages"), list)
            and self.role_of([m for m in body["messages"] if isinstance(m, dict) and isinstance(m.get("content"), str)]) == TASK
        ):
            body = {**body, "response_format": {"type": "json_object"}}
            self.schema_requests += 1
        return super()._chat(body)


# -- messages and lineage ------------------------------------------------------------------
def perspectives(conversation: Conversation) -> list[str]:
    """The speakers whose side each session is extracted from (both, as MemOS's LoCoMo harness)."""
    return [s for s in dict.fromkeys((conversation.speaker_a, conversation.speaker_b)) if s]


def session_messages(session: Session, speaker: str) -> list[dict[str, str]]:
    """A session as MemOS messages from `speaker`'s side: their turns `user`, the rest
    `assistant`, each `[DATE]: SPEAKER: text` (the layout of MemOS's prompt's example)."""
    return [
        {"role": "user" if turn.speaker == speaker else "assistant", "content": f"[{session.date_time}]: {turn.render()}"}
        for turn in session.turns
    ]


def extraction_text(messages: list[dict[str, str]]) -> str:
    """The user message MemOS's `GeneralTextMemory.extract` sends for `messages` (its prompt,
    `role:content` a line): for the estimate and the local writer's size."""
    conversation = "\n".join(f"{m['role']}:{m['content']}" for m in messages)
    return extract_prompt().replace("${conversation}", conversation)


def tasks_of(conversation: Conversation, sessions: list[Session]) -> list[dict[str, Any]]:
    """The worker's build tasks: one extraction per session and speaker."""
    return [
        {
            "label": f"session_{s.index}/{speaker}",
            "user_id": speaker,
            "session_id": f"session_{s.index}",
            "messages": session_messages(s, speaker),
        }
        for s in sessions
        for speaker in perspectives(conversation)
    ]


def memory_items(items: list[dict[str, Any]], sessions: list[Session]) -> list[MemoryItem]:
    """What MemOS stored, as memory items: each memory's text, its sources the turns of the
    session it was extracted from (MemOS extracts from a whole session at once)."""
    turns = {f"session_{s.index}": tuple(t.dia_id for t in s.turns) for s in sessions}
    return [
        MemoryItem(
            str(i["id"]), " ".join(str(i.get("memory") or "").split()), turns.get(str(i["metadata"].get("session_id")), ())
        )
        for i in items
    ]


# -- the method ---------------------------------------------------------------------------
class MemosMemory(VenvMethod):
    """MemOS's general_text memory over its worker (module doc); the worker's plumbing is
    `VenvMethod`'s."""

    name: ClassVar[str] = METHOD
    question_dependent: ClassVar[bool] = True
    software_only: ClassVar[bool] = False
    uses_writer: ClassVar[bool] = True
    uses_embedder: ClassVar[bool] = True
    writer_templates: ClassVar[dict[str, frozenset[str]]] = {}
    library = _env.LIBRARY
    endpoint_class = MemosEndpoint
    start_timeout_s = START_TIMEOUT_S
    #: the least every writer call holds (MemOS's extraction prompt), before the session
    WRITER_PROMPT_TOKENS: ClassVar[int] = FIXED_PROMPT_TOKENS + CALL_TOKENS
    WRITER_PROMPT_NOTE: ClassVar[str] = f"MemOS's extraction prompt ({FIXED_PROMPT_TOKENS:,}) and the chat format ({CALL_TOKENS})"
    WRITER_CALLS_BASIS: ClassVar[str] = (
        "MemOS general_text: one GeneralTextMemory.extract call per session and speaker (MemOS retries none: "
        "a reply it cannot parse loses that task)"
    )

    @classmethod
    def writer_calls(cls, conversation: Conversation, cfg: DictConfig) -> WriterCallEstimate:
        sessions = [s for s in conversation.sessions if s.turns]
        try:
            prompts = [extraction_text(t["messages"]) for t in tasks_of(conversation, sessions)]
        except UserError:  # no MemOS environment: counted without the prompts (qa stops on it first)
            return WriterCallEstimate(
                tasks=[exact(TASK, len(sessions) * len(perspectives(conversation)))], basis=cls.WRITER_CALLS_BASIS, uncounted=None
            )
        return WriterCallEstimate(tasks=[exact(TASK, len(prompts), prompts)], basis=cls.WRITER_CALLS_BASIS, uncounted=None)

    @classmethod
    def check(cls, cfg: DictConfig) -> None:
        check_installed()

    @classmethod
    def run_notes(cls, cfg: DictConfig) -> list[str]:
        return [
            f"memory=memos runs MemOS's own general_text memory (MemoryOS {PINNED['MemoryOS']}, in its own environment: "
            "GeneralTextMemory.extract per session and speaker, add, search over embedded Qdrant), not a clone; its model "
            "and embedding calls went through memorybench's recording endpoint to writer= and embedder=; the reader saw "
            "the memories MemOS's search returned"
        ]

    @classmethod
    def library_prompts(cls, cfg: DictConfig) -> dict[str, str]:
        """The pack's prompt files of MemOS's fixed text, so verify reads their words as the
        library's: the extraction prompt its calls send (`prompt_text`), and the words every
        MemOS store holds, read from empty stores the installed MemOS made
        (`mb_memos._store_words`: Qdrant's SQLite schema and pickled classes, MemOS's item
        fields, its log's fixed lines)."""
        from mb_memos._store_words import store_words

        return {
            f"library/{METHOD}/memos-{PINNED['MemoryOS']}_prompts.txt": prompt_text(),
            f"library/{METHOD}/memos-{PINNED['MemoryOS']}_store_words.txt": store_words(),
        }

    def __init__(self, cfg: DictConfig) -> None:
        node = cfg.memory
        self.top_k = int(node.top_k)
        self.json_max_items, self.json_max_chars = int(node.json_max_items), int(node.json_max_chars)
        for key, value in (
            ("top_k", self.top_k),
            ("json_max_items", self.json_max_items),
            ("json_max_chars", self.json_max_chars),
        ):
            if value < 1:
                raise UserError(f"memory=memos: memory.{key}={value} must be at least 1")
        super().__init__()

    # -- the worker --------------------------------------------------------------------
    def report(self, event: dict[str, Any]) -> None:
        """A record MemOS logged in the worker (or an extraction it could not finish): journaled
        with the call it followed; a reply MemOS could not use, or an ERROR, counts that call's
        task as failed."""
        message = " ".join(str(event.get("message") or "").split())
        level = str(event.get("level") or "WARNING")
        failure = level in ("ERROR", "CRITICAL") or any(k in message.lower() for k in UNUSABLE)
        assert self._endpoint is not None
        self._endpoint.report(f"log {event.get('logger')} {level}", message, failure=failure)

    def open_fields(self, sid: str) -> dict[str, Any]:
        return {"collection": collection_name(sid)}

    def size_local_writer(self, ctx: BuildContext, tasks: list[dict[str, Any]]) -> None:
        """Before the embedded writer starts: its context must hold MemOS's extraction prompt
        with the longest session filled in. Counted with the model's tokenizer."""
        writer = ctx.writer
        if writer is None or not writer.is_local or writer._endpoint is not None or not tasks:
            return
        from memorybench.llm.local.models import LOCAL_MODELS, count_tokens

        spec = LOCAL_MODELS.get(str(writer.node.model))
        need = max(count_tokens(extraction_text(t["messages"]), spec) for t in tasks) + CALL_TOKENS
        writer.longest_prompt_tokens = max(writer.longest_prompt_tokens, need)

    def memory_tokens_bound(self, conversations: list[Conversation]) -> int:
        """A high estimate of what a search hands the reader (for sizing a local reader):
        `top_k` memories of at most a long sentence or two each."""
        return self.top_k * 160 + 32

    # -- build -------------------------------------------------------------------------
    def build(self, conversation: Conversation, ctx: BuildContext) -> BuiltMemory:
        sid = conversation.sample_id
        relstore, store = fresh_store(ctx, METHOD, sid)  # a killed build restarts its conversation from nothing
        self._workers.pop(sid, None)
        sessions = [s for s in conversation.sessions if s.turns]  # the first memory.max_sessions of them when set
        tasks = tasks_of(conversation, sessions)
        self.size_local_writer(ctx, tasks)
        endpoint = self.endpoint(ctx)
        with endpoint.scope(sid):
            worker = self.worker(ctx, sid, store)
            built = self._ask(worker, "build", sid, tasks=tasks)
            dumped = self._ask(worker, "dump", sid)
        items = memory_items(dumped["items"], sessions)
        out = BuiltMemory(sid, items, state={"store": relstore, "collection": collection_name(sid)})
        out.runtime["worker"] = worker
        out.metadata["library"] = {
            "distribution": "MemoryOS",
            "version": self.library_versions.get("MemoryOS"),
            "versions": dict(self.library_versions),
            "memory_type": "general_text",
            "calls": "GeneralTextMemory.extract (one per session and speaker), GeneralTextMemory.add, GeneralTextMemory.search",
            "store": f"{relstore}/: Qdrant's embedded store (qdrant/) and MemOS's own folder (.memos/: its log)",
            "extraction_tasks": len(tasks),
            "extraction_failed": list(built.get("failed") or []),
            "memories_per_task": {label: len(ids) for label, ids in built.get("extracted") or []},
            "sessions_built": len(sessions),
            "perspectives": perspectives(conversation),
            "schema_requests": endpoint.schema_requests,
            **self.library_record(endpoint),
        }
        return out

    # -- questions ---------------------------------------------------------------------
    def retrieve(self, built: BuiltMemory, asked: AskedQuestion, ctx: BuildContext) -> Retrieved:
        endpoint = self.endpoint(ctx)
        sid = asked.sample_id
        with endpoint.scope(sid, asked.question_id):
            found = self._ask(self.search_worker(ctx, sid, built), "search", sid, query=asked.question, top_k=self.top_k)
        hits = found.get("items") or []
        texts = [" ".join(str(h.get("memory") or "").split()) for h in hits]
        return Retrieved(
            texts=texts,
            hits=[
                {"item_id": str(h["id"]), "score": round(1.0 / (n + 1), 6), "text": t[:200]}
                for n, (h, t) in enumerate(zip(hits, texts))
            ],
            render=lambda keep: "\n".join(texts[n] for n in keep),
            extra={"score": "rank (GeneralTextMemory.search returns its memories best first, without their scores)"},
        )


def collection_name(sample_id: str) -> str:
    """The Qdrant collection of a conversation (letters, digits, `_` and `-`)."""
    return re.sub(r"[^A-Za-z0-9_-]", "_", sample_id)[:64] or "conversation"


logging.getLogger(__name__).addHandler(logging.NullHandler())
