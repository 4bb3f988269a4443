"""The Codex CLI agent harness (answerer=codex); DESIGN.md section 7.

Public API: `open_codex_answerer` (the factory's `codex` branch), `CodexAnswerer`,
`validate_codex_config` (config checks before any model call), `finalize_agent_pack`
(memory_recall, hop_to_evidence and the agent_comparison.v1 status, from a pack's files).
"""

from memorybench.answer.agent._cli import CodexCli, locate_cli, pinned_version
from memorybench.answer.agent._finalize import finalize_agent_pack
from memorybench.answer.agent._settings import MODES, CodexSettings, validate_codex_config
from memorybench.answer.agent.codex import CodexAnswerer, open_codex_answerer

__all__ = [
    "MODES",
    "CodexAnswerer",
    "CodexCli",
    "CodexSettings",
    "finalize_agent_pack",
    "locate_cli",
    "open_codex_answerer",
    "pinned_version",
    "validate_codex_config",
]
