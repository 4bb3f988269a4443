"""One run's pack folder: journals, stored-once texts, atomic JSON files, `_SUCCESS` last.

Layout (DESIGN.md 4.4): `<packs>/<name>/runs/<run_id>/`. Journals are appended as work
happens; `resume()` makes a half-finished pack consistent again (torn lines dropped,
rows of unanswered questions dropped), so the final files equal an uninterrupted run's.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from memorybench.hashing import sha256_bytes, sha256_text
from memorybench.errors import UserError
from memorybench.pack.atomic import write_atomic
from memorybench.pack.journal import Journal
from memorybench.pack.journal_keys import JOURNAL_KEYS, repeated_rows
from memorybench.pack.schemas import Reference, ReferencePin
from memorybench.pack.success import write_success

SUCCESS = "_SUCCESS"


def pack_path(packs_root: str | os.PathLike[str], name: str, run_id: str) -> Path:
    return Path(packs_root).expanduser().resolve() / name / "runs" / run_id


def require_pack_folder(path: str | os.PathLike[str]) -> Path:
    """`path` as a folder that exists (an experiment folder holding one pack: that pack;
    `latest`: the newest), or a one-line UserError naming what it is instead."""
    from memorybench.pack.find import resolve_pack

    root = Path(resolve_pack(path)).expanduser()
    if root.is_file():
        raise UserError(f"{root} is a file, not a folder; pass a pack folder <packs>/<name>/runs/<run_id>")
    if not root.is_dir():
        raise UserError(f"pack folder {root} does not exist; pass <packs>/<name>/runs/<run_id>")
    return root.resolve()


class RunPack:
    def __init__(self, root: Path) -> None:
        self.root = root
        self._journals: dict[str, Journal] = {}
        #: relpath -> sha256 of the text this process stored there (`store_text`)
        self._stored: dict[str, str] = {}
        self.predictions = self.journal("predictions.jsonl")
        self.reader_traces = self.journal("reader/traces.jsonl")
        self.lineage = self.journal("memory/lineage.jsonl")
        self.memory_manifest = self.journal("memory/manifest.jsonl")

    def journal(self, relpath: str) -> Journal:
        """The append-only journal at `relpath` (one object per path)."""
        if relpath not in self._journals:
            self._journals[relpath] = Journal(self.path(relpath))
        return self._journals[relpath]

    @property
    def journals(self) -> tuple[Journal, ...]:
        return tuple(self._journals.values())

    # -- state -----------------------------------------------------------------------
    def is_complete(self) -> bool:
        return (self.root / SUCCESS).exists()

    def open(self) -> None:
        try:
            self.root.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise UserError(
                f"cannot create pack folder {self.root} ({e.strerror}); set paths.packs to a writable folder"
            ) from None

    def resume(self) -> tuple[set[str], set[str]]:
        """Make every journal consistent; return (answered question ids, built sample ids).

        The commit points are a prediction row (a question) and a memory manifest row (a
        conversation's memory). Every other journal row that carries a `question_id` is
        kept only if that question was answered, else (none, or a null one: a build's row)
        one that carries a `sample_id` only if that conversation's memory was built: work cut
        off by a kill is redone whole.
        """
        for path in sorted(self.root.rglob("*.jsonl")):
            relpath = str(path.relative_to(self.root))
            if not relpath.startswith("autorater/"):  # a later stage's files are not ours
                self.journal(relpath).recover()
        answered: set[str] = set()
        duplicates: set[str] = set()
        for row in self.predictions.rows():
            (duplicates if row["question_id"] in answered else answered).add(row["question_id"])
        if duplicates:
            raise UserError(
                f"pack {self.root} has duplicated prediction rows ({sorted(duplicates)[:3]}); run `memorybench verify` on it"
            )
        built = {row["sample_id"] for row in self.memory_manifest.rows()}

        def keep(row: dict[str, Any]) -> bool:
            # a null question_id is a build's row (a wrapped library's embedding call while it
            # builds): it stands or falls with its conversation's memory
            if row.get("question_id") is not None:
                return row["question_id"] in answered
            if "sample_id" in row:
                return row["sample_id"] in built
            return True

        for journal in self.journals:
            if journal not in (self.predictions, self.memory_manifest):
                journal.retain(keep)
        # what is kept holds each key once, unless two writers wrote at once (the pack lock,
        # memorybench.pack.lock, stops that; an older pack may hold such rows): never build on them
        for relpath, fields in JOURNAL_KEYS.items():
            if (self.root / relpath).is_file():
                for repeat in repeated_rows(enumerate(self.journal(relpath).rows(), start=1), fields):
                    raise UserError(
                        f"pack {self.root} is inconsistent: {relpath} {repeat.describe()}; run `memorybench verify` on it"
                    )
        return answered, built

    def close(self) -> None:
        for journal in self.journals:
            journal.close()

    # -- files -----------------------------------------------------------------------
    def path(self, relpath: str) -> Path:
        """The file at `relpath` in the pack; a path that leads outside the pack (`..`, an
        absolute path, a link out) is refused before anything is written."""
        target = self.root / relpath
        root = self.root.resolve()
        if not target.resolve().is_relative_to(root):
            raise UserError(f"pack path {relpath!r} leads outside the pack {root}; nothing was written there")
        return target

    def write_bytes(self, relpath: str, data: bytes) -> Path:
        return write_atomic(self.path(relpath), data)

    def write_text(self, relpath: str, text: str) -> Path:
        return self.write_bytes(relpath, text.encode("utf-8"))

    def write_json(self, relpath: str, record: BaseModel | dict[str, Any]) -> Path:
        if isinstance(record, BaseModel):
            text = json.dumps(record.model_dump(mode="json", by_alias=True), indent=2, ensure_ascii=False)
        else:
            text = json.dumps(record, indent=2, ensure_ascii=False)
        return self.write_text(relpath, text + "\n")

    def store_text(self, text: str, relpath: str | None = None) -> tuple[str, str]:
        """Store a (large, repeated) string once; return (sha256, path in the pack)."""
        sha = sha256_text(text)  # a memory is stored for every question: its hash is remembered
        relpath = relpath or f"blobs/{sha}.txt"
        if self._stored.get(relpath) == sha:  # this process wrote or found it, whole, already
            return sha, relpath
        data = text.encode("utf-8")
        target = self.path(relpath)
        if not (target.exists() and target.stat().st_size == len(data)):
            self.write_bytes(relpath, data)
        self._stored[relpath] = sha
        return sha, relpath

    def mark_success(self) -> None:
        """Create `_SUCCESS` once, the last file of a finished pack: the sha256 of every
        other file (`memorybench.pack.success`), so the pack is checked by content."""
        write_success(self.root)

    # -- references ------------------------------------------------------------------
    def reference_pin(self) -> ReferencePin:
        """Every `ref` used by a trace, mapped to the file that holds its text (verified)."""
        locations: dict[str, str] = {}
        for row in self.memory_manifest.rows():
            if row.get("memory_sha256") and row.get("memory_path"):
                locations[row["memory_sha256"]] = row["memory_path"]
        refs: dict[str, Reference] = {}
        for row in self.reader_traces.rows():
            for slot in row["request"]["slots"].values():
                sha = slot.get("ref")
                if not sha or sha in refs:
                    continue
                relpath = locations.get(sha, f"blobs/{sha}.txt")
                data = (self.root / relpath).read_bytes()
                if sha256_bytes(data) != sha:
                    raise UserError(f"pack {self.root}: {relpath} does not hash to {sha}; the pack was altered")
                refs[sha] = Reference(path=relpath, bytes=len(data))
        return ReferencePin(refs=dict(sorted(refs.items())))
