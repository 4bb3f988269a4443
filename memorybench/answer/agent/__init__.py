"""The Codex CLI agent harness (answerer=codex); DESIGN.md section 7.

Public API: `open_codex_answerer` (the factory's `codex` branch), `CodexAnswerer`,
`validate_codex_config` (config checks before any model call), `finalize_agent_pack`
(memory_recall, hop_to_evidence and the agent_comparison.v1 status, from a pack's files).

The names below are imported from their modules on first use (PEP 562): `verify` reads the
records of `_records` without the harness.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from memorybench.lazy import lazy_members

if TYPE_CHECKING:
    from memorybench.answer.agent._cli import CodexCli, locate_cli, pinned_version
    from memorybench.answer.agent._finalize import finalize_agent_pack
    from memorybench.answer.agent._settings import MODES, CodexSettings, validate_codex_config
    from memorybench.answer.agent.codex import CodexAnswerer, open_codex_answerer

_WHERE = {
    "MODES": "memorybench.answer.agent._settings",
    "CodexAnswerer": "memorybench.answer.agent.codex",
    "CodexCli": "memorybench.answer.agent._cli",
    "CodexSettings": "memorybench.answer.agent._settings",
    "finalize_agent_pack": "memorybench.answer.agent._finalize",
    "locate_cli": "memorybench.answer.agent._cli",
    "open_codex_answerer": "memorybench.answer.agent.codex",
    "pinned_version": "memorybench.answer.agent._cli",
    "validate_codex_config": "memorybench.answer.agent._settings",
}

__all__ = sorted(_WHERE)

__getattr__ = lazy_members(__name__, _WHERE)
