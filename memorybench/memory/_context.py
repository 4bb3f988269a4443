"""`open_build_context`: the writer and embedder a run's memory method needs, nothing more."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memorybench.data.records import Conversation
from memorybench.memory.base import BuildContext

if TYPE_CHECKING:  # a type only: reading a class off its registry needs no OmegaConf (verify)
    from omegaconf import DictConfig

#: room for a template, a saved-facts list and the chat format around a session's text
_PROMPT_MARGIN_TOKENS = 1024


def session_text(session: Any) -> str:
    """A session as the writer sees it: one `SPEAKER: TEXT [image: CAPTION]` line per turn."""
    return "\n".join(turn.render() for turn in session.turns)


def longest_writer_prompt(conversations: Sequence[Conversation]) -> int:
    """A high estimate of the longest writer prompt (tokens): the longest session + margin."""
    from memorybench.llm.local import estimate_tokens

    longest = max((estimate_tokens(session_text(s)) for c in conversations for s in c.sessions), default=0)
    return longest + _PROMPT_MARGIN_TOKENS


def open_build_context(
    cfg: DictConfig, pack: Any, cache_dir: Path, *, method: Any = None, conversations: Sequence[Conversation] = ()
) -> BuildContext:
    """A BuildContext with a writer when the method writes with a model and an embedder when
    it retrieves by vectors. Writer templates are checked and copied into the pack's
    prompts/ now (before run_meta.json hashes that folder); the writer endpoint and the
    embedding model start on first use. Call `ctx.close()` at the end of the run."""
    # imported here: the methods import session_text from this module, and a plan that
    # composes their config needs none of the build machinery (records, pydantic)
    from memorybench.memory._managed import build_memory_method

    method = method or build_memory_method(cfg)
    ctx = BuildContext(cfg=cfg, pack=pack, cache_dir=cache_dir)
    if getattr(method, "uses_writer", False):
        from memorybench.memory._writer import Writer

        ctx.writer = Writer(
            cfg,
            pack,
            cache_dir,
            method=method.name,
            templates=method.writer_templates,
            longest_prompt_tokens=longest_writer_prompt(conversations) if conversations else 8192,
        )
    _write_library_prompts(getattr(method, "inner", method), cfg, pack)
    if getattr(method, "uses_embedder", False):
        from memorybench.embed import make_embedder

        ctx.embedder = make_embedder(cfg.embedder, cache_dir=cache_dir, prices=cfg.get("pricing") or {})
    return ctx


def _write_library_prompts(method: Any, cfg: DictConfig, pack: Any) -> None:
    """A method that wraps a library whose prompts its code builds (Graphiti) names them
    (`library_prompts(cfg)`: relpath under prompts/ -> text, made from the installed
    library): they are prompt files of the pack like our own, hashed in run_meta.json, so
    verify reads their words (a prompt's worked examples) as instructions, not leaked gold."""
    made = getattr(method, "library_prompts", None)
    for relpath, text in (made(cfg) if made is not None else {}).items():
        pack.write_text(f"prompts/{relpath}", text)
