"""Finding packs from what a user types: a pack folder, an experiment folder that holds one
pack, a packs root, or `latest`.

Wherever a command takes one pack it passes the argument through `resolve_pack`:

- a pack folder (it has run_meta.json, predictions.jsonl, config.resolved.yaml or _SUCCESS)
  is itself;
- a folder that holds exactly one pack (`<packs>/<name>/` with one `runs/<run_id>/`, or a
  packs root with one) is that pack; with several, one line lists them (`memorybench ls`);
- `latest` is the newest pack under the default packs root (`outputs/packs`, as `paths.packs`
  defaults), and `DIR/latest` the newest under DIR (by its run_meta.json's started_at, then
  the folder's time), unless a folder of that name exists.

A `gs://` URI is passed through as given.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from memorybench.errors import UserError
from memorybench.pack import layout

#: files only a pack folder has (any one makes a folder a pack)
MARKERS = (layout.RUN_META, layout.PREDICTIONS, layout.CONFIG, layout.SUCCESS)
#: where packs lie under a folder that is not itself a pack: an experiment folder, a packs root
DEPTHS = ("runs/*", "*/runs/*")
#: the packs root a user's runs land in when nothing else is set (conf/paths/default.yaml)
DEFAULT_PACKS = Path("outputs/packs")
LATEST = "latest"


def is_pack(folder: Path) -> bool:
    return folder.is_dir() and any((folder / m).exists() for m in MARKERS)


def packs_under(folder: str | os.PathLike[str]) -> list[Path]:
    """The packs `folder` is or holds (itself, `runs/*`, `*/runs/*`), sorted by path."""
    root = Path(folder).expanduser()
    if is_pack(root):
        return [root.resolve()]
    if not root.is_dir():
        return []
    for depth in DEPTHS:
        found = sorted(p.resolve() for p in root.glob(depth) if is_pack(p))
        if found:
            return found
    return []


def started_at(pack: Path) -> str:
    """run_meta.json's started_at ('' when unreadable): the order runs were made in."""
    try:
        return str(json.loads((pack / layout.RUN_META).read_text("utf-8")).get("started_at") or "")
    except (OSError, ValueError, AttributeError):
        return ""


def newest(packs: list[Path]) -> Path:
    return max(packs, key=lambda p: (started_at(p), p.stat().st_mtime))


def resolve_pack(path: str | os.PathLike[str], *, refuse_several: bool = True) -> str | Path:
    """The one pack `path` names (see the module's docstring); the path unchanged when it
    names none (the caller's own error then says what it is instead), or several and
    `refuse_several` is false."""
    text = str(path)
    if "://" in text:
        return path
    given = Path(text).expanduser()
    if given.name == LATEST and not given.exists():
        parent = given.parent if text.rstrip("/") != LATEST else DEFAULT_PACKS
        packs = packs_under(parent)
        if not packs:
            raise UserError(f"{text}: no pack under {parent}; run `memorybench qa ...` first, or pass a pack folder")
        return newest(packs)
    if not given.is_dir() or is_pack(given):
        return path
    packs = packs_under(given)
    if len(packs) == 1:
        return packs[0]
    if len(packs) > 1 and refuse_several:
        names = ", ".join(p.name for p in packs[:5]) + (", ..." if len(packs) > 5 else "")
        raise UserError(
            f"{given} holds {len(packs)} packs ({names}): pass one, or {given}/latest for the newest "
            f"(`memorybench ls {given}` lists them)"
        )
    return path
