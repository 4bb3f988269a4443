"""Open the configured answerer (`answerer=NAME`) for one run."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

from omegaconf import DictConfig

from memorybench.answer.base import Answerer
from memorybench.answer.prompt import SYSTEM_MESSAGE, PromptTemplate
from memorybench.answer.reader import ReaderAnswerer
from memorybench.errors import UserError, did_you_mean
from memorybench.llm.endpoints import open_endpoint
from memorybench.pack.run_pack import RunPack

ANSWERERS = ("reader", "codex")


def reader_template(cfg: DictConfig) -> PromptTemplate:
    return PromptTemplate.load(str(cfg.reader.prompt))


@contextlib.contextmanager
def open_answerer(cfg: DictConfig, pack: RunPack, *, cache_dir: Path, longest_prompt_tokens: int) -> Iterator[Answerer]:
    """Yield a ready answerer; the prompts it sends are copied into the pack's prompts/."""
    name = str(cfg.answerer.name)
    if name == "reader":
        template = reader_template(cfg)
        pack.write_text(f"prompts/{template.relpath}", template.text)
        pack.write_text("prompts/system.txt", SYSTEM_MESSAGE)
        with open_endpoint(
            cfg.reader,
            "reader",
            cache_dir=cache_dir,
            prices=cfg.pricing,
            longest_prompt_tokens=longest_prompt_tokens,
            log_dir=pack.root / "reader",
        ) as endpoint:
            yield ReaderAnswerer(
                endpoint,
                template,
                pack.reader_traces,
                temperature=float(cfg.reader.temperature),
                max_tokens=int(cfg.reader.max_tokens),
                seed=cfg.reader.seed,
            )
        return
    if name == "codex":
        from memorybench.answer.agent import open_codex_answerer

        with open_codex_answerer(cfg, pack, cache_dir=cache_dir) as agent:
            yield agent
        return
    raise UserError(f"answerer={name} is not available. {did_you_mean(name, ANSWERERS)}")
