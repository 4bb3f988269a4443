"""The words every store of a library holds whatever its conversation, read from empty stores
the installed library makes: a prompt file of the pack (`library_prompts` of the method).

verify scans the pack's store (`memory/library_stores/<method>/`) for gold strings, a binary
file by its runs of text. A library's store holds text of its own in every conversation (its
databases' schemas and rows, its format strings, its log's fixed lines), and some of those
words are LoCoMo golds of other conversations. As a prompt file of the pack, verify reads them
as the library's text, and any other word of the store is still scanned.

A plugin whose library runs in an environment of its own (`memorybench.memory.venv_worker`)
says how its worker makes an empty store (`EmptyStores`: what `open` needs, the commands
after it, the stub model's reply); the rest is the same for every library:

- How they are found (`EmptyStores.store_texts`, `fixed_words`): two stores are built at once
  in a temporary folder, each by a worker of the library's environment (the same `open` and
  commands as a run), over one document of one-letter words. Their model and embedder is a
  stub on 127.0.0.1 (the plugin's reply, in one-letter words; `stub_embed`: one unit vector
  for every text), so no text of a conversation and no word of a model reaches either store.
  Each store's files (but the folders a plugin names `unread`) are read as verify reads them
  (`memorybench.pack.verify.contamination._text_of`) and cut into words (`WORD`: letters,
  joined by `_` or `.`). A word is kept when both stores hold it (ids, salts and timestamps
  differ between the two builds), it has at least `MIN_GOLD_LENGTH` characters (a shorter
  one holds no gold), it is not made of hex letters only (a piece of an id), and it is not a
  word of the temporary folder's path. What is left: one word a line, sorted, under a header.
  A gold that spans two of these words, or any other text of a store, is still a finding.
- Where they are kept (`EmptyStores.text`, `cache_path`): a few kept words are a fixed word
  glued to a byte of the layout beside it (`...qcreate`: a SQLite table's first page), and
  which ones differs a little from one making to the next. So the list is made once per
  environment (the plugin's `install.sh` makes it; else the first run does) and kept there
  (`share/memorybench-<method>/`), named by the store libraries' versions and the recipe
  (the sha256 of this module, the plugin's module and its worker, whose settings shape the
  store); each pack holds the copy its run read (prompts/, hashed in run_meta.json), and
  verify reads that copy.
"""

from __future__ import annotations

import json
import re
import sys
import tempfile
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memorybench.errors import UserError
from memorybench.fs import write_atomic
from memorybench.hashing import sha256_parts
from memorybench.memory.venv_worker import VenvLibrary, Worker, WorkerError, host_port
from memorybench.pack.verify.needles import MIN_GOLD_LENGTH

#: a word of the store's text: letters, joined by `_` or `.` (`lance.encodings.columnencoding`)
WORD = re.compile(r"[a-z]+(?:[_.][a-z]+)*")
HEX_ONLY = re.compile(r"^[a-f_.]+$")
#: the stub embedder's dimensions
DIMENSIONS = 8
#: seconds one empty build may take (the library's import is most of it)
BUILD_TIMEOUT_S = 600.0


@dataclass(frozen=True)
class EmptyStores:
    """How a library's worker makes an empty store, and the words such stores hold (module doc)."""

    library: VenvLibrary
    #: the plugin's module that says how (`mb_cognee._store_words`): named in the header, its source in the recipe
    module: str
    #: the libraries whose files the store holds (their versions name the cached list)
    store_libraries: tuple[str, ...]
    #: the stub model's reply to a chat request (its JSON object, one-letter words)
    reply: Callable[[dict[str, Any]], dict[str, Any]]
    #: the worker's commands after `open`, over one empty store (`worker.request(...)`, each within the timeout given)
    commands: Callable[[Worker, float], None]
    #: what the worker's `open` needs besides the store, the stub endpoint and the writer's settings
    open_fields: Mapping[str, Any] = field(default_factory=dict)
    #: top-level folders of a store left unread (cognee's `data/`: the document itself)
    unread: tuple[str, ...] = ()

    def recipe(self) -> str:
        """How the list is made: this module, the plugin's and its worker (its settings shape the store)."""
        plugin = sys.modules[self.module].__file__
        return sha256_parts(Path(p).read_bytes() for p in (__file__, str(plugin), self.library.script))[:12]

    def cache_path(self) -> Path:
        """Where the environment keeps its list (named by its store libraries' versions and the recipe)."""
        have = self.library.versions(self.store_libraries)
        named = "-".join(f"{name}-{have.get(name)}" for name in self.store_libraries)
        share = self.library.python().parent.parent / "share" / f"memorybench-{self.library.method}"
        return share / f"store-words-{named}-{self.recipe()}.txt"

    def text(self) -> str:
        """The prompt file's text: a header and the fixed words, one a line (module doc); made
        once per environment."""
        path = self.cache_path()
        if path.is_file():
            return path.read_text("utf-8")
        words = fixed_words(self.store_texts(2))
        have = self.library.versions(self.store_libraries)
        title = self.library.title
        head = (
            f"# the words every {title} store holds, read from two empty stores {title} made ("
            + ", ".join(f"{n} {have.get(n)}" for n in self.store_libraries)
            + f"; {self.module} says how)"
        )
        text = head + "\n" + "\n".join(words) + "\n"
        try:  # another process may make it at the same time: the same text, replaced whole
            write_atomic(path, text)
            for old in path.parent.glob("store-words-*.txt"):  # another version's or recipe's: never read again
                if old != path:
                    old.unlink(missing_ok=True)
        except OSError:
            pass  # a read-only environment: made again next time
        return text

    def store_texts(self, count: int) -> list[tuple[str, dict[str, str]]]:
        """`count` empty stores built at once, each as (its root, {relpath: its text as verify reads it})."""
        from memorybench.llm.recording_proxy import RecordingProxy
        from memorybench.pack.verify.contamination import _text_of

        with (
            tempfile.TemporaryDirectory(prefix=f"mb-{self.library.method}-empty-") as tmp,
            RecordingProxy(chat=self._stub_chat, embed=stub_embed) as proxy,
        ):
            roots = [Path(tmp) / f"store{n}" for n in range(count)]
            failed: list[str] = []
            threads = [threading.Thread(target=self._build, args=(root, proxy, failed), daemon=True) for root in roots]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            if failed:
                raise UserError(
                    f"memory={self.library.method}: could not build an empty {self.library.title} store to read its fixed "
                    f"words ({failed[0]}); reinstall the plugin with `{self.library.install}`"
                )
            return [
                (
                    str(root),
                    {
                        p.relative_to(root).as_posix(): _text_of(p.read_bytes())
                        for p in sorted(root.rglob("*"))
                        if p.is_file() and p.relative_to(root).parts[0] not in self.unread
                    },
                )
                for root in roots
            ]

    def _build(self, root: Path, proxy: Any, failed: list[str]) -> None:
        """One empty store: the worker's `open` and the plugin's commands, as a run does them."""
        root.mkdir(parents=True)
        with root.with_suffix(".log").open("w", encoding="utf-8") as log:  # the library's console, beside the store
            worker = Worker(self.library, log, lambda event: None)
            try:
                worker.request(
                    "open",
                    timeout=BUILD_TIMEOUT_S,
                    store=str(root),
                    base_url=proxy.base_url,
                    api_key=proxy.api_key,
                    endpoint=list(host_port(proxy.base_url)),
                    dims=DIMENSIONS,
                    max_tokens=512,
                    temperature=0.0,
                    **self.open_fields,
                )
                self.commands(worker, BUILD_TIMEOUT_S)
            except (UserError, WorkerError) as e:
                failed.append(" ".join(str(e).split())[:300])
            finally:
                worker.close()

    def _stub_chat(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        return 200, {
            "id": "empty",
            "object": "chat.completion",
            "created": 0,
            "model": "empty",
            "choices": [
                {"index": 0, "message": {"role": "assistant", "content": json.dumps(self.reply(body))}, "finish_reason": "stop"}
            ],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        }


def fixed_words(stores: list[tuple[str, dict[str, str]]]) -> list[str]:
    """The words all `stores` hold ((root path, {relpath: text})), less those of their paths,
    the short ones and the hex-only ones (module doc)."""
    kept: set[str] | None = None
    for root, files in stores:
        words = {w for text in files.values() for w in WORD.findall(text.lower())}
        words -= set(WORD.findall(root.lower()))
        kept = words if kept is None else kept & words
    return sorted(w for w in kept or () if len(w) >= MIN_GOLD_LENGTH and not HEX_ONLY.match(w))


def stub_embed(body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    """One unit vector for every text (a search over an empty store finds what it holds)."""
    texts = body["input"] if isinstance(body.get("input"), list) else [body.get("input")]
    data = [{"object": "embedding", "index": i, "embedding": [1.0] + [0.0] * (DIMENSIONS - 1)} for i in range(len(texts))]
    return 200, {"object": "list", "data": data, "model": "empty", "usage": {"prompt_tokens": 1, "total_tokens": 1}}
