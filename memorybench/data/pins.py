"""Pinned third-party files: where they come from, their sha256, where they are cached.

The files are never committed. `memorybench fetch` downloads each from its repository at
its commit and verifies the hash; every reader goes through `pin_path`, which verifies the
hash again (once per process) and refuses a mismatch, printing both hashes.
Lookup order for the folder: `paths.pins` (passed in), `$MEMORYBENCH_PINS`, the user cache dir.
Fetching from another folder copies every verified file into the user cache dir as well, so
later commands find them without the variable.
"""

from __future__ import annotations

import io
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import platformdirs

from memorybench.errors import UserError
from memorybench.fs import write_atomic
from memorybench.hashing import sha256_bytes

PINS_ENV = "MEMORYBENCH_PINS"
_RAW = "https://raw.githubusercontent.com"


@dataclass(frozen=True)
class Pin:
    """One pinned file: its path inside the pins folder and its provenance."""

    relpath: str
    sha256: str
    repository: str
    commit: str
    source_path: str
    licence: str
    #: for files shipped inside a zip: the member name in the archive at `source_path`
    zip_member: str | None = None
    #: for a string taken out of a Python source file: which one (`_extract_literal`)
    literal: str | None = None

    @property
    def url(self) -> str:
        return f"{_RAW}/{self.repository}/{self.commit}/{self.source_path}"


MEM0_ACCURACY_PROMPT = Pin(
    relpath="prompts/mem0_accuracy_prompt.txt",
    sha256="62395dd312a631dfd9355026a0b69cc936018274c3198b6365b5c2a5c9bca9e0",
    repository="mem0ai/mem0",
    commit="ece7ff6b84b3e55336fcf2e17253b074d2d5166d",
    # extracted: the ACCURACY_PROMPT string literal of this file, exactly
    source_path="evaluation/metrics/llm_judge.py",
    licence="Apache-2.0",
)

# Mem0's answer prompts (the judge prompt's commit), each a Python string taken out of its
# source file at fetch time (`literal`): the value of a module-level assignment, or the
# system message of rag.py's one Chat Completions call (adjacent literals, concatenated)
_MEM0_COMMIT = "ece7ff6b84b3e55336fcf2e17253b074d2d5166d"
#: `Pin.literal` for the `content` of the `{"role": "system", ...}` dict in a source file
SYSTEM_CONTENT = "{role: system}.content"


def _mem0_prompt(relpath: str, sha256: str, source_path: str, literal: str) -> Pin:
    """One of Mem0's answer prompts: the string `literal` of `source_path` at the judge prompt's commit."""
    return Pin(
        relpath=relpath,
        sha256=sha256,
        repository="mem0ai/mem0",
        commit=_MEM0_COMMIT,
        source_path=source_path,
        licence="Apache-2.0",
        literal=literal,
    )


MEM0_ANSWER_PROMPT = _mem0_prompt(
    "prompts/mem0_answer_prompt.txt",
    "f3c786104816bba61d03b7f41c2be45009e6c8c296a04d9712ab1a59e4ae2399",
    "evaluation/prompts.py",
    "ANSWER_PROMPT",
)
MEM0_ANSWER_PROMPT_GRAPH = _mem0_prompt(
    "prompts/mem0_answer_prompt_graph.txt",
    "007fac5eb6722632c92b82701265ab8da2ab20bf8464423954a2f23fa459bff8",
    "evaluation/prompts.py",
    "ANSWER_PROMPT_GRAPH",
)
MEM0_RAG_PROMPT = _mem0_prompt(
    "prompts/mem0_rag_prompt.txt",
    "744495b77f2955d437017fd33a0b7156ef41426b7ae8277e5efb92382f234b78",
    "evaluation/src/rag.py",
    "PROMPT",
)
MEM0_RAG_SYSTEM = _mem0_prompt(
    "prompts/mem0_rag_system.txt",
    "0c6b92630ba4c22fd29e718d095abb2d6ffba10c04d00962e94bca4a65b23249",
    "evaluation/src/rag.py",
    SYSTEM_CONTENT,
)
MEM0_ANSWER_PINS = (MEM0_ANSWER_PROMPT, MEM0_ANSWER_PROMPT_GRAPH, MEM0_RAG_PROMPT, MEM0_RAG_SYSTEM)

_PUNKT = {
    "abbrev_types.txt": "92a3e070f43d9b4c5534758ca40ad7343b04e7e29bfe0c2eb658a39445a4f779",
    "collocations.tab": "8e2da1225e4dd2cc9dba261ee231ccb134859e21b46006e7f472c5ee269af0cf",
    "ortho_context.tab": "4bbcca25ed3d3f06c02402abf8419b9f033b8adc06e7b482eca4e45f81a5dc4c",
    "sent_starters.txt": "f3f8535483e1dba487241b764945168123bca3209a9645e59acd1225dc76edac",
}
PUNKT_TAB = tuple(
    Pin(
        relpath=f"nltk_data/tokenizers/punkt_tab/english/{name}",
        sha256=sha,
        repository="nltk/nltk_data",
        commit="gh-pages",
        source_path="packages/tokenizers/punkt_tab.zip",
        licence="Apache-2.0",
        zip_member=f"punkt_tab/english/{name}",
    )
    for name, sha in _PUNKT.items()
)

ALL_PINS: tuple[Pin, ...] = (
    MEM0_ACCURACY_PROMPT,
    *MEM0_ANSWER_PINS,
    *PUNKT_TAB,
)

_verified: set[Path] = set()


def pins_dir(configured: str | os.PathLike[str] | None = None) -> Path:
    """The pins folder: the configured one, else $MEMORYBENCH_PINS, else the user cache dir."""
    if configured:
        return Path(configured).expanduser().resolve()
    if os.environ.get(PINS_ENV):
        return Path(os.environ[PINS_ENV]).expanduser().resolve()
    return user_pins_dir()


def user_pins_dir() -> Path:
    """The user cache's pins folder: where every command looks when nothing else is set."""
    return Path(platformdirs.user_cache_dir("memorybench")) / "pins"


def pin_path(pin: Pin, configured: str | os.PathLike[str] | None = None) -> Path:
    """The verified local path of a pinned file; a missing or altered file is a UserError."""
    path = pins_dir(configured) / pin.relpath
    if path in _verified:
        return path
    if not path.is_file():
        raise UserError(f"pinned file {path} is missing; run `memorybench fetch` (or set {PINS_ENV} to a folder that has it)")
    actual = sha256_bytes(path.read_bytes())
    if actual != pin.sha256:
        raise UserError(f"pinned file {path} has sha256 {actual}, expected {pin.sha256}; delete it and run `memorybench fetch`")
    _verified.add(path)
    return path


def nltk_data_dir(configured: str | os.PathLike[str] | None = None) -> Path:
    """The folder to put on `nltk.data.path` (punkt_tab verified first)."""
    for pin in PUNKT_TAB:
        pin_path(pin, configured)
    return pins_dir(configured) / "nltk_data"


def _download(url: str) -> bytes:
    import urllib.request  # here: a command that reads the pins (show, verify) downloads nothing

    try:
        with urllib.request.urlopen(url, timeout=60) as response:  # noqa: S310 (fixed https URLs)
            return response.read()
    except OSError as e:
        raise UserError(f"could not download {url} ({e}); check the network or copy the file into the pins folder") from None


def _extract_accuracy_prompt(source: bytes) -> bytes:
    """The ACCURACY_PROMPT triple-quoted literal of mem0's llm_judge.py, byte for byte."""
    text = source.decode("utf-8")
    start_marker = 'ACCURACY_PROMPT = """'
    start = text.find(start_marker)
    end = text.find('"""', start + len(start_marker))
    if start < 0 or end < 0:
        raise UserError("mem0 llm_judge.py has no ACCURACY_PROMPT literal at the pinned commit; the pin is broken")
    return text[start + len(start_marker) : end].encode("utf-8")


def _extract_literal(source: bytes, literal: str, url: str) -> bytes:
    """The Python string `literal` names in a source file, as Python reads it (escapes and
    adjacent literals resolved): a module-level `NAME = "..."`, or SYSTEM_CONTENT."""
    import ast

    tree = ast.parse(source.decode("utf-8"))
    if literal == SYSTEM_CONTENT:
        for node in ast.walk(tree):
            if isinstance(node, ast.Dict):
                fields = {k.value: v for k, v in zip(node.keys, node.values) if isinstance(k, ast.Constant)}
                role, content = fields.get("role"), fields.get("content")
                if isinstance(role, ast.Constant) and role.value == "system" and isinstance(content, ast.Constant):
                    return str(content.value).encode("utf-8")
    else:
        for node in tree.body:
            if (
                isinstance(node, ast.Assign)
                and isinstance(node.value, ast.Constant)
                and isinstance(node.value.value, str)
                and any(isinstance(t, ast.Name) and t.id == literal for t in node.targets)
            ):
                return node.value.value.encode("utf-8")
    raise UserError(f"{url} has no {literal} string at the pinned commit; the pin is broken")


def fetch_pins(
    configured: str | os.PathLike[str] | None = None,
    *,
    log=print,
    cache: Path | None = None,
    extra: tuple[Pin, ...] = (),
    folders: tuple[Any, ...] = (),
) -> Path:
    """Download every pinned file that is missing, verify all of them, return the folder.

    With `cache` (the CLI passes `user_pins_dir()`) and a folder other than it, every verified
    file is copied there too, so later commands need neither `--pins` nor $MEMORYBENCH_PINS.
    `extra`: the benchmarks' own pins (the CLI passes every benchmark's: `memorybench.benchmark`,
    and with `--peers` their `peer_pins`, others' released results); `folders`, pinned folders
    (`data.folders.FolderPin`, a folder dataset's): their members fetched with the rest, then
    each folder verified as a whole (no member missing or altered, no other file in it)."""
    pins = tuple(dict.fromkeys((*ALL_PINS, *extra, *(m for f in folders for m in f.members))))
    root = pins_dir(configured)
    #: each source downloaded once (punkt_tab's zip, rag.py for two pins, gpt_utils.py for three)
    downloads: dict[str, bytes] = {}
    for pin in pins:
        target = root / pin.relpath
        if target.is_file() and sha256_bytes(target.read_bytes()) == pin.sha256:
            log(f"ok       {pin.relpath}")
            continue
        if pin.url not in downloads:
            downloads[pin.url] = _download(pin.url)
        source = downloads[pin.url]
        if pin.zip_member:
            import zipfile  # here: only a fetch of punkt_tab opens a zip

            data = zipfile.ZipFile(io.BytesIO(source)).read(pin.zip_member)
        elif pin is MEM0_ACCURACY_PROMPT:
            data = _extract_accuracy_prompt(source)
        elif pin.literal:
            data = _extract_literal(source, pin.literal, pin.url)
        else:
            data = source
        actual = sha256_bytes(data)
        if actual != pin.sha256:
            raise UserError(f"downloaded {pin.url} has sha256 {actual}, expected {pin.sha256}; refusing to store it")
        write_atomic(target, data)
        log(f"fetched  {pin.relpath}")
    for folder in folders:
        folder.verify(root)
        log(f"ok       {folder.relpath}/ ({len(folder.members)} files, verified as a whole: sha256 {folder.sha256[:12]}…)")
    if cache is not None and Path(cache).resolve() != root.resolve():
        _copy_into(root, Path(cache), pins, log=log)
    return root


def _copy_into(source: Path, cache: Path, pins: tuple[Pin, ...], *, log=print) -> None:
    """Copy the verified pins of `source` into the user cache (NLTK's punkt_tab among them),
    so later commands find them without $MEMORYBENCH_PINS; a file already right is kept."""
    copied = 0
    for pin in pins:
        target = cache / pin.relpath
        if target.is_file() and sha256_bytes(target.read_bytes()) == pin.sha256:
            continue
        data = (source / pin.relpath).read_bytes()
        if sha256_bytes(data) != pin.sha256:  # changed since the check above: refuse, as pin_path would
            raise UserError(f"pinned file {source / pin.relpath} changed while being copied; run `memorybench fetch` again")
        write_atomic(target, data)
        copied += 1
    log(f"copied   {copied} pinned file(s) into {cache} (later commands need no {PINS_ENV})")
