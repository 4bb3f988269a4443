"""What every check of `verify_pack` reads: the pack's layout, its files, and what earlier checks parsed.

The checks run in a fixed order (`memorybench.pack.verify.CHECKS`); each reads the
`Context` and adds to the `Findings`. The first ones parse the pack's records into the
context (run_meta, the journals, the config, the dataset); the later ones rely on them.
A file whose JSON or schema is a finding is in `bad_files`: checks that would repeat that
finding from its rows skip it.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from memorybench.errors import UserError
from memorybench.pack import layout
from memorybench.pack.budget import BudgetSummary
from memorybench.pack.provenance_record import CloudRunProvenance
from memorybench.pack.schemas import LineageRow, MemoryManifestRow, Prediction, ReaderTrace, ReferencePin, RunMeta
from memorybench.pack.verify.needles import Needles
from memorybench.secrets import MIN_SECRET_LENGTH  # shorter values are not searched for: they would match anywhere

__all__ = ["Context", "local_pack", "pack_location", "pack_root"]

#: Files a finished pack always has (reader/traces.jsonl only when the answerer is the reader).
REQUIRED_FILES = (
    "config.resolved.yaml",
    layout.RUN_META,
    "predictions.jsonl",
    "predictions.csv",
    "metrics.json",
    "REFERENCE_PIN.json",
    "TRACE.md",
    "memory/manifest.jsonl",
    "memory/lineage.jsonl",
)
#: Files whose presence makes a folder a pack at all.
PACK_MARKERS = (layout.RUN_META, "predictions.jsonl", "config.resolved.yaml", layout.SUCCESS)
KNOWN_JSONL: dict[str, type[BaseModel]] = {
    "predictions.jsonl": Prediction,
    "reader/traces.jsonl": ReaderTrace,
    "memory/lineage.jsonl": LineageRow,
    "memory/manifest.jsonl": MemoryManifestRow,
}
KNOWN_JSON: dict[str, type[BaseModel] | str | tuple[str, ...]] = {
    layout.RUN_META: RunMeta,
    "REFERENCE_PIN.json": ReferencePin,
    # metrics.v2 (`memorybench.score.score_record`) since benchmarks own their scores; older packs'
    # metrics.v1 still verifies, against a rescore in its own shape
    "metrics.json": ("metrics.v2", "metrics.v1"),
    # the retrieval budget a run held, when it set one: validated and recomputed by `budget.check_budget`
    layout.MEMORY_BUDGET: BudgetSummary,
}
#: Records a launcher adds to a pack it published, checked when present.
PROVENANCE_RECORDS: dict[str, type[BaseModel]] = {
    "provenance/cloudrun.json": CloudRunProvenance,
}
#: Folders whose unknown JSON/JSONL files are accepted when every row carries `schema`, and
#: such a file at the top of a pack: estimate.json (memorybench.estimate, written when a run starts).
OPEN_FOLDERS = ("autorater/", "agent/", "memory/", "estimate.json")
#: The agent's own files: not pack records, so no schema is asked of them (gold is scanned).
WORKSPACES = "agent/workspaces/"
#: A wrapped library's own store (a Qdrant folder, a Kùzu database, a Chroma folder) in its own
#: format: `memory/library_stores/<method>/<sample_id>/` (plugins/; still scanned for gold).
LIBRARY_STORES = "memory/library_stores/"
#: Folders of files that are not pack records: workspaces, the judge's response cache
#: (`judge.cache=true` keeps content-addressed ChatResult files under autorater/cache/) and
#: the wrapped libraries' stores.
NOT_RECORDS = (WORKSPACES, "autorater/cache/", LIBRARY_STORES)
#: Every writer call of a run: its request is scanned for gold, its reply is model output.
WRITER_CALLS = "memory/writer/calls.jsonl"
#: The agent's notes snapshots (`<sample>.ingest.md` after ingest, `<question id>.md` after
#: each question) and their ledger: a folder the agent writes, so scanned for gold too.
AGENT_NOTES = "agent/notes"
#: Folders whose files are scanned for gold strings besides the reader prompts.
GOLD_SCANNED = ("memory/", "writer/", WORKSPACES, AGENT_NOTES)


@dataclass
class Context:
    """One pack under check: its files, and the records the checks parsed so far."""

    root: Path
    pins_dir: str | os.PathLike[str] | None
    #: exact credential values to search for (each at least MIN_SECRET_LENGTH long)
    secrets: list[str]
    #: every file of the pack, sorted, and its relative `/`-separated path
    files: list[Path] = field(default_factory=list)
    rel: dict[Path, str] = field(default_factory=dict)
    #: files with json/schema problems: dependent checks skip them
    bad_files: set[str] = field(default_factory=set)

    # -- parsed by the record checks (structure) -----------------------------------------
    meta: dict[str, Any] | None = None
    pin: dict[str, Any] | None = None
    metrics_doc: dict[str, Any] | None = None
    #: the rows of each KNOWN_JSONL file that match their schema: (line, row)
    rows: dict[str, list[tuple[int, dict[str, Any]]]] = field(default_factory=dict)
    # -- provenance ----------------------------------------------------------------------
    #: config.resolved.yaml as plain data (`pack.resolved_config`)
    cfg: Any = None
    memory_name: str | None = None
    #: the dataset's conversations (None: not available, or its hash is wrong)
    conversations: Any = None
    #: relpath under prompts/ -> text, for prompt files that hash right
    templates: dict[str, str] = field(default_factory=dict)
    # -- counts --------------------------------------------------------------------------
    #: the run's questions, in file order (None without the dataset)
    questions: list[Any] | None = None
    question_text: dict[str, str] = field(default_factory=dict)
    # -- hashes --------------------------------------------------------------------------
    #: sha256 -> text of every REFERENCE_PIN entry whose file hashes to its key
    ref_texts: dict[str, str] = field(default_factory=dict)
    #: memory file -> sample id, from the manifest
    dump_samples: dict[str, str] = field(default_factory=dict)
    #: sample id -> question-independent memory sha256, from the manifest
    manifest_sha: dict[str, str] = field(default_factory=dict)
    # -- contamination -------------------------------------------------------------------
    needles: Needles | None = None
    #: per sample id, (line number, lowercased reply) of its writer calls
    writer_output: dict[str | None, list[tuple[int, str]]] = field(default_factory=dict)

    @classmethod
    def open(cls, root: Path, pins_dir: str | os.PathLike[str] | None, secrets: Iterable[str]) -> Context:
        ctx = cls(root, pins_dir, sorted({s for s in secrets if s and len(s.strip()) >= MIN_SECRET_LENGTH}))
        ctx.files = sorted(p for p in root.rglob("*") if p.is_file())
        ctx.rel = {p: p.relative_to(root).as_posix() for p in ctx.files}
        return ctx

    def cfg_get(self, group: str, key: str) -> Any:
        """`cfg[group][key]` of config.resolved.yaml, None when either is absent."""
        if self.cfg is None:
            return None
        node = self.cfg.get(group) if hasattr(self.cfg, "get") else None
        return node.get(key) if node is not None and hasattr(node, "get") else None

    def inside(self, relpath: str) -> Path | None:
        """The file a recorded relative path names, or None when it would leave the pack."""
        path = (self.root / relpath).resolve()
        return path if path.is_relative_to(self.root) else None


def pack_root(path: str | os.PathLike[str]) -> Path:
    """The folder as a pack root; a UserError when it is not a pack at all."""
    if str(path).startswith("gs://"):
        raise UserError(f"{path} is in a bucket; read it with `local_pack` (verify_pack does), which downloads it first")
    from memorybench.pack.find import resolve_pack  # an experiment folder with one pack, `latest`

    root = Path(resolve_pack(path, refuse_several=False)).expanduser()
    if not root.exists():
        raise UserError(f"pack folder {root} does not exist; pass a pack folder <packs>/<name>/runs/<run_id>")
    if not root.is_dir():
        raise UserError(f"{root} is a file, not a pack folder; pass a pack folder <packs>/<name>/runs/<run_id>")
    if not any((root / m).exists() for m in PACK_MARKERS):
        runs = sorted(p for p in (root / "runs").glob("*") if p.is_dir()) if (root / "runs").is_dir() else []
        hint = (
            f"; it holds {len(runs)} pack(s) under runs/: pass them (e.g. {root}/runs/*)"
            if runs
            else "; pass a pack folder <packs>/<name>/runs/<run_id>"
        )
        raise UserError(f"{root} is not a pack: it has none of {', '.join(PACK_MARKERS)}{hint}")
    return root.resolve()


def pack_location(path: str | os.PathLike[str]) -> str:
    """How findings name the pack: a `gs://` URI as given (no trailing `/`), else the resolved folder."""
    text = str(path)
    return text.rstrip("/") if text.startswith("gs://") else str(pack_root(path))


@contextmanager
def local_pack(path: str | os.PathLike[str]) -> Iterator[Path]:
    """The pack at `path` as a local folder: a local pack itself, or a `gs://` pack
    downloaded into a temporary folder (removed afterwards).

    A pack in a bucket is checked on a byte-exact copy (the client checks each object's
    checksum): verify reads files by content only, so the copy is as good as the original.
    """
    text = str(path)
    if not text.startswith("gs://"):
        yield pack_root(path)
        return
    from memorybench.storage import open_storage

    uri = text.rstrip("/")
    storage = open_storage(uri)
    if not any(storage.exists(m) for m in PACK_MARKERS):
        # cheap checks before any download: a folder of packs, or nothing at all
        runs = sorted({rel.split("/")[1] for rel in storage.list("runs/") if rel.count("/") >= 2})
        if runs:
            raise UserError(
                f"{uri} is not a pack: it holds {len(runs)} pack(s) under runs/: pass them (e.g. {uri}/runs/{runs[0]})"
            )
        if not storage.list(""):
            raise UserError(f"{uri} does not exist (no object under it); pass a pack gs://BUCKET/PREFIX/<name>/runs/<run_id>")
        raise UserError(
            f"{uri} is not a pack: it has none of {', '.join(PACK_MARKERS)}; pass gs://BUCKET/PREFIX/<name>/runs/<run_id>"
        )
    with tempfile.TemporaryDirectory(prefix="memorybench-verify-") as tmp:
        storage.download_dir("", tmp)
        yield pack_root(tmp)
