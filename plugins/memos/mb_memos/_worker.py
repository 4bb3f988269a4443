"""MemOS's side of memory=memos: a script run by the MemOS environment's Python.

MemOS 2.0.33 pins `openai<2` and memorybench `openai>=3.50`, so the two cannot share one
environment (plugins/memos/README.md). memorybench's side (`mb_memos._core`) starts this
file with the MemOS environment's interpreter, as a script (it imports only the standard
library and MemOS; memorybench is not importable there), one process per conversation, and
speaks JSON lines with it (the protocol: `memorybench.memory.venv_worker`). The command
loop, the socket audit and the log handler are every library worker's:
`memorybench/memory/_venv_worker_side.py` (standard library only), loaded from the path
memorybench passes as this script's first argument (`SIDE`). What is MemOS's own is here:

- the commands: `open` (the store folder, the recording endpoint, the settings: MemOS's
  `general_text` memory built by its own `MemoryFactory`), `build` (the conversation's
  extraction tasks: `GeneralTextMemory.extract` of a session's messages, then
  `GeneralTextMemory.add` of what it extracted), `search` (a question:
  `GeneralTextMemory.search`), `dump` (`GeneralTextMemory.get_all`), then `close` (the
  embedded Qdrant closed first);
- the reports: each record MemOS (or a library under it) logs at WARNING or above while a
  command runs, and each extraction that raised (MemOS's `extract` raises on a reply without
  its `memory list`); memorybench journals it with the call it followed. A `sync` event
  (between two extraction tasks) waits for memorybench's answer line, so that each report is
  journaled with the call it followed.

Before MemOS is imported: no `.env` read (`PYTHON_DOTENV_DISABLED`: `memos.log` calls
`load_dotenv()` at import, which would search the folders above the package), MemOS's
folder (`MEMOS_BASE_PATH`: its log `.memos/logs/memos.log`) and `HOME` inside the store,
HuggingFace offline, MemOS's remote log handler off (`CUSTOM_LOGGER_URL` and every other
`MEMOS_*`, `MOS_*`, `NACOS_*` variable removed), proxies and API keys removed, the embedding
timeout raised (`MOS_EMBEDDER_TIMEOUT`: MemOS's default of 5 s is shorter than an embedded
model's batch on a busy machine). Then the socket audit (`SIDE.audit_connections`) refuses
every connection but to the recording endpoint and lists what was tried; `close` returns it.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import sys
from pathlib import Path
from typing import Any

#: the distributions whose versions the worker reports (the memory dump's metadata.library.versions)
REPORTED = ("MemoryOS", "qdrant-client", "openai", "pydantic", "transformers", "numpy")
#: the loggers' level from which records are reported
REPORT_LEVEL = logging.WARNING
#: environment variables removed before MemOS is imported (its remote logger, its server's settings, keys)
REMOVED_PREFIXES = ("MEMOS_", "MOS_", "NACOS_", "CUSTOM_LOGGER", "OPENAI_", "QDRANT_", "OLLAMA_", "HF_", "HUGGINGFACE")
REMOVED = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy")

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


# -- setting up ------------------------------------------------------------------------------
def environment(store: Path) -> dict[str, str]:
    """MemOS's settings that it reads from the environment (module doc)."""
    for key in list(os.environ):
        if key.startswith(REMOVED_PREFIXES) or key in REMOVED or key.endswith("_API_KEY"):
            os.environ.pop(key, None)
    home = store / "home"
    home.mkdir(parents=True, exist_ok=True)
    return {
        "PYTHON_DOTENV_DISABLED": "1",
        "MEMOS_BASE_PATH": str(store),
        "HOME": str(home),
        "HF_HUB_OFFLINE": "1",
        "HF_HUB_DISABLE_TELEMETRY": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "HF_HOME": str(home / "hf"),
        "TRANSFORMERS_VERBOSITY": "error",
        "MOS_EMBEDDER_TIMEOUT": "900",
        "NO_PROXY": "127.0.0.1,localhost",
    }


def memory_config(store: Path, cmd: dict[str, Any]) -> dict[str, Any]:
    """MemOS's `general_text` memory config: its OpenAI LLM and its universal_api (OpenAI)
    embedder on the recording endpoint, its Qdrant vector store embedded in the store folder."""
    return {
        "backend": "general_text",
        "config": {
            "cube_id": cmd["collection"],
            "extractor_llm": {
                "backend": "openai",
                "config": {
                    "model_name_or_path": "memorybench-writer",
                    "api_key": cmd["api_key"],
                    "api_base": cmd["base_url"],
                    "temperature": float(cmd.get("temperature", 0.0)),
                    "max_tokens": int(cmd["max_tokens"]),
                },
            },
            "vector_db": {
                "backend": "qdrant",
                "config": {
                    "collection_name": cmd["collection"],
                    "vector_dimension": int(cmd["dims"]),
                    "distance_metric": "cosine",
                    "path": str(store / "qdrant"),
                },
            },
            "embedder": {
                "backend": "universal_api",
                "config": {
                    "provider": "openai",
                    "model_name_or_path": "memorybench-embedder",
                    "api_key": cmd["api_key"],
                    "base_url": cmd["base_url"],
                },
            },
        },
    }


def op_open(cmd: dict[str, Any]) -> dict[str, Any]:
    store = Path(cmd["store"])
    store.mkdir(parents=True, exist_ok=True)
    os.environ.update(environment(store))
    SIDE.audit_connections(*cmd["endpoint"])
    os.chdir(store)  # nothing relative lands elsewhere
    from memos.configs.memory import MemoryConfigFactory
    from memos.memories.factory import MemoryFactory

    logging.getLogger().addHandler(SIDE.Reports(REPORT_LEVEL))
    STATE["memory"] = MemoryFactory.from_config(MemoryConfigFactory(**memory_config(store, cmd)))
    return {"versions": SIDE.versions(REPORTED), "python": sys.version.split()[0], "memory": type(STATE["memory"]).__name__}


def barrier() -> None:
    """Wait until memorybench has read every event sent so far (it answers a `sync` event
    with a line): a report of one task is then journaled with that task's call, before the
    next task's call reaches the recording endpoint."""
    SIDE.send("sync")
    sys.stdin.readline()


def op_build(cmd: dict[str, Any]) -> dict[str, Any]:
    """Each task: MemOS's `extract` of one session's messages (one perspective), the items
    stamped with the session and the speaker as MemOS's MOS.add stamps its own (`user_id`,
    `session_id`), then MemOS's `add` (one embedding request, the vector store's upsert)."""
    memory = STATE["memory"]
    extracted, failed = [], []
    for n, task in enumerate(cmd["tasks"]):
        if n:
            barrier()
        try:
            items = memory.extract(task["messages"])
        except Exception as e:  # noqa: BLE001 - MemOS raises on a reply without its "memory list"
            failed.append(task["label"])
            SIDE.send(
                "report",
                logger="memos.memories.textual.general",
                level="ERROR",
                message=f"GeneralTextMemory.extract raised {type(e).__name__}: {' '.join(str(e).split())[:300]} "
                f"({task['label']}): nothing of this task is stored",
            )
            continue
        for item in items:
            item.metadata.user_id = task["user_id"]
            item.metadata.session_id = task["session_id"]
        if items:
            memory.add(items)
        extracted.append([task["label"], [item.id for item in items]])
    return {"extracted": extracted, "failed": failed}


def item_json(item: Any) -> dict[str, Any]:
    return {"id": item.id, "memory": item.memory, "metadata": item.metadata.model_dump(mode="json", exclude_none=True)}


def op_search(cmd: dict[str, Any]) -> dict[str, Any]:
    found = STATE["memory"].search(cmd["query"], top_k=int(cmd["top_k"]))
    return {"items": [item_json(i) for i in found]}


def op_dump(cmd: dict[str, Any]) -> dict[str, Any]:
    return {"items": [item_json(i) for i in STATE["memory"].get_all()]}


OPS = {"open": op_open, "build": op_build, "search": op_search, "dump": op_dump}


def close() -> None:
    """Close the embedded Qdrant (it holds its folder's lock and writes its last state)."""
    memory = STATE.pop("memory", None)
    client = getattr(getattr(memory, "vector_db", None), "client", None)
    if client is not None:
        try:
            client.close()
        except Exception:  # noqa: BLE001 - closing at exit: nothing more to save
            pass


def main() -> None:
    global SIDE
    SIDE = worker_side()
    SIDE.serve(OPS, close=close)


if __name__ == "__main__":
    main()
