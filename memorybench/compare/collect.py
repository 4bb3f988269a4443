"""The `collect-full` stage: every file of a design's packs in one folder, repeats stored once.

    collected_full/
      REFERENCE_PIN.json        how to put every original file back (schema collected_pin.v1)
      blobs/<sha[:2]>/<sha256>  content-addressed bytes, each stored once

Three kinds of repetition are removed, all by sha256 of the bytes:

* identical files across packs (memory dumps of the same conversation, prompt templates,
  workspace files): one blob per distinct file content;
* long JSON string values inside `.json`/`.jsonl` files (a memory text or task prefix
  written inline in every trace line): each string body of at least `min_string_bytes`
  bytes is cut out of the file, leaving a *skeleton* blob plus *holes*;
* shared prefixes of those long strings (the same instructions followed by a different
  question): a string body is cut into content-defined chunks at its `\\n` escapes (a
  cut falls after a line whose crc32 is divisible by 4, once the chunk holds at least
  512 bytes), so two strings with a common prefix share the chunks of that prefix.

Restoring is plain concatenation, so it is byte-exact by construction, and every
restored file is checked against the sha256 recorded for it. A file entry in the pin is
either `{"sha256", "bytes", "blob"}` (the blob is the file) or `{"sha256", "bytes",
"recipe"}`: the recipe blob is JSON `{"skeleton": SHA, "holes": [[POS, [SHA, ...]], ...]}`;
the file is the skeleton with, at each byte offset POS of the skeleton (ascending), the
concatenated chunk blobs inserted.

Only finished packs are read (as `aggregate` does), through `PackReader`: a source may be
a local folder or a `gs://` prefix; the collected folder is local.
"""

from __future__ import annotations

import json
import os
import re
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memorybench.errors import OneLineParser, UserError
from memorybench.fs import LinkRefused, folder_within, write_atomic
from memorybench.hashing import sha256_bytes
from memorybench.pack.reader import PackReader
from memorybench.storage import LocalStorage
from memorybench.compare.aggregate import Location, experiment_packs, scan_packs

__all__ = [
    "COLLECTED_FULL_DIR",
    "CollectResult",
    "collect_full",
    "collect_main",
    "restore_collected",
    "restore_file",
]

COLLECTED_FULL_DIR = "collected_full"
PIN = "REFERENCE_PIN.json"
PIN_SCHEMA = "collected_pin.v1"
RECIPE_SCHEMA = "collected_recipe.v1"
MIN_STRING_BYTES = 256
MIN_CHUNK_BYTES = 512
MAX_CHUNK_BYTES = 64 * 1024
_JSON_STRING = re.compile(rb'"([^"\\]*(?:\\.[^"\\]*)*)"', re.DOTALL)
_ESCAPED_NEWLINE = re.compile(rb"\\n")
HOW_TO_RESTORE = (
    "For each pack in `packs`, for each (relpath, entry) in `files`: if the entry has `blob`, the file's bytes are "
    "blobs/<blob[:2]>/<blob>; if it has `recipe`, read that blob as JSON {skeleton, holes}: the file is the skeleton "
    "blob's bytes with, at each byte offset POS of the skeleton (holes are in ascending POS), the bytes of the listed "
    "chunk blobs concatenated and inserted. The sha256 of the result is `sha256` and its length `bytes`. Write it to "
    "<restore root>/<pack path>/<relpath>. memorybench.compare.collect.restore_collected does exactly this."
)


def _blob_relpath(sha: str) -> str:
    return f"blobs/{sha[:2]}/{sha}"


class _BlobStore:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.known: set[str] = set()
        self.written_bytes = 0
        self.reused = 0

    def put(self, data: bytes) -> str:
        sha = sha256_bytes(data)
        if sha in self.known:
            self.reused += 1
            return sha
        target = self.root / _blob_relpath(sha)
        if not (target.is_file() and target.stat().st_size == len(data)):
            write_atomic(target, data)
            self.written_bytes += len(data)
        self.known.add(sha)
        return sha


def _chunks(body: bytes) -> list[bytes]:
    """Content-defined chunks of a long string body, cut after `\\n` escapes."""
    chunks: list[bytes] = []
    start = last = 0
    for match in _ESCAPED_NEWLINE.finditer(body):
        end = match.end()
        line = body[last:end]
        last = end
        size = end - start
        if (size >= MIN_CHUNK_BYTES and zlib.crc32(line) % 4 == 0) or size >= MAX_CHUNK_BYTES:
            chunks.append(body[start:end])
            start = end
    if start < len(body):
        chunks.append(body[start:])
    return chunks


def _recipe(data: bytes, store: _BlobStore, min_string_bytes: int) -> dict[str, Any] | None:
    """Skeleton + holes for a JSON text with long string values; None when it has none."""
    skeleton = bytearray()
    holes: list[list[Any]] = []
    last = 0
    for match in _JSON_STRING.finditer(data):
        body_start, body_end = match.span(1)
        if body_end - body_start < min_string_bytes:
            continue
        skeleton += data[last:body_start]
        holes.append([len(skeleton), [store.put(c) for c in _chunks(data[body_start:body_end])]])
        last = body_end
    if not holes:
        return None
    skeleton += data[last:]
    return {"schema": RECIPE_SCHEMA, "skeleton": store.put(bytes(skeleton)), "holes": holes}


def _pack_path(pack: PackReader) -> str:
    """`<name>/runs/<run_id>`: where the pack lies under its packs root."""
    parts = pack.uri().rstrip("/").split("/")
    return "/".join(parts[-3:]) if len(parts) >= 3 and parts[-2] == "runs" else pack.name


@dataclass
class CollectResult:
    out_dir: Path
    pin: Path
    packs: list[Location]
    files: int
    original_bytes: int
    stored_bytes: int
    blobs: int
    unfinished: list[Location] = field(default_factory=list)

    @property
    def ratio(self) -> float:
        return self.stored_bytes / self.original_bytes if self.original_bytes else 1.0


def collect_full(
    sources: Sequence[str | os.PathLike[str]],
    out_dir: str | os.PathLike[str],
    *,
    experiment: str | None = None,
    min_string_bytes: int = MIN_STRING_BYTES,
) -> CollectResult:
    """One collected pack of every finished pack in `sources` under `<out_dir>/collected_full/`."""
    scan = scan_packs(sources)
    packs = experiment_packs(scan.finished, experiment)
    if not packs:
        raise UserError(f"no finished pack in {', '.join(map(str, sources))}: a pack is finished when it has _SUCCESS")
    out = Path(out_dir).expanduser().resolve() / COLLECTED_FULL_DIR
    out.mkdir(parents=True, exist_ok=True)
    store = _BlobStore(out)
    entries = []
    paths_seen: set[str] = set()
    original = files = 0
    for location in packs:
        pack = PackReader.open(location)
        meta = pack.meta()
        path = _pack_path(pack)
        if path in paths_seen:
            raise UserError(f"two packs would restore to {path}; collect them in separate designs")
        paths_seen.add(path)
        listing: dict[str, Any] = {}
        for relpath in pack.files():
            data = pack.read_bytes(relpath)
            entry: dict[str, Any] = {"sha256": sha256_bytes(data), "bytes": len(data)}
            recipe = _recipe(data, store, min_string_bytes) if relpath.endswith((".jsonl", ".json")) else None
            if recipe is None:
                entry["blob"] = store.put(data)
            else:
                entry["recipe"] = store.put(json.dumps(recipe, separators=(",", ":")).encode("utf-8"))
            listing[relpath] = entry
            original += len(data)
            files += 1
        entries.append(
            {
                "path": path,
                "source": str(location),
                "experiment": meta.name,
                "run_id": meta.run_id,
                "config_sha256": meta.config_sha256,
                "files": listing,
            }
        )
    blob_bytes = sum(p.stat().st_size for sha in store.known for p in [out / _blob_relpath(sha)])
    pin = {
        "schema": PIN_SCHEMA,
        "how_to_restore": HOW_TO_RESTORE,
        "blob_path": "blobs/<sha256[:2]>/<sha256>",
        "packs": entries,
        "stats": {
            "packs": len(packs),
            "files": files,
            "original_bytes": original,
            "blobs": len(store.known),
            "blob_bytes": blob_bytes,
        },
    }
    text = json.dumps(pin, indent=1, ensure_ascii=False) + "\n"
    write_atomic(out / PIN, text)  # last: a collected folder is whole once its pin is there
    stored = blob_bytes + len(text.encode("utf-8"))
    return CollectResult(out, out / PIN, packs, files, original, stored, len(store.known), scan.unfinished)


# -- restoring --------------------------------------------------------------------------
# A collected folder may come from someone else: its pin and blobs are read through
# `PackReader` (never through a link, regular files only), and every file is written
# under --to, refusing a pin path that leaves it and any link on the way down.
_SHA = re.compile(r"[0-9a-f]{64}")


class _CollectedReader(PackReader):
    """A collected_full folder, read as a pack is (`O_NOFOLLOW`), with its own fix in errors."""

    KIND = "a collected folder"

    def _check_hint(self) -> str:
        return f"collect the packs again (`memorybench collect-full`) instead of {self.uri()}"

    def _missing_hint(self) -> str:
        return f"the collected folder {self.uri()} is incomplete or was altered; collect the packs again"


def _load_pin(collected: Path) -> dict[str, Any]:
    root = collected if os.path.lexists(collected / PIN) else collected / COLLECTED_FULL_DIR
    if not root.is_dir() or not os.path.lexists(root / PIN):
        raise UserError(f"{collected} has no {PIN}; pass the collected_full folder that collect-full wrote")
    reader = _CollectedReader(LocalStorage(str(root.resolve())))
    try:
        pin = json.loads(reader.read_bytes(PIN))
    except ValueError:
        raise UserError(f"{reader.uri(PIN)} is not valid JSON; pass the collected_full folder that collect-full wrote") from None
    if not isinstance(pin, dict) or pin.get("schema") != PIN_SCHEMA:
        schema = pin.get("schema") if isinstance(pin, dict) else None
        raise UserError(f"{reader.uri(PIN)} has schema {schema!r}, expected {PIN_SCHEMA!r}")
    pin["_root"] = reader
    return pin


def _blob(root: PackReader, sha: Any) -> bytes:
    if not isinstance(sha, str) or not _SHA.fullmatch(sha):
        raise UserError(f"{root.uri(PIN)} names a blob {str(sha)[:80]!r} that is no sha256; the collected folder was altered")
    return root.read_bytes(_blob_relpath(sha))


def restore_file(root: str | os.PathLike[str] | PackReader, entry: dict[str, Any]) -> bytes:
    """The original bytes of one file entry of the pin (checked against its sha256); every
    blob read through `PackReader` (never through a link)."""
    if not isinstance(root, PackReader):
        root = _CollectedReader(LocalStorage(str(Path(root).resolve())))
    if "blob" in entry:
        data = _blob(root, entry["blob"])
    else:
        recipe = json.loads(_blob(root, entry["recipe"]))
        skeleton = _blob(root, recipe["skeleton"])
        parts: list[bytes] = []
        last = 0
        for pos, chunks in recipe["holes"]:
            parts.append(skeleton[last:pos])
            parts.extend(_blob(root, sha) for sha in chunks)
            last = pos
        parts.append(skeleton[last:])
        data = b"".join(parts)
    if len(data) != entry["bytes"] or sha256_bytes(data) != entry["sha256"]:
        raise UserError(f"collected blob for {entry['sha256']} does not restore to its sha256; the collected folder was altered")
    return data


def _restore_path(pin: PackReader, pack_path: Any, relpath: Any) -> tuple[str, str]:
    """(folder, file name) of one restored file relative to --to: refused when the pin's
    path would leave it (absolute, `..`, `.` or empty segments)."""
    joined = f"{pack_path}/{relpath}" if isinstance(pack_path, str) and isinstance(relpath, str) else None
    parts = joined.replace("\\", "/").split("/") if joined else []
    if not parts or joined.startswith("/") or "\x00" in joined or any(p in ("", ".", "..") for p in parts):
        raise UserError(
            f"{pin.uri(PIN)} would restore {str(joined or relpath)[:200]!r} outside the --to folder (an absolute "
            "path, or '.', '..' or empty segments); nothing more is written: the collected folder was altered, "
            "collect the packs again"
        )
    return "/".join(parts[:-1]), parts[-1]


def restore_collected(collected: str | os.PathLike[str], out_dir: str | os.PathLike[str]) -> list[Path]:
    """Write every original pack back under `<out_dir>/<name>/runs/<run_id>/`; return the pack
    folders. Nothing is read through a link in the collected folder, nothing written through
    one under `out_dir` (a link there is one line naming it), nor outside `out_dir`."""
    pin = _load_pin(Path(collected).expanduser().resolve())
    root: PackReader = pin["_root"]
    out = Path(out_dir).expanduser().resolve()
    out.mkdir(parents=True, exist_ok=True)
    packs = pin.get("packs")
    if not isinstance(packs, list) or not all(isinstance(p, dict) and isinstance(p.get("files"), dict) for p in packs):
        raise UserError(
            f"{root.uri(PIN)} has no list of packs with their files; the collected folder was altered, collect the packs again"
        )
    for pack in packs:
        _restore_path(root, pack.get("path"), "_")  # a pack's own folder stays inside too, files or none
    planned = [[(*_restore_path(root, pack["path"], rel), entry) for rel, entry in pack["files"].items()] for pack in packs]
    restored = []
    for pack, files in zip(packs, planned, strict=True):
        for folder, name, entry in files:
            try:
                target = folder_within(out, folder) / name
            except LinkRefused as e:
                raise UserError(
                    f"{out / e.where} is a link; a restore writes nothing through a link (it may point "
                    "outside the folder): remove it, or restore into an empty folder with --to"
                ) from None
            write_atomic(target, restore_file(root, entry))  # a link at the file's own name is replaced, not followed
        restored.append(out / pack["path"])
    return restored


def collect_main(argv: Sequence[str]) -> int:
    """`memorybench collect-full PACKS... [--out DIR] [--experiment NAME]` or `--restore DIR --to DIR`."""
    from memorybench.compare.aggregate import default_out_dir

    parser = OneLineParser(
        prog="memorybench collect-full",
        description="Collect every file of finished packs into collected_full/ with repeated strings stored once by sha256.",
    )
    parser.add_argument("packs", nargs="*", help="pack folders, or roots scanned for <name>/runs/<run_id>/_SUCCESS")
    parser.add_argument("--out", help="folder that receives collected_full/ (default: the packs root's parent)")
    parser.add_argument("--experiment", help="keep only packs of this experiment name")
    parser.add_argument("--restore", metavar="COLLECTED", help="put the original packs back from a collected_full folder")
    parser.add_argument("--to", help="with --restore: the packs root to write into")
    ns = parser.parse_args(list(argv))
    if ns.restore:
        if not ns.to:
            raise UserError("--restore needs --to DIR: the folder that receives <name>/runs/<run_id>/")
        packs = restore_collected(ns.restore, ns.to)
        print(f"restored {len(packs)} pack(s) under {Path(ns.to).resolve()}, every file checked against its sha256")
        return 0
    if not ns.packs:
        raise UserError("pass pack folders or a packs root (e.g. outputs/packs), or --restore COLLECTED --to DIR")
    result = collect_full(ns.packs, ns.out or default_out_dir(ns.packs), experiment=ns.experiment)
    print(
        f"{len(result.packs)} pack(s), {result.files} files, {result.original_bytes} bytes -> "
        f"{result.stored_bytes} bytes stored ({result.blobs} blobs, {result.ratio:.3f} of the original)"
    )
    print(f"collected: {result.out_dir}")
    return 0
