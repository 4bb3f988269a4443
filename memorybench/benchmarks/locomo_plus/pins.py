"""LoCoMo-Plus's pinned files (xjtuleeyf/Locomo-Plus at one commit): its items and its judge's
templates. `memorybench fetch` downloads and verifies them with the other pins."""

from __future__ import annotations

from memorybench.data.pins import Pin

__all__ = ["DATA", "PINS", "PROMPT"]

_REPOSITORY = "xjtuleeyf/Locomo-Plus"
_COMMIT = "059f4e3d38f7f1f96765e8e2cb7de3097551bffb"
_LICENCE = "no licence file; built on LoCoMo (CC BY-NC 4.0)"

#: the 401 cue/trigger items
DATA = Pin(
    relpath="locomo-plus/data/locomo_plus.json",
    sha256="af2fc6e5e0e88735e28d8dd1ef474b718861a73beb21779809e3b9e1a4fe3d23",
    repository=_REPOSITORY,
    commit=_COMMIT,
    source_path="data/locomo_plus.json",
    licence=_LICENCE,
)
#: the judge's per-category templates (`PROMPT_TEMPLATES`), parsed, never imported
PROMPT = Pin(
    relpath="locomo-plus/evaluation_framework/task_eval/prompt.py",
    sha256="e43e3ee7115a30938e727fe0eab16694186c08e3f9619f9d8dd5e603d96fc2b1",
    repository=_REPOSITORY,
    commit=_COMMIT,
    source_path="evaluation_framework/task_eval/prompt.py",
    licence=_LICENCE,
)
PINS = (DATA, PROMPT)
