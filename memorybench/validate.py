"""Checks a composed config must pass before any model call (beyond Hydra's types).

Each component checks its own settings (`check(cfg)` on a memory method or an answerer,
`check(group, node)` on a chat provider); this module only asks each one in turn.
"""

from __future__ import annotations

import dataclasses

from omegaconf import DictConfig

from memorybench.config import Config
from memorybench.errors import UserError
from memorybench.names import path_component
from memorybench.registry import ANSWERERS, MEMORY


def validate_config(cfg: DictConfig) -> None:
    known = {f.name for f in dataclasses.fields(Config)}
    unknown = sorted(set(cfg.keys()) - known)
    if unknown:
        raise UserError(
            f"unknown top-level key {unknown[0]!r}; top-level keys are: {', '.join(sorted(known))} "
            "(remove the +key=value override)"
        )
    path_component(cfg.name, "experiment name", "set name=NAME")  # a folder under the packs root
    if cfg.max_questions is not None and int(cfg.max_questions) < 1:
        raise UserError(f"max_questions={cfg.max_questions} must be at least 1 (or null for every question)")
    for component in (ANSWERERS.get(str(cfg.answerer.name)), MEMORY.get(str(cfg.memory.name))):
        check = getattr(component, "check", None)
        if check is not None:
            check(cfg)
