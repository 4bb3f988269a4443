"""`graphiti`: Graphiti's own pipeline, its calls recorded, its graph store in the pack.

Build (once per conversation): a fresh `graphiti_core.Graphiti` whose LLM client is
Graphiti's `OpenAIGenericClient` (chat completions with a `json_schema` response format)
and whose embedder is its `OpenAIEmbedder`, both pointed at memorybench's recording
endpoint (`LibraryEndpoint`), and whose graph driver is, by `memory.backend`:

- `falkordb` (the default): Graphiti's `FalkorDriver` on a FalkorDB server of the
  conversation's own (FalkorDB-lite's binaries, `mb_graphiti._falkordb`: a unix socket in a
  temporary folder); when the conversation is built its graph is saved (SAVE) as
  `memory/library_stores/graphiti/<sample_id>/dump.rdb`, and a resumed run starts a server
  on a copy of that file to search it;
- `kuzu`: the embedded `KuzuDriver` on `memory/library_stores/graphiti/<sample_id>/graph.kuzu`
  (kept while Kùzu installs: it has had no release since 0.11.3).

Each conversation has a store of its own, so every episode goes to Graphiti's default
partition (`group_id` left unset: graphiti-core 0.31.2's Kùzu driver fails on an explicit
one, `'KuzuDriver' object has no attribute '_database'`). One store is open at a time:
opening the next conversation's closes the last (its FalkorDB server stops). Each message is
an episode of its own (`turns_per_episode` turns
joined), `SPEAKER: text` with the session's date as its reference time, added in file
order with `add_episode`: Graphiti extracts entities and facts, resolves duplicates
against the graph, dates facts and invalidates contradicted ones, all with its own prompts.
Each call is labelled by the reply model Graphiti asks for (`graphiti:ExtractedEntities`,
`graphiti:ExtractedEdges`, `graphiti:NodeResolutions`, ...).

Questions: Graphiti's hybrid search (`search_`: BM25 and cosine similarity fused by RRF)
over facts (`edge_limit`) and entities (`node_limit`) of the conversation's partition. The
reader sees the facts with their valid-from/to dates, then the entities with the
summaries Graphiti keeps: the shape of the context Zep hands an agent. Graphiti's
cross-encoder rerankers are not used: they need log-probabilities, which the recording
endpoint does not forward (docs/systems/graphiti.md says what that changes).

The store folder is removed before a build, so a killed build restarts its conversation
cleanly; a committed conversation is loaded from the pack and its store reopened for
search only. Telemetry is off before graphiti is imported (GRAPHITI_TELEMETRY_ENABLED=false).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import logging
import warnings
from importlib.metadata import version
from datetime import datetime, timedelta, timezone
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from omegaconf import DictConfig

from memorybench.data.records import AskedQuestion, Conversation, Session
from memorybench.errors import ModelCallError, UserError
from memorybench.memory._managed import Retrieved
from memorybench.memory._writer_calls import WriterCallEstimate, expected
from memorybench.memory.base import BuildContext, BuiltMemory, MemoryItem
from memorybench.memory.library_endpoint import LibraryEndpoint, fresh_store

METHOD = "graphiti"
JOINER = "\n"
#: a LoCoMo session date: "1:56 pm on 8 May, 2023"
LOCOMO_DATE = "%I:%M %p on %d %B, %Y"
#: the session dates each benchmark writes: LoCoMo's (and LoCoMo-Plus's), LongMemEval's "2023/05/11 (Thu) 17:50"
SESSION_DATES = (LOCOMO_DATE, "%Y/%m/%d (%a) %H:%M")
#: Graphiti's prompts are long (instructions, the previous episodes, the graph's candidates):
#: the embedded writer's context is sized to hold the longest one seen in Graphiti 0.31
PROMPT_TOKENS = 6144
#: `memory.backend`: the graph stores Graphiti runs on here (kuzu while it installs)
BACKENDS = ("falkordb", "kuzu")
#: the FalkorDB graph (a redis key) each conversation's server holds
FALKOR_GRAPH = "graphiti"


def import_graphiti() -> dict[str, Any]:
    """Graphiti's classes, imported with telemetry off (it reads the switch when it sends)."""
    os.environ["GRAPHITI_TELEMETRY_ENABLED"] = "false"
    try:
        from graphiti_core import Graphiti
        from graphiti_core.cross_encoder.openai_reranker_client import OpenAIRerankerClient
        from graphiti_core.edges import EntityEdge
        from graphiti_core.helpers import get_default_group_id
        from graphiti_core.embedder.openai import OpenAIEmbedder, OpenAIEmbedderConfig
        from graphiti_core.llm_client.config import LLMConfig
        from graphiti_core.llm_client.openai_generic_client import OpenAIGenericClient
        from graphiti_core.nodes import EntityNode, EpisodeType
        from graphiti_core.search.search_config_recipes import COMBINED_HYBRID_SEARCH_RRF
        from graphiti_core.telemetry import telemetry
    except ImportError as e:
        raise UserError(f"memory=graphiti needs graphiti-core: {e}; install it with `bash plugins/graphiti/install.sh`") from None
    if telemetry.is_telemetry_enabled():
        raise UserError("graphiti's telemetry is on (GRAPHITI_TELEMETRY_ENABLED); import graphiti only through memory=graphiti")
    return {
        "version": version("graphiti-core"),
        "Graphiti": Graphiti,
        "OpenAIGenericClient": OpenAIGenericClient,
        "LLMConfig": LLMConfig,
        "OpenAIEmbedder": OpenAIEmbedder,
        "OpenAIEmbedderConfig": OpenAIEmbedderConfig,
        "OpenAIRerankerClient": OpenAIRerankerClient,
        "EntityEdge": EntityEdge,
        "EntityNode": EntityNode,
        "EpisodeType": EpisodeType,
        "COMBINED_HYBRID_SEARCH_RRF": COMBINED_HYBRID_SEARCH_RRF,
        "default_group": get_default_group_id,
    }


def import_driver(backend: str) -> Any:
    """Graphiti's driver class for `backend` (FalkorDB's needs the falkordb client, Kùzu's kuzu)."""
    import_graphiti()
    try:
        if backend == "kuzu":
            from graphiti_core.driver.kuzu_driver import KuzuDriver

            return KuzuDriver
        from graphiti_core.driver.falkordb_driver import FalkorDriver

        return FalkorDriver
    except ImportError as e:
        raise UserError(
            f"memory=graphiti's backend {backend} needs {e.name or e}: install it with `bash plugins/graphiti/install.sh`"
        ) from None


@dataclass
class OpenStore:
    """The graph store open now: its Graphiti, and FalkorDB's server (None on Kùzu)."""

    path: Path
    graph: Any
    server: Any = None


def session_time(session: Session) -> datetime:
    """A session's date as Graphiti's reference time (UTC), in any benchmark's form
    (`SESSION_DATES`); a date in none of them is refused, never guessed."""
    for form in SESSION_DATES:
        try:
            return datetime.strptime(session.date_time.strip(), form).replace(tzinfo=timezone.utc)
        except ValueError:
            continue
    raise UserError(
        f"memory=graphiti: session {session.index}'s date {session.date_time!r} is not of the form "
        "'1:56 pm on 8 May, 2023' (LoCoMo) or '2023/05/11 (Thu) 17:50' (LongMemEval); Graphiti needs each "
        "episode's time"
    )


class GraphitiMemory:
    name: ClassVar[str] = METHOD
    question_dependent: ClassVar[bool] = True
    software_only: ClassVar[bool] = False
    uses_writer: ClassVar[bool] = True
    uses_embedder: ClassVar[bool] = True
    writer_templates: ClassVar[dict[str, frozenset[str]]] = {}
    #: the longest writer prompt Graphiti makes: `plan` refuses a local writer whose context
    #: cannot hold it with the reply, naming the writer
    WRITER_PROMPT_TOKENS: ClassVar[int] = PROMPT_TOKENS
    WRITER_PROMPT_NOTE: ClassVar[str] = "Graphiti's longest prompt (instructions, the previous episodes, the graph's candidates)"

    #: writer calls per episode, as Graphiti 0.31 made them on the embedded writer (conv-26, the
    #: first 3 episodes: 21 calls, 3 entity and 3 fact extractions, 11 fact datings, 1 duplicate
    #: check, 1 resolution, 2 summary updates; docs/graphiti.md)
    CALLS_PER_EPISODE: ClassVar[float] = 7.0
    WRITER_CALLS_BASIS: ClassVar[str] = (
        "graphiti: 21 calls over the first 3 episodes of conv-26, writer=local (SmolLM2-135M), Graphiti's own "
        "retries of replies it could not parse included (docs/graphiti.md)"
    )

    @classmethod
    def writer_calls(cls, conversation: Conversation, cfg: DictConfig) -> WriterCallEstimate:
        """Graphiti's calls per episode depend on what it extracts (a dating and a resolution
        per fact, a summary per entity): CALLS_PER_EPISODE per episode (measured), at least its
        two extractions (entities, facts). Episodes: `turns_per_episode` turns each, at most
        `max_episodes`."""
        node = cfg.memory
        per = max(1, int(node.turns_per_episode))
        episodes = sum(-(-len(s.turns) // per) for s in conversation.sessions)  # ceil: the last episode may be short
        if node.get("max_episodes") is not None:
            episodes = min(episodes, int(node.max_episodes))
        calls = expected("add_episode", episodes, cls.CALLS_PER_EPISODE, "calls per episode", low=2 * episodes, high=None)
        # Graphiti's retries are in the measured rate (the endpoint asks no repair of its own)
        return WriterCallEstimate(tasks=[calls], basis=cls.WRITER_CALLS_BASIS, uncounted=None)

    def __init__(self, cfg: DictConfig) -> None:
        node = cfg.memory
        self.edge_limit, self.node_limit = int(node.edge_limit), int(node.node_limit)
        self.turns_per_episode = int(node.turns_per_episode)
        self.max_episodes = int(node.max_episodes) if node.get("max_episodes") is not None else None
        self.json_max_items, self.json_max_chars = int(node.json_max_items), int(node.json_max_chars)
        self.backend = self.backend_of(cfg)
        counts = {"edge_limit": self.edge_limit, "turns_per_episode": self.turns_per_episode, "max_episodes": self.max_episodes}
        bad = {k: v for k, v in counts.items() if v is not None and v < 1}
        if bad or self.node_limit < 0:
            raise UserError(
                f"memory=graphiti: {bad or {'node_limit': self.node_limit}}: each must be at least 1 (node_limit at least 0)"
            )
        self._endpoint: LibraryEndpoint | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        #: the one store open now (a conversation's; opening another closes it)
        self._open: OpenStore | None = None
        self._closing_ctx: BuildContext | None = None
        from memorybench.benchmark import benchmark_of

        dataset = cfg.get("dataset")
        #: how an episode's source is described to Graphiti ("LoCoMo conversation")
        self.source = f"{benchmark_of(str(dataset.name) if dataset is not None else None).title} conversation"

    @staticmethod
    def backend_of(cfg: DictConfig) -> str:
        backend = str(cfg.memory.get("backend") or "falkordb")
        if backend not in BACKENDS:
            raise UserError(f"memory.backend={backend!r}: memory=graphiti runs on {' or '.join(BACKENDS)}")
        return backend

    @classmethod
    def check(cls, cfg: DictConfig) -> None:
        cls.backend_of(cfg)

    @classmethod
    def run_notes(cls, cfg: DictConfig) -> list[str]:
        store = (
            "embedded Kuzu"
            if cls.backend_of(cfg) == "kuzu"
            else "FalkorDB (FalkorDB-lite's server binaries under Debian 13's glibc, one server per conversation)"
        )
        notes = [
            f"memory=graphiti runs Graphiti (graphiti-core, Zep's open-source engine) on {store}, not a clone; its "
            "model and embedding calls went through memorybench's recording endpoint to writer= and embedder=; "
            "search is hybrid with RRF (no cross-encoder reranking)"
        ]
        if cfg.memory.get("max_episodes") is not None:  # memory.max_sessions has its note for every method
            notes.append(f"memory.max_episodes={cfg.memory.max_episodes}: only a prefix of each conversation was built")
        return notes

    @classmethod
    def library_prompts(cls, cfg: DictConfig) -> dict[str, str]:
        """Graphiti's prompts as the installed library writes them, each rendered with empty
        fields: one prompt file of the pack (`prompts/library/graphiti/graphiti-core-<version>_prompts.txt`),
        so verify reads their worked examples ("Jordan", "Denver", ...) as instructions; and
        the text every store of the backend holds, a constant of the store: on Kùzu the English
        stopword list its full-text index writes into every database (it holds "four", "nine":
        gold answers elsewhere in LoCoMo), on FalkorDB the words of an empty graph's dump.rdb
        (Graphiti's schema, its full-text indexes' stopwords)."""
        g = import_graphiti()
        prompts = {f"library/{METHOD}/graphiti-core-{g['version']}_prompts.txt": render_prompt_library()}
        if cls.backend_of(cfg) == "kuzu":
            prompts[f"library/{METHOD}/kuzu-{version('kuzu')}_fts_stopwords.txt"] = kuzu_stopwords()
        else:
            module, words = falkordb_store_words()
            prompts[f"library/{METHOD}/falkordb-{module}_empty_store.txt"] = words
        return prompts

    # -- the endpoint, the event loop and the library ------------------------------------
    def endpoint(self, ctx: BuildContext) -> LibraryEndpoint:
        if self._endpoint is None:
            import_graphiti()
            # Graphiti's own failures (a reply its strict json.loads refused, a retry, an edge it
            # could not date) are log records of graphiti_core: each counts its task as failed
            self._endpoint = endpoint = LibraryEndpoint(
                ctx,
                method=METHOD,
                max_items=self.json_max_items,
                max_chars=self.json_max_chars,
                loggers={"graphiti_core": logging.WARNING},
            ).__enter__()
            ctx.closers.append(lambda: endpoint.__exit__(None, None, None))
        return self._endpoint

    def run(self, coroutine: Any) -> Any:
        """Run one of Graphiti's coroutines to its end on this method's own event loop (its
        HTTP clients stay bound to one loop for the whole run)."""
        if self._loop is None:
            self._loop = asyncio.new_event_loop()
        return self._loop.run_until_complete(coroutine)

    def size_local_writer(self, ctx: BuildContext) -> None:
        writer = ctx.writer
        if writer is not None and writer.is_local and writer._endpoint is None:
            writer.longest_prompt_tokens = max(writer.longest_prompt_tokens, PROMPT_TOKENS)

    def open_graph(self, ctx: BuildContext, store: Path, *, fresh: bool) -> Any:
        """Graphiti on the conversation's store: a new one (`fresh`, the store folder empty) or
        a committed one, for search. The store open before it is closed first."""
        self.close_store()
        if self._closing_ctx is not ctx:  # closed before the pack is finished (_SUCCESS records its bytes)
            self._closing_ctx = ctx
            ctx.closers.append(self.close_store)
        endpoint = self.endpoint(ctx)
        g = import_graphiti()
        driver_class = import_driver(self.backend)
        dims = ctx.embedder.dim or int(endpoint.in_worker(ctx.embedder.embed, ["dimension probe"]).shape[1])
        writer = ctx.writer.node
        llm = g["OpenAIGenericClient"](
            config=g["LLMConfig"](
                api_key=endpoint.api_key,
                base_url=endpoint.base_url,
                model="memorybench-writer",
                small_model="memorybench-writer",
                temperature=float(writer.temperature),
                max_tokens=int(writer.max_tokens),
            ),
            max_tokens=int(writer.max_tokens),
        )
        embedder = g["OpenAIEmbedder"](
            g["OpenAIEmbedderConfig"](
                api_key=endpoint.api_key, base_url=endpoint.base_url, embedding_model="memorybench-embedder", embedding_dim=dims
            )
        )
        # never used by the RRF search; given so that Graphiti does not make its own OpenAI client
        reranker = g["OpenAIRerankerClient"](
            config=g["LLMConfig"](api_key=endpoint.api_key, base_url=endpoint.base_url, model="memorybench-writer")
        )
        server = None
        if self.backend == "kuzu":
            with warnings.catch_warnings():  # "the Kuzu backend is deprecated": said once, in docs/systems/graphiti.md
                warnings.simplefilter("ignore", DeprecationWarning)
                driver = driver_class(db=str(store / "graph.kuzu"))
        else:
            from falkordb.asyncio import FalkorDB

            from mb_graphiti._falkordb import FalkorServer

            # a build's server keeps its data in the store folder (SAVE writes dump.rdb there); a
            # committed store is searched on a copy of its dump.rdb
            server = FalkorServer(store, read_only=not fresh).start()
            try:
                driver = driver_class(falkor_db=FalkorDB(unix_socket_path=server.socket), database=FALKOR_GRAPH)
            except BaseException:
                server.stop()
                raise
        graph = g["Graphiti"](graph_driver=driver, llm_client=llm, embedder=embedder, cross_encoder=reranker, max_coroutines=1)
        # from here on close_store closes it (a FalkorDB server stops, on an error too)
        self._open = OpenStore(Path(store), graph, server)
        for part, client in (("llm", llm.client), ("embedder", embedder.client), ("reranker", reranker.client)):
            if not str(client.base_url).startswith(endpoint.base_url):
                raise UserError(f"graphiti's {part} calls {client.base_url}, not memorybench's recording endpoint")
        if fresh:
            # Graphiti.build_indices_and_constraints is a no-op on Kùzu in 0.31.2 (the driver's
            # own method passes); its graph operations hold the full-text indexes search needs.
            # On FalkorDB: its range and full-text indexes (with Graphiti's stopwords)
            self.run(driver.graph_ops.build_indices_and_constraints(driver))
        return graph

    def close_store(self) -> None:
        """Close the open store (idempotent), before the pack is finished (_SUCCESS records the
        store's bytes): Kùzu folds its write-ahead log into the database file on close;
        FalkorDB's client disconnects and its server stops without saving (the build saved)."""
        open_store, self._open = self._open, None
        if open_store is None:
            return
        try:
            if open_store.server is None:
                close_graph(open_store.graph)
            else:
                with contextlib.suppress(Exception):  # the server stops whatever the client says
                    self.run(open_store.graph.driver.close())
        finally:
            if open_store.server is not None:
                open_store.server.stop()

    def graph_of(self, ctx: BuildContext, store: Path) -> Any:
        """The Graphiti of a committed store: the open one, else reopened for search."""
        if self._open is not None and self._open.path == Path(store):
            return self._open.graph
        return self.open_graph(ctx, store, fresh=False)

    # -- build -------------------------------------------------------------------------
    def episodes(self, conversation: Conversation) -> list[tuple[Session, tuple[Any, ...]]]:
        # the first memory.max_sessions sessions when set (ManagedMethod cut the conversation)
        out = [
            (s, s.turns[i : i + self.turns_per_episode])
            for s in conversation.sessions
            for i in range(0, len(s.turns), self.turns_per_episode)
        ]
        return out[: self.max_episodes] if self.max_episodes else out

    def build(self, conversation: Conversation, ctx: BuildContext) -> BuiltMemory:
        sid = conversation.sample_id
        relstore, store = fresh_store(ctx, METHOD, sid)  # a killed build restarts its conversation from nothing
        endpoint = self.endpoint(ctx)
        g = import_graphiti()
        episodes = self.episodes(conversation)
        self.size_local_writer(ctx)
        dia_of: dict[str, tuple[str, ...]] = {}
        with endpoint.scope(sid), library_log(ctx.pack.path(f"memory/{METHOD}/graphiti.log")):
            graph = self.open_graph(ctx, store, fresh=True)
            for n, (session, turns) in enumerate(episodes):
                # turns of one session share its date; a second apart keeps them in file order
                when = session_time(session) + timedelta(seconds=n)
                try:
                    result = self.run(
                        graph.add_episode(
                            name=",".join(t.dia_id for t in turns),
                            episode_body="\n".join(t.render() for t in turns),
                            source_description=f"{self.source}, session {session.index}",
                            reference_time=when,
                            source=g["EpisodeType"].message,
                        )
                    )
                except (UserError, ModelCallError):
                    raise
                except Exception as e:  # noqa: BLE001 - the library's own failure, named with where it happened
                    failed = ctx.writer.usage.failures
                    raise UserError(
                        f"memory=graphiti: Graphiti stopped on {sid}'s episode {n + 1} of {len(episodes)} "
                        f"({turns[0].dia_id}): {type(e).__name__}: {str(e)[:200]}; {failed} writer replies failed so far "
                        "(memory/writer/failures.jsonl); a rerun restarts this conversation"
                    ) from None
                dia_of[result.episode.uuid] = tuple(t.dia_id for t in turns)
            nodes, edges = self.dump(graph, sid)
            server = self._open.server if self._open is not None else None
            if server is not None:
                server.save()  # the built graph: memory/library_stores/graphiti/<sample_id>/dump.rdb
        items = [MemoryItem(e.uuid, render_fact(e), _sources(e, dia_of)) for e in edges]
        items += [MemoryItem(n.uuid, render_entity(n), ()) for n in nodes]
        built = BuiltMemory(sid, items, state={"store": relstore, "episodes": {k: list(v) for k, v in dia_of.items()}})
        sessions = len({s.index for s, _ in episodes})
        built.metadata["library"] = {
            "distribution": "graphiti-core",
            "version": g["version"],
            "class": "graphiti_core.Graphiti",
            "driver": "kuzu (embedded)" if self.backend == "kuzu" else "falkordb (FalkorDB-lite's server, a unix socket)",
            "store": relstore,
            "episodes": len(episodes),
            "entities": len(nodes),
            "facts": len(edges),
            "sessions_built": sessions,
            "search": "hybrid BM25 + cosine, RRF",
            "endpoint_rows": dict(endpoint.rows),
            "refused": len(endpoint.proxy.refused),
        }
        if server is not None:  # what the server that built it said it is
            built.metadata["library"]["server"] = server.versions()
        if endpoint.json_bounds:
            built.metadata["library"]["json_bounds"] = dict(endpoint.json_bounds)
        return built

    def dump(self, graph: Any, sample_id: str) -> tuple[list[Any], list[Any]]:
        """What Graphiti remembered of a conversation: its entities and facts, oldest first."""
        from graphiti_core.errors import GroupsEdgesNotFoundError, GroupsNodesNotFoundError

        g = import_graphiti()
        group = [g["default_group"](graph.driver.provider)]
        # a writer that found no entity or no relation (a small one, a short session) leaves a graph
        # without nodes or edges: Graphiti says so with an error; the memory is empty, not broken
        try:
            nodes = self.run(g["EntityNode"].get_by_group_ids(graph.driver, group))
        except GroupsNodesNotFoundError:
            nodes = []
        try:
            edges = self.run(g["EntityEdge"].get_by_group_ids(graph.driver, group))
        except GroupsEdgesNotFoundError:
            edges = []
        return (
            sorted(nodes, key=lambda n: (str(n.created_at), n.uuid)),
            sorted(edges, key=lambda e: (str(e.created_at), e.uuid)),
        )

    # -- questions ---------------------------------------------------------------------
    def retrieve(self, built: BuiltMemory, asked: AskedQuestion, ctx: BuildContext) -> Retrieved:
        endpoint = self.endpoint(ctx)
        g = import_graphiti()
        base = g["COMBINED_HYBRID_SEARCH_RRF"]
        config = base.model_copy(
            update={
                "edge_config": base.edge_config.model_copy() if self.edge_limit else None,
                "node_config": base.node_config.model_copy() if self.node_limit else None,
                "episode_config": None,
                "community_config": None,
                "limit": max(self.edge_limit, self.node_limit),
            }
        )
        with endpoint.scope(asked.sample_id, asked.question_id):
            # the graph just built, else (a resumed run) the committed store reopened for search
            graph = self.graph_of(ctx, ctx.pack.path(built.state["store"]))
            found = self.run(graph.search_(asked.question, config=config))
        edges = list(zip(found.edges, found.edge_reranker_scores or [0.0] * len(found.edges)))[: self.edge_limit]
        nodes = list(zip(found.nodes, found.node_reranker_scores or [0.0] * len(found.nodes)))[: self.node_limit]
        texts = [render_fact(e) for e, _ in edges] + [render_entity(n) for n, _ in nodes]
        hits = [{"item_id": e.uuid, "score": round(float(s), 6), "kind": "fact"} for e, s in edges] + [
            {"item_id": n.uuid, "score": round(float(s), 6), "kind": "entity"} for n, s in nodes
        ]
        return Retrieved(
            texts=texts,
            hits=hits,
            render=lambda keep: render_context(texts, len(edges), keep),
            extra={"joiner": JOINER, "facts": len(edges), "entities": len(nodes)},
        )

    def for_question(self, built: BuiltMemory, asked: AskedQuestion, ctx: BuildContext) -> str:
        retrieved = self.retrieve(built, asked, ctx)
        return retrieved.render(list(range(len(retrieved.texts))))


class _Blank(dict):
    """A prompt's context whose every field is empty."""

    def __missing__(self, key: str) -> str:
        return ""


def render_prompt_library() -> str:
    """Every prompt of Graphiti's library that a build uses (its `eval` prompts are left
    out), rendered with empty fields, plus the language note its client adds to each system
    message; in the library's own order."""
    from graphiti_core.llm_client.client import get_extraction_language_instruction
    from graphiti_core.prompts.lib import PROMPT_LIBRARY_IMPL

    parts = [f"# Graphiti's prompts (graphiti-core {import_graphiti()['version']}), rendered with empty fields"]
    for group, versions in PROMPT_LIBRARY_IMPL.items():
        if group == "eval":
            continue
        for variant, make in versions.items():
            for message in make(_Blank()):
                parts.append(f"## {group}.{variant} ({message.role})\n{message.content}")
    parts.append(f"## every system message ends with\n{get_extraction_language_instruction(None).strip()}")
    return "\n\n".join(parts) + "\n"


def close_graph(graph: Any) -> None:
    """Close a graph's Kùzu connection and database (idempotent)."""
    driver = graph.driver
    for part in (driver.client, driver.db):
        part.close()


@contextlib.contextmanager
def library_log(path: Any) -> Iterator[None]:
    """Graphiti's own log lines ("LLM returned invalid duplicate_facts idx values ...") go
    to a file of the pack while it builds, not through the progress line."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handler = logging.FileHandler(path, encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    logger = logging.getLogger("graphiti_core")
    before = logger.propagate
    logger.addHandler(handler)
    logger.propagate = False
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.propagate = before
        handler.close()


def kuzu_stopwords() -> str:
    """The stopword list Kùzu's full-text extension writes into a database when Graphiti
    creates its indexes, as it lies in the file (the words run together: verify matches
    substrings), read from an empty database made here with Graphiti's schema and indexes."""
    import re
    import tempfile

    with tempfile.TemporaryDirectory(prefix="mb-kuzu-") as tmp:
        path = Path(tmp) / "empty.kuzu"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            driver = import_driver("kuzu")(db=str(path))
        loop = asyncio.new_event_loop()
        try:
            loop.run_until_complete(driver.graph_ops.build_indices_and_constraints(driver))
        finally:
            loop.close()
        del driver
        runs = re.findall(rb"[a-z']{200,}", path.read_bytes())
    if not runs:
        raise UserError(
            f"memory=graphiti: no stopword list found in an empty Kuzu {version('kuzu')} database; "
            "this plugin was written for kuzu 0.11.3 (pip install -e plugins/graphiti)"
        )
    blob = max(runs, key=len).decode("ascii")
    return (
        f"# Kuzu {version('kuzu')}'s default English stopwords, as its full-text index stores them "
        f"(one run of text, words joined)\n{blob}\n"
    )


def falkordb_store_words() -> tuple[str, str]:
    """The words every FalkorDB store of Graphiti holds, whatever its conversation: those of an
    empty graph's dump.rdb with Graphiti's indexes (its labels and property names, the stopwords
    it gives FalkorDB's full-text indexes, redis's and GraphBLAS's own names), as verify reads a
    binary file. Two empty stores are made, each by a server of its own, and a word is kept when
    both hold it (a few bytes of a dump are addresses and times, different in each). Returns
    FalkorDB's module version and the text."""
    import re
    import tempfile

    from falkordb.asyncio import FalkorDB

    from mb_graphiti._falkordb import FalkorServer

    driver_class = import_driver("falkordb")
    found: list[set[str]] = []
    module = "?"
    for _ in range(2):
        with tempfile.TemporaryDirectory(prefix="mb-falkordb-") as tmp, FalkorServer(Path(tmp)) as server:
            driver = driver_class(falkor_db=FalkorDB(unix_socket_path=server.socket), database=FALKOR_GRAPH)
            loop = asyncio.new_event_loop()
            try:
                loop.run_until_complete(driver.graph_ops.build_indices_and_constraints(driver))
                loop.run_until_complete(driver.close())
            finally:
                loop.close()
            module = server.versions().get("falkordb-module", "?")
            data = server.save().read_bytes()
        found.append({w.decode("ascii") for w in re.findall(rb"[A-Za-z][A-Za-z0-9_.-]+", data) if len(w) >= 3})
    words = sorted(found[0] & found[1], key=lambda w: (w.lower(), w))
    return module, (
        f"# FalkorDB {module}'s store of an empty Graphiti graph (its indexes, their stopwords): the words of its "
        "dump.rdb, one a line\n" + "\n".join(words) + "\n"
    )


def render_fact(edge: Any) -> str:
    """A fact with the dates Graphiti gave it: `fact (valid from A to B)`."""
    start = edge.valid_at.date().isoformat() if getattr(edge, "valid_at", None) else "?"
    end = edge.invalid_at.date().isoformat() if getattr(edge, "invalid_at", None) else "present"
    return f"{edge.fact} (valid from {start} to {end})"


def render_entity(node: Any) -> str:
    summary = " ".join(str(getattr(node, "summary", "") or "").split())
    return f"{node.name}: {summary}" if summary else str(node.name)


def render_context(texts: list[str], facts: int, keep: list[int]) -> str:
    """The kept texts under two headings, facts first, as Zep lays out its context."""
    kept_facts = [texts[n] for n in keep if n < facts]
    kept_entities = [texts[n] for n in keep if n >= facts]
    parts = []
    if kept_facts:
        parts.append("Facts (with the dates they held):" + JOINER + JOINER.join(kept_facts))
    if kept_entities:
        parts.append("Entities:" + JOINER + JOINER.join(kept_entities))
    return (JOINER + JOINER).join(parts)


def _sources(edge: Any, dia_of: dict[str, tuple[str, ...]]) -> tuple[str, ...]:
    return tuple(sorted({d for uuid in (getattr(edge, "episodes", None) or []) for d in dia_of.get(uuid, ())}))
