"""`amem`: A-MEM's `AgenticMemorySystem`, its calls recorded, its Chroma store in the pack.

Which code: the module `agentic_memory` of whichever A-MEM distribution is installed (one
of two; `library_distribution()`): PyPI's `a-mem` (0.2.6, pinned), A THIRD PARTY'S FORK of
the authors' library (DiaaAj/a-mem-mcp; plugins/amem/README.md says what differs), or the
authors' own `agentic-memory` (agiresearch/A-mem), installed from GitHub at a pinned commit.
run_meta.json (plugins[].wraps, notes) and each built memory's metadata say which one ran.

Build (once per conversation), following the authors' LoCoMo evaluation (WujiangXu/
AgenticMemory, test_advanced.py) as closely as the library's API allows:

- a fresh `AgenticMemorySystem` whose LLM controller is A-MEM's own OpenAI controller with
  its client pointed at memorybench's recording endpoint (`LibraryEndpoint`), and whose
  retriever is A-MEM's own `ChromaRetriever` class with two things replaced
  (`retriever_class`): its Chroma client is a persistent folder in the pack
  (`memory/library_stores/amem/<sample_id>/`, telemetry off), and its embedding function,
  chromadb's SentenceTransformerEmbeddingFunction('all-MiniLM-L6-v2'), which would download
  the model from the Hugging Face hub, is `EndpointEmbeddingFunction`, which sends the texts
  to the endpoint (so to embedder=, all-MiniLM-L6-v2 by default: the same model) and gets
  them journaled. Everything else (what is embedded, the search, the metadata) is A-MEM's;
- each turn becomes one note, in order, as in the evaluation: content
  `"Speaker " + speaker + "says : " + text` (its missing space kept verbatim; an image turn's
  text is `[Image: CAPTION] TEXT`, as its loader makes it) and `time=` the session's date
  (`1:56 pm on 8 May, 2023`). The note's id is the turn id (`D1:3`) instead of a random
  uuid4: a rerun sends the same prompts (the writer's response cache answers them) and each
  note names its turn. `add_note` then makes A-MEM's own calls: the analysis (keywords,
  context, tags; the fork's `add_note` makes it, and for the authors' library, whose
  `add_note` does not, the method calls its `analyze_content` first, as the evaluation's
  note class does) and the evolution over the 5 nearest notes (links, neighbours' new
  context and tags). The temperature of these calls is the library's own (fork 1.0,
  authors 0.7), not writer.temperature;
- the notes in the store are the pack's memory items (content, time, context, keywords,
  tags, links), so `show` and the viewer show what A-MEM kept.

Questions: the library's retriever searches the store with the question (`top_k` notes,
by the embedder's vectors, as A-MEM's `find_related_memories_raw` does), and each note is
followed by the notes it links to (at most `top_k` per note; a note already shown is not
repeated), rendered in that method's format (`talk start time:... memory content: ...`).
The evaluation first asks the LLM for keywords of the question and searches with those; we
search with the question itself: memorybench's memory step makes no model call at question
time (a question-time writer call has no place in the pack's cost and audit records), and
that step is the evaluation script's, not the library's. The reader is memorybench's own.

The store folder is removed before a build, so a killed build restarts its conversation
from nothing; a committed conversation is loaded from the pack (`ManagedMethod`) and its
store reopened for search only. No telemetry and no download: chromadb's anonymized
telemetry is off (Settings and ANONYMIZED_TELEMETRY), LiteLLM (which agentic_memory imports)
reads its price map from the package (LITELLM_LOCAL_MODEL_COST_MAP, set before its import),
HF_HUB_OFFLINE is set, and nothing calls nltk.download.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sys
from collections.abc import Iterator
from importlib import metadata as importlib_metadata
from pathlib import Path
from typing import Any, ClassVar

from omegaconf import DictConfig

from memorybench.data.records import AskedQuestion, Conversation, Turn
from memorybench.errors import UserError
from memorybench.memory._managed import Retrieved
from memorybench.memory._writer_calls import WriterCallEstimate, exact
from memorybench.memory.base import BuildContext, BuiltMemory, MemoryItem
from memorybench.memory.library_endpoint import ROLE_PREFIX_CHARS, LibraryEndpoint, fresh_store

METHOD = "amem"
JOINER = "\n"
COLLECTION = "memories"  # A-MEM's own collection name
#: the fields of an A-MEM note the pack shows
NOTE_FIELDS = ("content", "timestamp", "context", "keywords", "tags", "links")
#: the distributions that provide `agentic_memory`: PyPI's fork, the authors' library
FORK, AUTHORS = "a-mem", "agentic-memory"
#: the authors' commit the plugin's `[authors]` extra pins (pyproject.toml)
AUTHORS_COMMIT = "ceffb860f0712bbae97b184d440df62bc910ca8d"
INSTALL = '.venv/bin/pip install -e "plugins/amem[fork]"'
#: the start of the user message of each of A-MEM's calls (its system message is the same
#: "You must respond with a JSON object." for all of them), the same in both libraries
ROLES = {
    "analyze": "Generate a structured analysis of the following content by:",
    "evolve": "You are an AI memory evolution agent responsible for managing and evolving a knowledge base.",
}


# -- which A-MEM ------------------------------------------------------------------------
def installed_distributions() -> dict[str, Any]:
    """{distribution name: Distribution} of the A-MEM distributions installed (metadata only, no import)."""
    found = {}
    for name in (FORK, AUTHORS):
        try:
            found[name] = importlib_metadata.distribution(name)
        except importlib_metadata.PackageNotFoundError:
            continue
    return found


def direct_url(dist: Any) -> dict[str, Any]:
    """A distribution's PEP 610 direct_url.json (where pip installed it from), or {}."""
    try:
        info = json.loads(dist.read_text("direct_url.json") or "{}")
    except ValueError:
        return {}
    return info if isinstance(info, dict) else {}


def _owns(dist: Any, package: Path) -> bool:
    """Whether `dist` installed the folder `package` (its RECORD, or an editable install's source folder)."""
    for file in dist.files or ():
        if file.parts[:1] == ("agentic_memory",) and Path(dist.locate_file(file)).resolve().parent == package:
            return True
    info = direct_url(dist)
    url = str(info.get("url") or "")
    if (info.get("dir_info") or {}).get("editable") and url.startswith("file://"):
        return Path(url[len("file://") :]).resolve() in package.parents
    return False


def library_distribution() -> dict[str, Any]:
    """Which A-MEM Python imports (module `agentic_memory`, found, not imported) and which
    distribution installed it: {distribution, version, commit, fork, label}. A UserError when
    none is installed, or when both are (they install the same folder, so its files are a
    mix of the two)."""
    import importlib.util

    found = installed_distributions()
    spec = importlib.util.find_spec("agentic_memory")
    if spec is None or not found:
        raise UserError(
            f"memory=amem needs A-MEM's library (module agentic_memory); install it with `{INSTALL}` "
            f"(PyPI's a-mem, a fork) or see plugins/amem/README.md for the authors' code"
        )
    package = Path(str(spec.origin)).resolve().parent
    owners = [name for name, dist in found.items() if _owns(dist, package)]
    if len(owners) != 1:
        have = ", ".join(f"{name} {dist.version}" for name, dist in found.items())
        raise UserError(
            f"memory=amem cannot tell which A-MEM distribution installed {package} (installed: {have}); "
            f"both provide the module agentic_memory: keep one (`.venv/bin/pip uninstall -y {FORK} "
            f"{AUTHORS}`, then install one again)"
        )
    name = owners[0]
    version = found[name].version
    commit = (direct_url(found[name]).get("vcs_info") or {}).get("commit_id")
    if name == FORK:
        label = (
            f"PyPI a-mem {version}: a third party's fork of the authors' A-MEM library (DiaaAj/a-mem-mcp), "
            "not the authors' code (agiresearch/A-mem)"
        )
    else:
        label = f"the authors' A-MEM library (agiresearch/A-mem, agentic-memory {version}" + (
            f", commit {commit})" if commit else ", commit unknown: not installed from git)"
        )
    return {"distribution": name, "version": version, "commit": commit, "fork": name == FORK, "label": label}


def import_amem() -> dict[str, Any]:
    """A-MEM's modules, imported with telemetry and remote fetches off (read at import time)."""
    if _AMEM:
        return _AMEM
    if "litellm" in sys.modules and os.environ.get("LITELLM_LOCAL_MODEL_COST_MAP") != "True":
        raise UserError(
            "litellm was imported before memory=amem could make it read its price map from the package "
            "(LITELLM_LOCAL_MODEL_COST_MAP=True); import agentic_memory only through memory=amem"
        )
    os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
    os.environ["ANONYMIZED_TELEMETRY"] = "False"
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    dist = library_distribution()
    try:
        import chromadb
        from agentic_memory import memory_system, retrievers
        from chromadb.config import Settings
    except ImportError as e:
        raise UserError(f"memory=amem: {e}; reinstall the plugin (`{INSTALL}`)") from None
    _AMEM.update(
        {"memory_system": memory_system, "retrievers": retrievers, "chromadb": chromadb, "Settings": Settings, "dist": dist}
    )
    return _AMEM


_AMEM: dict[str, Any] = {}


def chroma_client(store: Path) -> Any:
    """A persistent Chroma client on `store`, telemetry off, no reset."""
    a = import_amem()
    return a["chromadb"].PersistentClient(path=str(store), settings=a["Settings"](anonymized_telemetry=False, allow_reset=False))


# -- embeddings through the endpoint ------------------------------------------------------
def embedding_function_class() -> type:
    """A chromadb EmbeddingFunction that embeds through the recording endpoint (made on
    first use: chromadb is imported only then)."""
    global _EF_CLASS
    if _EF_CLASS is not None:
        return _EF_CLASS
    from chromadb.api.types import Documents, EmbeddingFunction

    class EndpointEmbeddingFunction(EmbeddingFunction[Documents]):
        """`/v1/embeddings` of memorybench's recording endpoint (so the run's embedder=); in
        place of A-MEM's SentenceTransformerEmbeddingFunction('all-MiniLM-L6-v2')."""

        def __init__(self, base_url: str | None = None, api_key: str | None = None) -> None:
            self.base_url, self.api_key = base_url, api_key
            self._client: Any = None

        def __call__(self, input: Documents) -> Any:  # noqa: A002 - chromadb's name
            if self.base_url is None:
                raise RuntimeError("this embedding function is not bound to memorybench's recording endpoint")
            if self._client is None:
                from openai import OpenAI

                self._client = OpenAI(base_url=self.base_url, api_key=self.api_key, max_retries=0, timeout=900)
            import numpy as np

            reply = self._client.embeddings.create(model="memorybench-embedder", input=list(input), encoding_format="float")
            return [np.asarray(row.embedding, dtype=np.float32) for row in sorted(reply.data, key=lambda r: r.index)]

        @staticmethod
        def name() -> str:
            return "memorybench_recording_endpoint"

        def default_space(self) -> Any:
            return "cosine"  # as SentenceTransformerEmbeddingFunction, which A-MEM uses

        def get_config(self) -> dict[str, Any]:
            return {"model": "memorybench-embedder"}  # no URL, no key: they change every run

        @staticmethod
        def build_from_config(config: dict[str, Any]) -> Any:
            return EndpointEmbeddingFunction()  # unbound: the plugin binds its own

    _EF_CLASS = EndpointEmbeddingFunction
    return _EF_CLASS


_EF_CLASS: type | None = None


def retriever_class(base: type, store: Path, embedding_function: Any, *, fresh_after_first: bool) -> type:
    """A-MEM's ChromaRetriever (`base`, the installed library's) with its client and
    embedding function replaced: a persistent Chroma folder `store` (telemetry off) and
    `embedding_function`, whatever arguments the library passes (its default path
    ./chroma_db and model name are ignored). With `fresh_after_first`, every construction
    after the first empties the collection: the authors' `consolidate_memories` makes a new
    retriever to re-add every note to (the fork never does)."""

    class EndpointChromaRetriever(base):  # type: ignore[misc, valid-type]
        constructed = 0

        def __init__(self, collection_name: str = COLLECTION, *args: Any, **kwargs: Any) -> None:
            cls = type(self)
            cls.constructed += 1
            self.persist_directory = str(store)
            self.client = chroma_client(store)
            self.embedding_function = embedding_function
            if fresh_after_first and cls.constructed > 1:
                with contextlib.suppress(Exception):  # not there yet
                    self.client.delete_collection(collection_name)
            self.collection = self.client.get_or_create_collection(name=collection_name, embedding_function=embedding_function)

    return EndpointChromaRetriever


@contextlib.contextmanager
def swapped(module: Any, name: str, value: Any) -> Iterator[None]:
    """`module.name` is `value` inside the block (A-MEM constructs its retriever by that name)."""
    before = getattr(module, name)
    setattr(module, name, value)
    try:
        yield
    finally:
        setattr(module, name, before)


class AMemEndpoint(LibraryEndpoint):
    """The recording endpoint, its calls labelled by the user message: A-MEM puts its prompt
    in the user message under a system message that is the same for every call."""

    def role_of(self, messages: list[dict[str, str]], *args: Any, **kwargs: Any) -> str:
        role = super().role_of(messages, *args, **kwargs)
        if role in self.roles:
            return role
        user = next((m["content"] for m in messages if m.get("role") == "user"), "")
        head = " ".join(user.split())[:ROLE_PREFIX_CHARS]
        for name, prefix in self.roles.items():
            if head and head.startswith(prefix[: len(head)]) and prefix.startswith(head[: len(prefix)]):
                return name
        return role


def note_content(turn: Turn) -> str:
    """A turn as the authors' evaluation adds it (its loader puts an image's caption first)."""
    text = (
        f"[Image: {turn.blip_caption}] {turn.text}"
        if turn.blip_caption and turn.text
        else (f"[Image: {turn.blip_caption}]" if turn.blip_caption else turn.text)
    )
    return "Speaker " + turn.speaker + "says : " + text


def decoded(metadata: dict[str, Any] | None) -> dict[str, Any]:
    """A note's Chroma metadata with its JSON-encoded lists decoded (A-MEM stores lists as JSON)."""
    out = {}
    for key, value in (metadata or {}).items():
        if isinstance(value, str) and value[:1] in "[{":
            try:
                value = json.loads(value)
            except ValueError:
                pass
        out[key] = value
    return out


def render_note(note: dict[str, Any]) -> str:
    """A note as A-MEM's find_related_memories_raw shows it to the answering model."""
    return (
        f"talk start time:{note.get('timestamp', '')}\tmemory content: {note.get('content', '')}\t"
        f"memory context: {note.get('context', '')}\tmemory keywords: {_listed(note.get('keywords'))}\t"
        f"memory tags: {_listed(note.get('tags'))}"
    )


def item_text(note: dict[str, Any]) -> str:
    """A note as the pack's memory item: as the reader sees it, plus the notes it links to."""
    links = note.get("links") or []
    return render_note(note) + (f"\tlinks: {_listed(links)}" if links else "")


def _listed(value: Any) -> str:
    return str(list(value)) if isinstance(value, (list, tuple)) else str(value if value is not None else [])


class _PromptRecorder:
    """An LLM controller that records the prompt it is given and answers `{}`."""

    def __init__(self) -> None:
        self.prompts: list[str] = []

    def get_completion(self, prompt: str, *args: Any, **kwargs: Any) -> str:
        self.prompts.append(prompt)
        return "{}"


class _NoRetriever:
    """A retriever that holds nothing (for reading the library's prompts without a store)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.client = self

    def reset(self) -> None:
        pass

    def count(self) -> int:
        return 0


def library_prompts_text() -> str:
    """A-MEM's two prompts as the installed library writes them: the analysis with an empty
    content, the evolution template with its fields unfilled."""
    a = import_amem()
    ms = a["memory_system"]
    with swapped(ms, "ChromaRetriever", _NoRetriever):
        system = ms.AgenticMemorySystem(model_name="all-MiniLM-L6-v2", llm_backend="openai", llm_model="none", api_key="unused")
    recorder = _PromptRecorder()
    system.llm_controller = type("Controller", (), {"llm": recorder})()
    system.analyze_content("")
    dist = a["dist"]
    head = f"# A-MEM's prompts, as {dist['distribution']} {dist['version']} writes them ({dist['label']})\n"
    return (
        head
        + "\n## analysis (user message; the content follows)\n"
        + recorder.prompts[0].rstrip()
        + "\n\n## evolution (user message; fields in braces)\n"
        + system._evolution_system_prompt.rstrip()
        + "\n"
    )


def chroma_store_text() -> tuple[str, str]:
    """(chromadb's version, the SQL text it writes into every store's chroma.sqlite3: its
    migrations and schema), read from an empty store made in a temporary folder.

    Not a prompt: verify scans the stores in the pack for gold strings, and this fixed text of
    the library is in every one of them; its comment "remains untouched" held LoCoMo's gold
    "touched" (conv-42) and was reported as a leak into conv-26's store. As a file of the
    pack's prompts/ it is read as the library's own words."""
    import sqlite3
    import tempfile

    import chromadb

    with tempfile.TemporaryDirectory(prefix="mb-amem-chroma-") as tmp:
        client = chroma_client(Path(tmp))
        client.heartbeat()
        with contextlib.closing(sqlite3.connect(Path(tmp) / "chroma.sqlite3")) as db:
            migrations = list(db.execute("SELECT dir, version, filename, sql FROM migrations ORDER BY dir, version"))
            schema = [row for row in db.execute("SELECT name, sql FROM sqlite_master WHERE sql IS NOT NULL ORDER BY name")]
    parts = [
        f"# Not a prompt: the SQL text chromadb {chromadb.__version__} writes into every store's chroma.sqlite3 "
        "(its migrations table and schema), a fixed text of the library, never sent to a model.\n"
    ]
    parts += [f"\n-- migration {d}/{v:05d} {name}\n{sql.rstrip()}\n" for d, v, name, sql in migrations]
    parts += [f"\n-- schema {name}\n{sql.rstrip()}\n" for name, sql in schema]
    return str(chromadb.__version__), "".join(parts)


# -- the method ---------------------------------------------------------------------------
class AMem:
    name: ClassVar[str] = METHOD
    question_dependent: ClassVar[bool] = True
    software_only: ClassVar[bool] = False
    uses_writer: ClassVar[bool] = True
    uses_embedder: ClassVar[bool] = True
    writer_templates: ClassVar[dict[str, frozenset[str]]] = {}

    def __init__(self, cfg: DictConfig) -> None:
        node = cfg.memory
        self.top_k = int(node.top_k)
        self.max_notes = int(node.max_notes) if node.get("max_notes") is not None else None
        self.json_max_items, self.json_max_chars = int(node.json_max_items), int(node.json_max_chars)
        for key, value in (("top_k", self.top_k), ("max_notes", self.max_notes)):
            if value is not None and value < 1:
                raise UserError(f"memory=amem: memory.{key}={value} must be at least 1")
        self._endpoint: AMemEndpoint | None = None

    @classmethod
    def writer_calls(cls, conversation: Conversation, cfg: DictConfig) -> WriterCallEstimate:
        """One note per turn (at most `max_notes`), each with two calls: the analysis (keywords,
        context, tags) and the evolution over its nearest notes, which A-MEM skips for the first
        note (its store is empty: `process_memory`). So 2N-1 calls for N notes, exact. Its
        prompts are A-MEM's own (not counted here)."""
        notes = sum(len(s.turns) for s in conversation.sessions)
        if cfg.memory.get("max_notes") is not None:
            notes = min(notes, int(cfg.memory.max_notes))
        return WriterCallEstimate(tasks=[exact("analysis", notes), exact("evolution", max(0, notes - 1))], uncounted=None)

    @classmethod
    def check(cls, cfg: DictConfig) -> None:
        library_distribution()  # one A-MEM is installed, before any model call

    @classmethod
    def run_notes(cls, cfg: DictConfig) -> list[str]:
        dist = library_distribution()
        notes = [
            f"memory=amem ran {dist['label']}; its model and embedding calls went through memorybench's recording "
            "endpoint to writer= and embedder=; questions search the notes with the question itself (the authors' "
            "evaluation first rewrites it into keywords with an LLM call)"
        ]
        if cfg.memory.get("max_notes") is not None:  # memory.max_sessions has its note for every method
            notes.append(f"memory.max_notes={cfg.memory.max_notes}: only a prefix of each conversation was built")
        return notes

    @classmethod
    def library_prompts(cls, cfg: DictConfig) -> dict[str, str]:
        """A-MEM's prompts from the installed library, and the SQL text chromadb writes into
        every store (`chroma_store_text`): files of the pack's prompts/, so verify reads
        their words as the libraries' fixed text, not as leaked gold."""
        dist = library_distribution()
        version, text = chroma_store_text()
        return {
            f"library/{METHOD}/{dist['distribution']}-{dist['version']}_prompts.txt": library_prompts_text(),
            f"library/{METHOD}/chromadb-{version}_store_schema.txt": text,
        }

    # -- the endpoint and the library --------------------------------------------------
    def endpoint(self, ctx: BuildContext) -> AMemEndpoint:
        if self._endpoint is None:
            import_amem()
            # A-MEM reports its failures in log records of agentic_memory ("Error in memory
            # evolution: ...") and by printing ("Error analyzing content: ..."): each counts its task
            self._endpoint = AMemEndpoint(
                ctx,
                method=METHOD,
                roles=ROLES,
                max_items=self.json_max_items,
                max_chars=self.json_max_chars,
                loggers={"agentic_memory": logging.WARNING},
                prints=True,
            ).__enter__()
        return self._endpoint

    def embedding_function(self, ctx: BuildContext) -> Any:
        endpoint = self.endpoint(ctx)
        return embedding_function_class()(endpoint.base_url, endpoint.api_key)

    def open_system(self, ctx: BuildContext, store: Path) -> tuple[Any, type]:
        """A fresh AgenticMemorySystem on `store`, its LLM client pointed at the endpoint;
        and the retriever class its module must keep constructing while it is used."""
        endpoint = self.endpoint(ctx)
        a = import_amem()
        ms = a["memory_system"]
        retriever = retriever_class(ms.ChromaRetriever, store, self.embedding_function(ctx), fresh_after_first=True)
        with swapped(ms, "ChromaRetriever", retriever):
            system = ms.AgenticMemorySystem(
                model_name="all-MiniLM-L6-v2", llm_backend="openai", llm_model="memorybench-writer", api_key=endpoint.api_key
            )
        from openai import OpenAI

        llm = system.llm_controller.llm
        if not hasattr(llm, "client"):
            raise UserError(
                f"memory=amem: A-MEM's LLM controller {type(llm).__name__} has no OpenAI client to point at "
                "memorybench's recording endpoint; this A-MEM version is not supported"
            )
        llm.client = OpenAI(
            base_url=endpoint.base_url,
            api_key=endpoint.api_key,
            max_retries=0,
            timeout=float(ctx.writer.node.get("timeout_s") or 900),
        )
        if not str(llm.client.base_url).startswith(endpoint.base_url):
            raise UserError(f"A-MEM's LLM calls {llm.client.base_url}, not memorybench's recording endpoint")
        return system, retriever

    def open_retriever(self, ctx: BuildContext, store: Path) -> Any:
        """A committed store's retriever, for search only (no AgenticMemorySystem: no model)."""
        a = import_amem()
        cls = retriever_class(a["retrievers"].ChromaRetriever, store, self.embedding_function(ctx), fresh_after_first=False)
        return cls(COLLECTION)

    # -- build -------------------------------------------------------------------------
    def turns(self, conversation: Conversation) -> list[tuple[Any, Turn]]:
        # the first memory.max_sessions sessions when set (ManagedMethod cut the conversation)
        out = [(session, turn) for session in conversation.sessions for turn in session.turns]
        return out[: self.max_notes] if self.max_notes else out

    def build(self, conversation: Conversation, ctx: BuildContext) -> BuiltMemory:
        sid = conversation.sample_id
        relstore, store = fresh_store(ctx, METHOD, sid)  # a killed build restarts its conversation from nothing
        endpoint = self.endpoint(ctx)
        a = import_amem()
        dist = a["dist"]
        turns = self.turns(conversation)
        order: list[str] = []
        sources: dict[str, str] = {}
        with endpoint.scope(sid):
            system, retriever = self.open_system(ctx, store)
            with swapped(a["memory_system"], "ChromaRetriever", retriever):
                for session, turn in turns:
                    content = note_content(turn)
                    note_id = turn.dia_id if turn.dia_id not in sources else f"{turn.dia_id}#{len(order)}"
                    extra: dict[str, Any] = {}
                    if not dist["fork"]:  # the authors' add_note does not analyse; their evaluation's note does
                        analysis = system.analyze_content(content)
                        extra = {
                            "keywords": analysis.get("keywords") or None,
                            "context": analysis.get("context") or None,
                            "tags": analysis.get("tags") or None,
                        }
                    made = system.add_note(content, time=session.date_time, id=note_id, **extra)
                    order.append(str(made))
                    sources[str(made)] = turn.dia_id
            notes = self.notes(system)
        items = [MemoryItem(nid, item_text(notes[nid]), (sources[nid],)) for nid in order if nid in notes]
        built = BuiltMemory(sid, items, state={"store": relstore, "order": order})
        built.runtime["retriever"] = system.retriever
        sessions = len({s.index for s, _ in turns})
        built.metadata["library"] = {
            **dist,
            "class": "agentic_memory.memory_system.AgenticMemorySystem",
            "vector_store": "chromadb (persistent folder; embeddings through the recording endpoint)",
            "store": relstore,
            "notes": len(items),
            "notes_added": len(order),
            "evolutions": int(getattr(system, "evo_cnt", 0)),
            "links": sum(len(notes[n].get("links") or []) for n in notes),
            "turns": len(turns),
            "sessions_built": sessions,
            "endpoint_rows": dict(endpoint.rows),
            "refused": len(endpoint.proxy.refused),
        }
        if endpoint.json_bounds:
            built.metadata["library"]["json_bounds"] = dict(endpoint.json_bounds)
        return built

    @staticmethod
    def notes(system: Any) -> dict[str, dict[str, Any]]:
        """Every note A-MEM holds: id -> its fields (content, timestamp, context, keywords,
        tags, links). The fork keeps them in its Chroma store (its source of truth); the
        authors' library in its `memories` dict, where evolution changes a neighbour's
        context and tags without writing them to the store until its consolidate_memories."""
        held = getattr(system, "memories", None)
        if isinstance(held, dict):
            return {str(nid): {k: getattr(note, k, None) for k in NOTE_FIELDS} for nid, note in held.items()}
        got = system.retriever.collection.get(include=["metadatas"])
        return {str(i): decoded(m) for i, m in zip(got["ids"], got["metadatas"])}

    # -- questions ---------------------------------------------------------------------
    def retrieve(self, built: BuiltMemory, asked: AskedQuestion, ctx: BuildContext) -> Retrieved:
        endpoint = self.endpoint(ctx)
        with endpoint.scope(asked.sample_id, asked.question_id):
            retriever = built.runtime.get("retriever")
            if retriever is None:  # a resumed run: the committed store, reopened for search
                retriever = built.runtime["retriever"] = self.open_retriever(ctx, ctx.pack.path(built.state["store"]))
            count = retriever.collection.count()
            found = retriever.search(asked.question, min(self.top_k, count)) if count else {"ids": [[]]}
        ids = [str(i) for i in (found.get("ids") or [[]])[0]]
        metas = [decoded(m) for m in ((found.get("metadatas") or [[]])[0] or [])]
        distances = list((found.get("distances") or [[]])[0] or [])
        shown: set[str] = set(ids)
        texts: list[str] = []
        hits: list[dict[str, Any]] = []
        for n, (nid, meta) in enumerate(zip(ids, metas)):
            distance = float(distances[n]) if n < len(distances) else None
            texts.append(render_note(meta))
            # Chroma's cosine distance (the space of A-MEM's embedding function); score = 1 - distance
            hits.append(
                {
                    "item_id": nid,
                    "score": round(1.0 - distance, 6) if distance is not None else None,
                    "distance": round(distance, 6) if distance is not None else None,
                }
            )
            links = [str(link) for link in (meta.get("links") or []) if str(link) not in shown][: self.top_k]
            if not links:
                continue
            got = retriever.collection.get(ids=links, include=["metadatas"])
            linked = {str(i): decoded(m) for i, m in zip(got["ids"], got["metadatas"])}
            for link in links:
                if link in linked and link not in shown:
                    shown.add(link)
                    texts.append(render_note(linked[link]))
                    hits.append({"item_id": link, "score": None, "linked_from": nid})
        return Retrieved(
            texts=texts,
            hits=hits,
            render=lambda keep: JOINER.join(texts[n] for n in keep),
            extra={"joiner": JOINER, "query": "question"},
        )

    def for_question(self, built: BuiltMemory, asked: AskedQuestion, ctx: BuildContext) -> str:
        retrieved = self.retrieve(built, asked, ctx)
        return retrieved.render(list(range(len(retrieved.texts))))
