"""The words every MemOS store holds whatever its conversation, read from empty stores the
installed MemOS makes: a prompt file of the pack (`MemosMemory.library_prompts`).

verify scans the pack's store (`memory/library_stores/memos/`) for gold strings, a binary
file by its runs of text. A MemOS store holds text of its own in every conversation: Qdrant's
embedded store (its SQLite schema, the pickled classes of each point:
`qdrant_client.http.models.models.PointStruct`, ...), the fields of each MemOS item
(`metadata`, `updated_at`, `activated`, `visibility`, `conversation`, ...), its collection's
config (`meta.json`), and MemOS's log's fixed lines (`[TIMER_WITH_STATUS]`, its logger and
function names). Some of those words may be LoCoMo golds of other conversations. As a prompt
file of the pack, verify reads them as the library's text, and any other word of the store
is still scanned.

How they are found, and kept once per MemOS environment (`share/memorybench-memos/`, made by
`bash plugins/memos/install.sh`, else by the first run), is every such library's:
`memorybench.memory.venv_store_words`. What is MemOS's (`EMPTY`): two stores built by
workers of the MemOS environment (`mb_memos._worker`: the same `open`, `build`, `search` and
`dump` as a run), with MemOS's own extract, add and search over one message of two
one-letter words; the stub model answers the extraction with one memory of one-letter fields.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from memorybench.memory.venv_store_words import EmptyStores
from memorybench.memory.venv_worker import Worker

from mb_memos import _env

#: what the stub gives MemOS: one-letter names (no word of them can be a gold)
MESSAGES = [{"role": "user", "content": "a b"}]
REPLY = {"memory list": [{"key": "a", "memory_type": "UserMemory", "value": "b", "tags": ["c"]}], "summary": "d"}


def reply(body: dict[str, Any]) -> dict[str, Any]:
    """MemOS's extraction gets one memory of one-letter fields."""
    return REPLY


def commands(worker: Worker, timeout: float) -> None:
    """A run's build, search and dump, over the message."""
    task = {"label": "a", "user_id": "a", "session_id": "a", "messages": MESSAGES}
    worker.request("build", timeout=timeout, tasks=[task])
    worker.request("search", timeout=timeout, query="a", top_k=10)
    worker.request("dump", timeout=timeout)


EMPTY = EmptyStores(
    library=_env.LIBRARY,
    module=__name__,
    #: the libraries whose files the store holds (their versions name the cached list)
    store_libraries=("MemoryOS", "qdrant-client", "pydantic"),
    reply=reply,
    commands=commands,
    open_fields={"collection": "e"},
)


def cache_path() -> Path:
    """Where the MemOS environment keeps its list."""
    return EMPTY.cache_path()


def store_words() -> str:
    """The prompt file's text: a header and the fixed words, one a line; made once per MemOS environment."""
    return EMPTY.text()
