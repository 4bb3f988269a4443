"""Open the configured answerer (`answerer=NAME`) for one run, found in the registry."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from memorybench.answer.base import Answerer
from memorybench.pack.run_pack import RunPack
from memorybench.registry import ANSWERERS

if TYPE_CHECKING:  # a type only: reading a class off its registry needs no OmegaConf (verify)
    from omegaconf import DictConfig


def prompt_chars(cfg: DictConfig) -> int:
    """What the configured answerer adds around the memory in a prompt (characters)."""
    sizing = getattr(ANSWERERS.get(str(cfg.answerer.name)), "prompt_chars", None)
    return int(sizing(cfg)) if sizing is not None else 0


@contextlib.contextmanager
def open_answerer(cfg: DictConfig, pack: RunPack, *, cache_dir: Path, longest_prompt_tokens: int) -> Iterator[Answerer]:
    """Yield a ready answerer; the prompts it sends are copied into the pack's prompts/."""
    kind = ANSWERERS.get(str(cfg.answerer.name))
    with kind.open(cfg, pack, cache_dir=cache_dir, longest_prompt_tokens=longest_prompt_tokens) as answerer:
        yield answerer
