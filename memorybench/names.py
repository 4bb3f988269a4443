"""Names that become folder or file names: an experiment name, a run id, a sample id, a
judge id. Each is one path component of a pack (`<root>/<name>/runs/<run_id>/`,
`memory/dumps/<sample_id>.txt`), so each is checked before anything is written: a value
with a separator, `..`, a NUL or a control character, or an empty or overlong one, could
put a file outside the packs root.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from memorybench.errors import UserError

#: what a path component may hold: letters, digits, `.`, `_`, `-` (and not start with `.`)
_SAFE = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]*")
MAX_CHARS = 128
ALLOWED = "letters, digits, '.', '_' and '-', not starting with '.'"


def unsafe_reason(value: str) -> str | None:
    """Why `value` cannot be one path component, or None when it can."""
    if not value:
        return "it is empty"
    if len(value) > MAX_CHARS:
        return f"it has {len(value)} characters (at most {MAX_CHARS})"
    if not _SAFE.fullmatch(value):
        bad = next((ch for ch in value if not re.fullmatch(r"[A-Za-z0-9._-]", ch)), None)
        if bad is not None:
            return f"it holds {bad!r}"
        return "it starts with '.'"
    return None


def path_component(value: object, what: str, fix: str) -> str:
    """`value` as a safe path component, or a one-line UserError naming it and the fix."""
    text = str(value)
    reason = unsafe_reason(text)
    if reason is not None:
        raise UserError(f"{what} {text!r} cannot be a folder or file name: {reason}; use {ALLOWED} ({fix})")
    return text


def resolved_path(value: str | os.PathLike[str], setting: str) -> Path:
    """`value` made absolute with its links followed, or one UserError naming `setting` when
    it cannot be (a symlink loop: Python raises RuntimeError for it before 3.13)."""
    try:
        return Path(value).expanduser().resolve()
    except (RuntimeError, OSError) as e:
        why = "a symlink loop" if "loop" in str(e).lower() or getattr(e, "errno", None) == 40 else str(e)
        raise UserError(f"{setting}={value} cannot be followed ({why}); point {setting} at a real folder or file") from None


def writable_folder(value: str | os.PathLike[str], setting: str) -> Path:
    """`value` resolved and created, proven writable by a probe file, or one UserError
    naming `setting` (a read-only mount or folder fails here, before any model call)."""
    import tempfile

    folder = resolved_path(value, setting)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".memorybench-probe-"):
            pass
    except OSError as e:
        raise UserError(
            f"{setting}={folder} is not a writable folder ({e.strerror or e}); set {setting} to one you can write"
        ) from None
    return folder
