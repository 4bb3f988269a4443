"""`letta`: Letta's archival memory, its embedding calls recorded, its SQLite store in the pack.

Letta (PyPI `letta`, the MemGPT server) runs as a local process in an environment of its own
(`mb_letta._process`); this method is its HTTP client, speaking Letta's REST API with httpx.

Build (once per conversation): a Letta server over the conversation's store folder
(`memory/library_stores/letta/<sample_id>/`, `LETTA_DIR`: Letta's SQLite database is
`sqlite.db` there), one agent whose embedding config points at memorybench's recording
endpoint (`embedder=`), and each session inserted into that agent's archival memory with
Letta's own insert (`POST /v1/agents/{id}/archival-memory`: Letta cuts the text into passages
of `embedding_chunk_size` tokens with its own chunker, embeds them through the endpoint and
stores them), `session_N` as their tag.
Each session is its turns as `DATE | SPEAKER: text` lines. The pack's records name passages by
our own ids (`<sample_id>-s<session>-p<n>`) and the agent by its name, never by Letta's random
ids (`passage-<uuid4>`): verify scans them for gold strings, and a uuid's hex digits hold a year
("2022") by chance.

Letta's fixed text: Letta writes its own text into every store (its base tools' schemas and
code, the agent's system prompt, its boot messages), and verify scans the store for gold
strings ("message" holds LoCoMo's "sage", "\\u2019" holds "2019"). `library_prompts` makes that
text a prompt file of the pack (`prompts/library/letta/letta-0.11.7_store_text.txt`), read from a
probe store: a Letta server over a temporary folder, an agent created with the same request,
its tables' text with every uuid, timestamp and port masked (so no chance digits become
instructions). Made once per server environment and plugin source, then cached beside it.

Questions: Letta's archival search (`GET /v1/agents/{id}/archival-memory/search`, "the same
functionality as the agent's archival_memory_search tool", Letta's words), the question as the
query, `top_k` passages, best first. No model call but the embeddings: Letta's agent loop (its
LLM) is not run; see docs/letta.md for why.

The store is the pack's: the folder is emptied before a build (a killed build restarts its
conversation from nothing); a resumed run starts a server over the committed folder and
searches it, with no insert. The server is stopped before `_SUCCESS` (`ctx.closers`), so the
SQLite file it closes is the file the pack records.

No other traffic: the server's environment has no provider key and no telemetry
(`mb_letta._process`), and its process refuses and journals any connection but to the
recording endpoint (`mb_letta._server`, `socket_audit.jsonl` in the store folder).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
import sqlite3
import tempfile
from datetime import datetime
from pathlib import Path
from typing import Any, ClassVar

from omegaconf import DictConfig

from memorybench.data.records import AskedQuestion, Conversation, Session
from memorybench.errors import UserError
from memorybench.memory._managed import Retrieved
from memorybench.memory.base import BuildContext, BuiltMemory, MemoryItem
from memorybench.memory.library_endpoint import LibraryEndpoint, fresh_store

from mb_letta._process import AUDIT_FILE, LETTA_VERSION, SERVER_SCRIPT, LettaServer, check_server_env, free_port
from mb_letta._server import SCHEMA_FILE

METHOD = "letta"
JOINER = "\n"
#: the names Letta is given for the models; only the embedder's is ever called
EMBED_MODEL = "memorybench-embedder"
LLM_MODEL = "memorybench-writer"
#: LoCoMo's session dates: "1:56 pm on 8 May, 2023"
DATE_FORMAT = "%I:%M %p on %d %B, %Y"
HTTP_TIMEOUT_S = 900.0
#: what is masked in Letta's fixed text (`store_text`): its random ids, the clock, the ports
MASKS = (
    (re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"), "<uuid>"),
    (re.compile(r"\d{4}-\d\d-\d\d([ T]\d\d:\d\d(:\d\d(\.\d{1,6})?)?)?"), "<time>"),
    (re.compile(r"127\.0\.0\.1:\d+"), "127.0.0.1:<port>"),
    (re.compile(r"mb-letta-probe-[^/\s\"]+"), "<probe>"),
)
STORE_TEXT = f"library/{METHOD}/letta-{LETTA_VERSION}_store_text.txt"


class EmbeddingsOnlyEndpoint(LibraryEndpoint):
    """The recording endpoint of a library that may only embed: a chat call (Letta's agent loop,
    which this protocol never runs) is refused with a 400 and remembered, and the build stops."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.chat_refused: list[str] = []

    def _chat(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        from memorybench.llm.recording_proxy import error_body

        self.chat_refused.append(str(body.get("model")))
        return 400, error_body("memory=letta sends Letta no chat calls; this protocol only embeds", "unsupported")


def session_text(session: Session) -> str:
    """A session as it is inserted: one `DATE | SPEAKER: text` line per turn."""
    return "\n".join(f"{session.date_time} | {turn.render()}" for turn in session.turns)


def session_datetime(session: Session) -> str | None:
    try:
        return datetime.strptime(" ".join(str(session.date_time).split()), DATE_FORMAT).isoformat()
    except ValueError:
        return None


def sources_of(text: str, session: Session) -> list[str]:
    """The turns a passage holds (each turn whose line, or a part of it, is in the passage)."""
    found = []
    for turn in session.turns:
        line = f"{session.date_time} | {turn.render()}"
        head = line[:60]
        tail = line[-60:]
        if line in text or head in text or tail in text:
            found.append(turn.dia_id)
    return found


class LettaMemory:
    name: ClassVar[str] = METHOD
    question_dependent: ClassVar[bool] = True
    software_only: ClassVar[bool] = False
    uses_writer: ClassVar[bool] = False
    uses_embedder: ClassVar[bool] = True
    writer_templates: ClassVar[dict[str, frozenset[str]]] = {}

    @classmethod
    def check(cls, cfg: DictConfig) -> None:
        check_server_env(cfg.memory.get("server_python"))  # before any call: one line when it is not there

    @classmethod
    def library_prompts(cls, cfg: DictConfig) -> dict[str, str]:
        """Letta's fixed text in every store (`store_text`), a prompt file of the pack: verify reads
        its words as the library's own, not as leaked gold."""
        python = check_server_env(cfg.memory.get("server_python"))
        timeout = float(cfg.memory.get("start_timeout_s") or 600)
        return {STORE_TEXT: store_text(python, int(cfg.memory.chunk_size), timeout)}

    @classmethod
    def run_notes(cls, cfg: DictConfig) -> list[str]:
        return [
            f"memory=letta runs Letta's own server (letta {LETTA_VERSION}, SQLite, a local process in its own "
            "environment), not a clone: each session inserted into an agent's archival memory and each question "
            "answered from Letta's archival search; its embedding calls went through memorybench's recording endpoint "
            "to embedder=; Letta's agent loop (its LLM) is not run",
            "memory=letta created Letta's archives_agents table before Letta started, from Letta's own table with its "
            "SQLite default set to datetime('now') as in Letta's migration 74e860718e0d (letta 0.11.7's ORM stores the "
            "text 'now()' there, which it cannot read back); Letta's code is not changed (docs/letta.md)",
        ]

    def __init__(self, cfg: DictConfig) -> None:
        node = cfg.memory
        self.cfg = cfg
        self.top_k = int(node.top_k)
        self.chunk_size = int(node.chunk_size)
        self.start_timeout_s = float(node.get("start_timeout_s") or 600)
        for key, value in (("top_k", self.top_k), ("chunk_size", self.chunk_size)):
            if value < 1:
                raise UserError(f"memory=letta: memory.{key}={value} must be at least 1")
        self.python = check_server_env(node.get("server_python"))
        self._endpoint: EmbeddingsOnlyEndpoint | None = None
        self._server: LettaServer | None = None
        self._server_dir: Path | None = None
        self._agent: tuple[str, str] | None = None  # (name, Letta's id) of the agent last searched

    # -- the endpoint and the server ---------------------------------------------------
    def endpoint(self, ctx: BuildContext) -> EmbeddingsOnlyEndpoint:
        if self._endpoint is None:
            self._endpoint = endpoint = EmbeddingsOnlyEndpoint(ctx, method=METHOD).__enter__()
            ctx.closers.append(lambda: endpoint.__exit__(None, None, None))
            ctx.closers.append(self.stop_server)  # newest first: the server stops before the endpoint
        return self._endpoint

    def server(self, ctx: BuildContext, store: Path, sample_id: str) -> LettaServer:
        """The Letta server over `store` (one at a time: the previous conversation's is stopped)."""
        if self._server is not None and self._server_dir == store:
            return self._server
        self.stop_server()
        self._agent = None
        endpoint = self.endpoint(ctx)
        server = LettaServer(
            self.python,
            store,
            ctx.cache_dir / "letta_home" / sample_id,
            endpoint.base_url,
            endpoint.api_key,
            start_timeout_s=self.start_timeout_s,
        )
        server.start()
        self._server, self._server_dir = server, store
        return server

    def stop_server(self) -> None:
        server, self._server, self._server_dir = self._server, None, None
        if server is not None:
            server.stop()

    def api(self, server: LettaServer, method: str, path: str, **kwargs: Any) -> Any:
        """One call of Letta's REST API; a failure is one line naming the call and Letta's answer."""
        import httpx

        try:
            response = httpx.request(method, f"{server.base_url}{path}", timeout=HTTP_TIMEOUT_S, **kwargs)
        except httpx.HTTPError as e:
            raise UserError(
                f"memory=letta: {method} {path} failed ({type(e).__name__}: {e}); the server said: {server.last_line()}"
            ) from None
        if response.status_code >= 400:
            detail = " ".join(response.text.split())[:300]
            raise UserError(f"memory=letta: Letta answered {method} {path} with {response.status_code}: {detail}")
        return response.json() if response.content else None

    def create_agent(self, server: LettaServer, ctx: BuildContext, sample_id: str, dims: int) -> dict[str, Any]:
        body = agent_body(agent_name(sample_id), self.endpoint(ctx).base_url, dims, self.chunk_size)
        return self.api(server, "POST", "/v1/agents/", json=body)

    def agent_id(self, server: LettaServer, name: str, endpoint_url: str) -> str:
        """Letta's id of the agent called `name` (the pack records names, not Letta's random ids).

        A resumed run's recording endpoint listens at another port than the one the agent was
        made with, and Letta embeds each query at the agent's `embedding_endpoint`: the agent is
        pointed at this run's endpoint (`PATCH /v1/agents/{id}`, only that field changed)."""
        found = self.api(server, "GET", "/v1/agents/", params={"name": name}) or []
        if len(found) != 1:
            raise UserError(f"memory=letta: the store holds {len(found)} agents called {name!r}, not 1; rerun with a fresh pack")
        agent = found[0]
        config = dict(agent.get("embedding_config") or {})
        if config.get("embedding_endpoint") != endpoint_url:
            config["embedding_endpoint"] = endpoint_url
            self.api(server, "PATCH", f"/v1/agents/{agent['id']}", json={"embedding_config": config})
        return str(agent["id"])

    def memory_tokens_bound(self, conversations: list[Conversation]) -> int:
        """A high estimate of what a search hands the reader (for sizing a local reader): `top_k`
        passages of at most `chunk_size` tokens each (Letta's chunker, llama-index's SentenceSplitter,
        counts cl100k_base tokens, as the budget does), and a margin per passage."""
        return self.top_k * (self.chunk_size + 32)

    # -- build -------------------------------------------------------------------------
    def build(self, conversation: Conversation, ctx: BuildContext) -> BuiltMemory:
        sid = conversation.sample_id
        relstore, store = fresh_store(ctx, METHOD, sid)  # a killed build restarts its conversation from nothing
        endpoint = self.endpoint(ctx)
        sessions = conversation.sessions  # the first memory.max_sessions of them when set (ManagedMethod)
        items: list[MemoryItem] = []
        passages: dict[str, dict[str, Any]] = {}
        with endpoint.scope(sid):
            server = self.server(ctx, store, sid)
            dims = ctx.embedder.dim or int(endpoint.in_worker(ctx.embedder.embed, ["dimension probe"]).shape[1])
            agent = self.create_agent(server, ctx, sid, dims)
            for session in sessions:
                # no created_at: letta 0.11.7 on SQLite answers an explicit one with 400 ("Invalid isoformat
                # string: 'now()'"); the session's date is in every line of the text
                body: dict[str, Any] = {"text": session_text(session), "tags": [f"session_{session.index}"]}
                made = self.api(server, "POST", f"/v1/agents/{agent['id']}/archival-memory", json=body) or []
                for n, passage in enumerate(made):
                    text = str(passage.get("text") or "")
                    dia = sources_of(text, session)
                    item_id = f"{sid}-s{session.index}-p{n}"
                    passages[item_id] = {"session": session.index, "date": session.date_time, "dia_ids": dia}
                    items.append(MemoryItem(item_id, text, tuple(dia)))
        if endpoint.chat_refused:
            raise UserError(
                f"memory=letta: Letta made {len(endpoint.chat_refused)} chat call(s) while building {sid}; this protocol only embeds"
            )
        built = BuiltMemory(
            sid,
            items,
            state={"store": relstore, "agent": agent_name(sid), "passages": passages},
        )
        built.metadata["library"] = {
            "distribution": "letta",
            "version": LETTA_VERSION,
            "server": "letta.server.rest_api.app (uvicorn, 127.0.0.1), SQLite at LETTA_DIR",
            "store": f"{relstore}/.letta/sqlite.db",
            "agent": agent_name(sid),
            "store_fix": f"{relstore}/{SCHEMA_FILE}: archives_agents made before Letta started, its SQLite default fixed",
            "embedding_config": {k: v for k, v in agent.get("embedding_config", {}).items() if k != "embedding_endpoint"},
            "insert": "POST /v1/agents/{id}/archival-memory, one per session (Letta chunks and embeds)",
            "search": "GET /v1/agents/{id}/archival-memory/search (the archival_memory_search tool's search)",
            "sessions_built": len(sessions),
            "passages": len(items),
            "server_start_s": server.started_s,
            "endpoint_rows": dict(endpoint.rows),
            "refused": [list(r) for r in endpoint.proxy.refused],
            "socket_audit": audit_summary(store / AUDIT_FILE),
        }
        return built

    # -- questions ---------------------------------------------------------------------
    def retrieve(self, built: BuiltMemory, asked: AskedQuestion, ctx: BuildContext) -> Retrieved:
        endpoint = self.endpoint(ctx)
        store = ctx.pack.path(built.state["store"])
        with endpoint.scope(asked.sample_id, asked.question_id):
            server = self.server(ctx, store, asked.sample_id)  # a resumed run: a server over the committed store
            if self._agent is None or self._agent[0] != built.state["agent"]:
                self._agent = (built.state["agent"], self.agent_id(server, built.state["agent"], endpoint.base_url))
            found = self.api(
                server,
                "GET",
                f"/v1/agents/{self._agent[1]}/archival-memory/search",
                params={"query": asked.question, "top_k": self.top_k},
            )
        results = list((found or {}).get("results") or [])
        texts = [str(r.get("content") or "") for r in results]
        items = {item.text: item.item_id for item in built.items} if built.items else {}
        hits = [
            {
                "item_id": items.get(text, f"rank-{n}"),
                "score": round(1.0 / (n + 1), 6),
                "rank": n + 1,
            }
            for n, (text, r) in enumerate(zip(texts, results))
        ]
        return Retrieved(
            texts=texts,
            hits=hits,
            render=lambda keep: JOINER.join(texts[n] for n in keep),
            extra={"joiner": JOINER, "letta_count": (found or {}).get("count")},
        )

    def for_question(self, built: BuiltMemory, asked: AskedQuestion, ctx: BuildContext) -> str:
        retrieved = self.retrieve(built, asked, ctx)
        return retrieved.render(list(range(len(retrieved.texts))))


def audit_summary(path: Path) -> dict[str, Any]:
    """What the server's socket audit saw so far: connections allowed and refused (host:port)."""
    rows = [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()] if path.is_file() else []
    return {
        "allowed": sum(1 for r in rows if r.get("allowed")),
        "refused": sorted({f"{r.get('host')}:{r.get('port')}" for r in rows if not r.get("allowed")}),
    }


def agent_name(sample_id: str) -> str:
    return f"memorybench-{sample_id}"


def agent_body(name: str, endpoint_url: str, dims: int, chunk_size: int) -> dict[str, Any]:
    """The agent of one conversation: no memory blocks, Letta's base tools, both models at the endpoint."""
    return {
        "name": name,
        "description": "memorybench: archival memory of one LoCoMo conversation",
        "memory_blocks": [],
        "include_base_tools": True,
        "embedding_config": {
            "embedding_endpoint_type": "openai",
            "embedding_endpoint": endpoint_url,
            "embedding_model": EMBED_MODEL,
            "embedding_dim": dims,
            "embedding_chunk_size": chunk_size,
            "batch_size": 32,
        },
        "llm_config": {
            "model": LLM_MODEL,
            "model_endpoint_type": "openai",
            "model_endpoint": endpoint_url,
            "context_window": 8192,
        },
    }


def mask(text: str, folder: Path | None = None) -> str:
    """`text` with Letta's random parts masked: uuids, times, ports, and `folder` (the probe's temporary store)."""
    if folder is not None:
        text = text.replace(str(folder), "<store>")
    for pattern, placeholder in MASKS:
        text = pattern.sub(placeholder, text)
    return text


def store_text_cache(python: Path, chunk_size: int) -> Path:
    """Where `store_text` keeps its text: beside the server's environment, one file per letta version,
    server script, probe request and masks."""
    body = agent_body(agent_name("probe"), "http://127.0.0.1:<port>/v1", 384, chunk_size)
    script = hashlib.sha256(SERVER_SCRIPT.read_bytes()).hexdigest()
    key = hashlib.sha256(json.dumps([LETTA_VERSION, script, body, [p.pattern for p, _ in MASKS]]).encode()).hexdigest()
    return python.parent.parent / "memorybench" / f"store_text-{LETTA_VERSION}-{key[:16]}.txt"


def store_text(python: Path, chunk_size: int, start_timeout_s: float = 600.0) -> str:
    """The text Letta writes into every store, its random parts masked (see the module's docstring).

    A probe: Letta's server over a temporary folder (its endpoint a port where nothing listens:
    creating an agent calls no model), one agent created with the body of a real build, then every
    table's schema and every text value of its rows, masked, each table's values sorted. Cached
    beside the server's environment (`<venv>/memorybench/`), keyed by the letta version, the
    plugin's server script, the probe's request and the masks."""
    import httpx

    cache = store_text_cache(python, chunk_size)
    if cache.is_file():
        return cache.read_text("utf-8")
    parts = [
        f"# Not a prompt: the text letta {LETTA_VERSION} writes into every store's sqlite.db (its schema, its base "
        "tools, an agent's system prompt and boot messages), read from a probe store made with the same agent "
        "request; uuids, times, ports and its folder masked. Never sent to a model by memorybench.\n"
    ]
    with tempfile.TemporaryDirectory(prefix="mb-letta-probe-") as tmp:
        url = f"http://127.0.0.1:{free_port()}/v1"
        store = Path(tmp) / "store"
        with LettaServer(python, store, Path(tmp) / "home", url, "none", start_timeout_s=start_timeout_s) as server:
            body = agent_body(agent_name("probe"), url, 384, chunk_size)
            response = httpx.post(f"{server.base_url}/v1/agents/", json=body, timeout=HTTP_TIMEOUT_S)
            if response.status_code >= 400:
                raise UserError(f"memory=letta: Letta refused the probe agent ({response.status_code}): {response.text[:300]}")
        seen = audit_summary(store / AUDIT_FILE)
        if seen["allowed"] or seen["refused"]:
            raise UserError(f"memory=letta: Letta's probe store opened connections ({seen}); it should open none")
        with contextlib.closing(sqlite3.connect(store / ".letta" / "sqlite.db")) as db:
            for name, sql in db.execute("SELECT name, sql FROM sqlite_master WHERE sql IS NOT NULL ORDER BY name"):
                parts.append(f"\n-- schema {name}\n{sql.rstrip()}\n")
            tables = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table' ORDER BY name")]
            for table in tables:
                values = {mask(v, store) for row in db.execute(f'SELECT * FROM "{table}"') for v in row if isinstance(v, str)}
                if values:
                    parts.append(f"\n-- table {table}\n" + "\n".join(sorted(values)) + "\n")
        config = store / ".letta" / "config"
        if config.is_file():
            parts.append("\n-- file .letta/config\n" + mask(config.read_text("utf-8"), store))
    text = "".join(parts)
    cache.parent.mkdir(parents=True, exist_ok=True)
    cache.write_text(text, "utf-8")
    return text
