"""`workspace_files` and `notes_only`: the Codex agent's own memories, under the seed's names.

They are not texts handed to a reader: the agent reads its workspace. `workspace_files`
gives it INDEX.md and one file per session (`sessions/session_N.md`); `notes_only` lets
an ingest pass write `memory/notes.md` from those sessions, then removes them, so every
question sees the notes alone. Choosing one of these memories with `answerer=codex`
selects that mode of the agent (`answerer.mode`, memorybench.answer.agent); with the
one-call reader there is nothing to read, so it is a one-line error naming the fix.
"""

from __future__ import annotations

from typing import ClassVar

from omegaconf import DictConfig, OmegaConf

from memorybench.errors import UserError
from memorybench.memory.full_context import FullContext
from memorybench.registry import MEMORY

__all__ = ["AGENT_MEMORIES", "NotesOnly", "WorkspaceFiles"]

#: the memory names that are modes of the Codex agent (its answerer.mode values)
AGENT_MEMORIES = ("workspace_files", "notes_only")
#: the agent's mode when the memory is not one of its own (full_context for prompt_injected arms)
DEFAULT_AGENT_MODE = "workspace_files"


def agent_mode(memory_name: str) -> str:
    """`answerer.mode`'s default (conf/answerer/codex.yaml: `${agent_mode:${memory.name}}`):
    the memory's name when it is one of the agent's modes, else workspace_files."""
    return memory_name if memory_name in AGENT_MEMORIES else DEFAULT_AGENT_MODE


# registered when the memory methods are loaded, which is before Hydra composes a config
# (`memorybench.config.load_component_configs`)
OmegaConf.register_new_resolver("agent_mode", agent_mode, replace=True)


class _AgentWorkspace(FullContext):
    """What the agent's workspace is made from: the sessions, rendered as full_context does
    (the pack's memory dumps then show what the agent's files hold)."""

    name: ClassVar[str]

    @classmethod
    def check(cls, cfg: DictConfig) -> None:
        answerer = str(cfg.answerer.name)
        if answerer != "codex":
            raise UserError(
                f"memory={cls.name} is the Codex agent's memory (it reads its workspace), not a text for answerer={answerer}; "
                f"use answerer=codex memory={cls.name}, or a reader memory (full_context, session_summaries, rag, ...)"
            )
        mode = cfg.answerer.get("mode")
        if mode not in (None, cls.name) and mode in AGENT_MEMORIES:
            raise UserError(f"memory={cls.name} and answerer.mode={mode} disagree; drop answerer.mode (the memory chooses it)")


@MEMORY.register("workspace_files")
class WorkspaceFiles(_AgentWorkspace):
    """INDEX.md and sessions/session_N.md in the agent's workspace."""


@MEMORY.register("notes_only")
class NotesOnly(_AgentWorkspace):
    """memory/notes.md, written by the agent's ingest pass from the sessions, which are then removed."""
