"""The settings of answerer=codex: its config node (typed in the ConfigStore), read once
into `CodexSettings`, and the checks made before any model call (one line each, with the fix).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Optional

from memorybench.answer.agent._accounting import BUDGET_KEYS, AuditConfig, BudgetConfig
from memorybench.answer.agent._isolation import NETWORKS
from memorybench.config import AnswererConfig, store_schema
from memorybench.errors import UserError, did_you_mean
from memorybench.memory.agent_workspace import AGENT_MEMORIES

if TYPE_CHECKING:  # a type only: reading a class off its registry needs no OmegaConf (verify)
    from omegaconf import DictConfig

MODES = ("workspace_files", "notes_only", "prompt_injected")
PROVIDERS = ("openai", "openai_compatible")
ON_FAILURE = ("abort", "record")
OPENAI_BASE_URL = "https://api.openai.com/v1"


@dataclass
class CodexAnswererConfig(AnswererConfig):
    """`answerer=codex`: one `codex exec` per question over a prepared workspace."""

    #: workspace_files | notes_only | prompt_injected
    mode: str = "workspace_files"
    #: one workspace per conversation with memory/notes.md the agent reads and appends
    persist: bool = False
    #: openai | openai_compatible (any Responses-API server)
    provider: str = "openai"
    model: Optional[str] = None
    base_url: Optional[str] = None
    #: name of the environment variable holding the key (never the key itself)
    api_key_env: Optional[str] = None
    reasoning_effort: Optional[str] = None
    #: the outer timeout per question; the process group is killed past it
    timeout_s: float = 600.0
    ingest_timeout_s: float = 1800.0
    #: abort (stop the run; rerun resumes) | record (an empty answer, counted)
    on_failure: str = "abort"
    request_max_retries: Optional[int] = None
    stream_max_retries: Optional[int] = None
    #: <scratch_dir>/<run_id>; null: <paths.cache>/agent
    scratch_dir: Optional[str] = None
    #: isolated (own network namespace, the endpoint bridged; see _isolation) | shared (the host's network)
    network: str = "isolated"
    budget: BudgetConfig = field(default_factory=BudgetConfig)
    audit: AuditConfig = field(default_factory=AuditConfig)


store_schema("answerer", "codex", CodexAnswererConfig)


@dataclass(frozen=True)
class CodexSettings:
    """`cfg.answerer` for answerer=codex, read once (typed by CodexAnswererConfig above)."""

    mode: str
    persist: bool
    provider: str
    model: str
    base_url: str
    api_key_env: str | None
    reasoning_effort: str | None
    timeout_s: float
    ingest_timeout_s: float
    on_failure: str
    request_max_retries: int | None
    stream_max_retries: int | None
    scratch_dir: str | None
    network: str = "isolated"
    #: the configured limits (BUDGET_KEYS; null ones left out)
    budget: dict[str, int] = field(default_factory=dict)
    match_reader: bool = False
    audit_raw: bool = False

    @classmethod
    def from_config(cls, node: DictConfig) -> CodexSettings:
        def get(key: str, default: Any = None) -> Any:
            value = node.get(key, default)
            return default if value is None and default is not None else value

        provider = str(get("provider", "openai"))
        base_url = get("base_url") or (OPENAI_BASE_URL if provider == "openai" else None)
        api_key_env = get("api_key_env") if "api_key_env" in node else ("OPENAI_API_KEY" if provider == "openai" else None)
        budget = node.get("budget") or {}
        audit = node.get("audit") or {}
        return cls(
            mode=str(get("mode", "workspace_files")),
            persist=bool(get("persist", False)),
            provider=provider,
            model=str(get("model") or ""),
            base_url=str(base_url or ""),
            api_key_env=str(api_key_env) if api_key_env else None,
            reasoning_effort=get("reasoning_effort"),
            timeout_s=float(get("timeout_s", 600.0)),
            ingest_timeout_s=float(get("ingest_timeout_s", 1800.0)),
            on_failure=str(get("on_failure", "abort")),
            request_max_retries=get("request_max_retries"),
            stream_max_retries=get("stream_max_retries"),
            scratch_dir=get("scratch_dir"),
            network=str(get("network", "isolated")),
            budget={k: budget.get(k) for k in BUDGET_KEYS if budget.get(k) is not None},
            match_reader=bool(budget.get("match_reader", False)),
            audit_raw=bool(audit.get("raw", False)),
        )

    @property
    def sandbox(self) -> str:
        return "workspace-write" if self.persist else "read-only"


def validate_codex_config(cfg: DictConfig) -> None:
    """Checks for answerer=codex before any model call; each failure is one line with the fix."""
    s = CodexSettings.from_config(cfg.answerer)
    if s.mode not in MODES:
        raise UserError(f"answerer.mode={s.mode!r} is unknown. {did_you_mean(s.mode, MODES)}")
    if s.provider not in PROVIDERS:
        raise UserError(f"answerer.provider={s.provider!r} is unknown. {did_you_mean(s.provider, PROVIDERS)}")
    if s.provider == "openai_compatible" and not s.base_url:
        raise UserError(
            "answerer.base_url is required for provider openai_compatible (a server that speaks the "
            "Responses API); add answerer.base_url=http://HOST:PORT/v1"
        )
    if s.provider == "openai" and not s.api_key_env:
        raise UserError("answerer.api_key_env is required for provider openai; add answerer.api_key_env=OPENAI_API_KEY")
    if not s.model:
        raise UserError("answerer.model is required for answerer=codex; add answerer.model=MODEL_ID")
    if s.timeout_s <= 0 or s.ingest_timeout_s <= 0:
        raise UserError(f"answerer.timeout_s={s.timeout_s} and answerer.ingest_timeout_s={s.ingest_timeout_s} must be > 0")
    if s.on_failure not in ON_FAILURE:
        raise UserError(f"answerer.on_failure={s.on_failure!r} is unknown. {did_you_mean(s.on_failure, ON_FAILURE)}")
    if s.network not in NETWORKS:
        raise UserError(f"answerer.network={s.network!r} is unknown. {did_you_mean(s.network, NETWORKS)}")
    for key, value in s.budget.items():
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise UserError(f"answerer.budget.{key}={value!r} must be a whole number >= 1 (or null: no limit)")
    if s.match_reader and (not cfg.reader.get("prompt") or not cfg.reader.get("max_tokens")):
        raise UserError(
            "answerer.budget.match_reader=true takes the budget from the reader: set reader.prompt and "
            "reader.max_tokens (e.g. reader=openai)"
        )
    memory = str(cfg.memory.name) if cfg.get("memory") is not None else None
    if s.mode != "prompt_injected" and memory not in (None, "full_context", *AGENT_MEMORIES):
        # the agent reads its workspace, never memory's text: another memory would be a run
        # of the same id (the memory is out of it in these modes) that did not use it
        raise UserError(
            f"answerer=codex in mode {s.mode} reads its workspace of session files, not memory={memory}; "
            f"use memory={s.mode}, or answerer.mode=prompt_injected to hand it {memory}'s text"
        )
    if s.mode == "prompt_injected" and not cfg.reader.get("prompt"):
        raise UserError("answerer.mode=prompt_injected fills the reader's template; set reader.prompt (e.g. readers/qa_v1.txt)")


__all__ = ["MODES", "CodexAnswererConfig", "CodexSettings", "validate_codex_config"]
