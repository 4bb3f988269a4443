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

How they are found (`store_words`): two stores are built in a temporary folder, each by a
worker of the MemOS environment (`mb_memos._worker`: the same `open`, `build`, `search` and
`dump` as a run), with MemOS's own extract, add and search over one message of two
one-letter words. Their model and embedder is a stub on 127.0.0.1 (`_stub_chat`: one memory
of one-letter fields; `_stub_embed`: one unit vector for every text), so no text of a
conversation and no word of a model reaches either store. Each store's files are read as
verify reads them (`memorybench.pack.verify.contamination._text_of`) and cut into words
(`WORD`: letters, joined by `_` or `.`). A word is kept when both stores hold it (ids and
timestamps differ between the two builds), it has at least `MIN_GOLD_LENGTH` characters (a
shorter one holds no gold), it is not made of hex letters only (a piece of an id), and it is
not a word of the temporary folder's path. What is left: one word a line, sorted. A gold that
spans two of these words, or any other text of a store, is still a finding.

The list is made once per MemOS environment (`bash plugins/memos/install.sh` makes it; else
the first run does) and kept there (`share/memorybench-memos/`), named by the store
libraries' versions and `recipe()` (the sha256 of this module and of the worker, whose
settings shape the store); each pack holds the copy its run read (prompts/, hashed in
run_meta.json), and verify reads that copy.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
import threading
from pathlib import Path
from typing import Any

from memorybench.errors import UserError
from memorybench.hashing import sha256_parts
from memorybench.pack.verify.needles import MIN_GOLD_LENGTH

from mb_memos import _env

#: the libraries whose files the store holds (their versions name the cached list)
STORE_LIBRARIES = ("MemoryOS", "qdrant-client", "pydantic")
#: a word of the store's text: letters, joined by `_` or `.` (`qdrant_client.http.models`)
WORD = re.compile(r"[a-z]+(?:[_.][a-z]+)*")
HEX_ONLY = re.compile(r"^[a-f_.]+$")
#: what the stub gives MemOS: one-letter names (no word of them can be a gold)
MESSAGES = [{"role": "user", "content": "a b"}]
REPLY = {"memory list": [{"key": "a", "memory_type": "UserMemory", "value": "b", "tags": ["c"]}], "summary": "d"}
DIMENSIONS = 8
#: seconds one empty build may take (MemOS's import is most of it)
BUILD_TIMEOUT_S = 600.0


def recipe() -> str:
    """How the list is made: this module and the worker (its settings shape the store)."""
    from mb_memos import _worker_client

    return sha256_parts(Path(p).read_bytes() for p in (__file__, _worker_client.WORKER))[:12]


def cache_path() -> Path:
    """Where the MemOS environment keeps its list (named by its store libraries' versions and the recipe)."""
    have = _env.versions(STORE_LIBRARIES)
    named = "-".join(f"{name}-{have.get(name)}" for name in STORE_LIBRARIES)
    return _env.python().parent.parent / "share" / "memorybench-memos" / f"store-words-{named}-{recipe()}.txt"


def store_words() -> str:
    """The prompt file's text: a header and the fixed words, one a line (module doc); made
    once per MemOS environment."""
    path = cache_path()
    if path.is_file():
        return path.read_text("utf-8")
    words = fixed_words(empty_store_texts(2))
    have = _env.versions(STORE_LIBRARIES)
    head = (
        "# the words every MemOS store holds, read from two empty stores MemOS made ("
        + ", ".join(f"{n} {have.get(n)}" for n in STORE_LIBRARIES)
        + "; mb_memos._store_words says how)"
    )
    text = head + "\n" + "\n".join(words) + "\n"
    try:  # another process may make it at the same time: the same text, replaced whole
        path.parent.mkdir(parents=True, exist_ok=True)
        part = path.with_name(f"{path.name}.{os.getpid()}.part")
        part.write_text(text, "utf-8")
        os.replace(part, path)
        for old in path.parent.glob("store-words-*.txt"):  # another version's or recipe's: never read again
            if old != path:
                old.unlink(missing_ok=True)
    except OSError:
        pass  # a read-only environment: made again next time
    return text


def fixed_words(stores: list[tuple[str, dict[str, str]]]) -> list[str]:
    """The words all `stores` hold ((root path, {relpath: text})), less those of their paths,
    the short ones and the hex-only ones (module doc)."""
    kept: set[str] | None = None
    for root, files in stores:
        words = {w for text in files.values() for w in WORD.findall(text.lower())}
        words -= set(WORD.findall(root.lower()))
        kept = words if kept is None else kept & words
    return sorted(w for w in kept or () if len(w) >= MIN_GOLD_LENGTH and not HEX_ONLY.match(w))


def empty_store_texts(count: int) -> list[tuple[str, dict[str, str]]]:
    """`count` empty stores built at once, each as (its root, {relpath: its text as verify reads it})."""
    from memorybench.llm.recording_proxy import RecordingProxy
    from memorybench.pack.verify.contamination import _text_of

    with (
        tempfile.TemporaryDirectory(prefix="mb-memos-empty-") as tmp,
        RecordingProxy(chat=_stub_chat, embed=_stub_embed) as proxy,
    ):
        roots = [Path(tmp) / f"store{n}" for n in range(count)]
        failed: list[str] = []
        threads = [threading.Thread(target=_build, args=(root, proxy, failed), daemon=True) for root in roots]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if failed:
            raise UserError(
                f"memory=memos: could not build an empty MemOS store to read its fixed words ({failed[0]}); "
                f"reinstall the plugin with `{_env.INSTALL}`"
            )
        return [
            (
                str(root),
                {p.relative_to(root).as_posix(): _text_of(p.read_bytes()) for p in sorted(root.rglob("*")) if p.is_file()},
            )
            for root in roots
        ]


def _build(root: Path, proxy: Any, failed: list[str]) -> None:
    """One empty store: the worker's open, build, search and dump, as a run does them (module doc)."""
    from mb_memos._worker_client import Worker, WorkerError, host_port

    root.mkdir(parents=True)
    with root.with_suffix(".log").open("w", encoding="utf-8") as log:  # MemOS's console, beside the store
        worker = Worker(_env.python(), log, lambda event: None)
        try:
            worker.request(
                "open",
                timeout=BUILD_TIMEOUT_S,
                store=str(root),
                base_url=proxy.base_url,
                api_key=proxy.api_key,
                endpoint=list(host_port(proxy.base_url)),
                dims=DIMENSIONS,
                collection="e",
                max_tokens=512,
                temperature=0.0,
            )
            task = {"label": "a", "user_id": "a", "session_id": "a", "messages": MESSAGES}
            worker.request("build", timeout=BUILD_TIMEOUT_S, tasks=[task])
            worker.request("search", timeout=BUILD_TIMEOUT_S, query="a", top_k=10)
            worker.request("dump", timeout=BUILD_TIMEOUT_S)
        except (UserError, WorkerError) as e:
            failed.append(" ".join(str(e).split())[:300])
        finally:
            worker.close()


def _stub_chat(body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    """MemOS's extraction gets one memory of one-letter fields."""
    return 200, {
        "id": "empty",
        "object": "chat.completion",
        "created": 0,
        "model": "empty",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": json.dumps(REPLY)}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }


def _stub_embed(body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    texts = body["input"] if isinstance(body.get("input"), list) else [body.get("input")]
    data = [{"object": "embedding", "index": i, "embedding": [1.0] + [0.0] * (DIMENSIONS - 1)} for i in range(len(texts))]
    return 200, {"object": "list", "data": data, "model": "empty", "usage": {"prompt_tokens": 1, "total_tokens": 1}}
