"""The words every cognee store holds whatever its conversation, read from empty stores the
installed cognee makes: a prompt file of the pack (`CogneeMemory.library_prompts`).

verify scans the pack's store (`memory/library_stores/cognee/`) for gold strings, a binary
file by its runs of text. cognee's store holds text of its own in every conversation:
its SQLite catalogue's schema and rows (a table `notebooks`, its pipeline and task names,
its default user), LanceDB's format strings (each data file names
`lance.encodings.ColumnEncoding`, which holds `coding`), the graph database's catalogue.
Some of those words are LoCoMo golds of other conversations. As a prompt file of the pack,
verify reads them as the library's text (Graphiti's Kùzu stopwords are handled the same
way), and any other word of the store is still scanned.

How they are found, and kept once per cognee environment (`share/memorybench-cognee/`, made
by `bash plugins/cognee/install.sh`, else by the first run), is every such library's:
`memorybench.memory.venv_store_words`. What is cognee's (`EMPTY`): two stores built by
workers of the cognee environment (`mb_cognee._worker`: the same `open`, `build` and
`search` as a run), with cognee's own add, cognify and search over one document of two
one-letter words; the stub model answers its graph call with a graph of one one-letter node
and relation, its summary call with a one-letter summary (the stub embedder's one unit
vector for every text makes the search find the node, so cognee writes its search cache).
A store's `data/` (the document itself) is not read.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from memorybench.memory.venv_store_words import EmptyStores
from memorybench.memory.venv_worker import Worker

from mb_cognee import _env

#: what the stub gives cognee: one-letter names (no word of them can be a gold)
DOCUMENT = "a b"
GRAPH = {
    "nodes": [{"id": "a", "name": "a", "type": "b", "description": "c"}],
    "edges": [{"source_node_id": "a", "target_node_id": "a", "relationship_name": "d"}],
}
SUMMARY = {"summary": "e", "description": "e"}


def reply(body: dict[str, Any]) -> dict[str, Any]:
    """cognee's graph call gets a one-node graph, its summary call a one-letter summary."""
    system = next((str(m.get("content")) for m in body.get("messages") or [] if m.get("role") == "system"), "")
    return GRAPH if '"title": "KnowledgeGraph"' in system else SUMMARY


def commands(worker: Worker, timeout: float) -> None:
    """A run's build and search, over the document."""
    worker.request("build", timeout=timeout, dataset="e", documents=[{"name": "a", "text": DOCUMENT}])
    worker.request("search", timeout=timeout, dataset="e", query="a", top_k=10, search_type="GRAPH_COMPLETION", verbose=True)


EMPTY = EmptyStores(
    library=_env.LIBRARY,
    module=__name__,
    #: the libraries whose files the store holds (their versions name the cached list)
    store_libraries=("cognee", "lancedb", "pylance", "ladybug"),
    reply=reply,
    commands=commands,
    open_fields={"embedding_max_tokens": 256},
    unread=("data",),
)


def cache_path() -> Path:
    """Where the cognee environment keeps its list."""
    return EMPTY.cache_path()


def store_words() -> str:
    """The prompt file's text: a header and the fixed words, one a line; made once per cognee environment."""
    return EMPTY.text()
