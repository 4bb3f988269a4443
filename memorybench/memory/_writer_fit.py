"""What `plan` checks about a run's memory build before any call: the session prefix is a
valid number, and the embedded writer's context holds the method's writer prompt.

A method whose writer prompt has a size known before the data (a wrapped library's own
prompt: mem0's extraction prompt is ~8.5k tokens before any message) declares it on its
class: `WRITER_PROMPT_TOKENS` (the least every writer call holds, in the local models'
tokens, the larger count of the two) and `WRITER_PROMPT_NOTE` (what those tokens are).
With `writer=local`, that prompt, the reply (`writer.max_tokens`) and the local server's
margin must fit the writer model's context (`LOCAL_MODELS[...].max_context`; for `auto`,
the largest), else one UserError line that names the writer (not the reader: the reader is
sized apart) and the ways out: a local model that holds it, or a server writer. Nothing
is started and no model is called. A writer on a server (`openai`, `openai_compatible`)
has a context we do not know: not checked.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from memorybench.errors import UserError

if TYPE_CHECKING:  # a type only: reading a class off its registry needs no OmegaConf (verify)
    from omegaconf import DictConfig


def declared_writer_prompt(cls: Any) -> tuple[int, str] | None:
    """(tokens, what they are) a memory class declares for its writer prompt, or None."""
    tokens = getattr(cls, "WRITER_PROMPT_TOKENS", None)
    if not tokens:
        return None
    return int(tokens), str(getattr(cls, "WRITER_PROMPT_NOTE", "its writer prompt"))


def check_build(cfg: DictConfig) -> None:
    """`memory.max_sessions` is null or at least 1, and a local writer holds the method's
    declared writer prompt (module doc); else one UserError line, before any call."""
    from memorybench.memory._notes import writes_memory
    from memorybench.memory._prefix import max_sessions
    from memorybench.registry import MEMORY

    max_sessions(cfg.memory)
    cls = MEMORY.get(str(cfg.memory.name))
    if not writes_memory(cls, cfg):
        return
    check_writer_fits(cfg, cls)


def check_writer_fits(cfg: DictConfig, cls: Any) -> None:
    writer = cfg.writer
    declared = declared_writer_prompt(cls)
    if declared is None or str(writer.get("provider")) != "local":
        return
    from memorybench.llm.local.models import CONTEXT_MARGIN_TOKENS, LOCAL_MODELS

    tokens, what = declared
    requested = str(writer.get("model") or "auto")
    reply = int(writer.get("max_tokens") or 0)
    need = tokens + reply + CONTEXT_MARGIN_TOKENS
    if requested == "auto":
        candidates = list(LOCAL_MODELS.values())
    elif requested in LOCAL_MODELS:
        candidates = [LOCAL_MODELS[requested]]
    else:
        return  # an unknown model: the endpoint check names it with the choices
    if any(spec.max_context >= need for spec in candidates):
        return
    holds = max(spec.max_context for spec in candidates)
    model = candidates[0].name if len(candidates) == 1 else "auto: the largest local model"
    longer = [spec for spec in LOCAL_MODELS.values() if spec.max_context >= need]
    local_fix = "".join(f"writer.model={spec.name} ({spec.max_context:,} tokens), " for spec in longer)
    raise UserError(
        f"memory={cfg.memory.name}: the writer (writer={writer.get('name')}, local model {model}) holds {holds:,} tokens, "
        f"but every writer call needs about {need:,}: {tokens:,} for {what}, {reply:,} for the reply (writer.max_tokens) "
        f"and {CONTEXT_MARGIN_TOKENS} of margin; no model was called. Use a writer with a longer context: {local_fix}"
        "writer=openai, or writer=openai_compatible writer.base_url=... writer.model=..."
    )
