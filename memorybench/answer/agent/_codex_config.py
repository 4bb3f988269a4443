"""The `config.toml` of a run's fresh CODEX_HOME (keys checked with `--strict-config` on 0.171.0).

No web search, no MCP servers, no analytics or feedback, no plugins, apps, skills,
sub-agents, goals, image generation or Codex's own memories, no AGENTS.md (project docs
capped at 0 bytes), no login shell or shell snapshot (the user's dotfiles stay out),
approvals never asked; the model provider is ours: a base URL that speaks the Responses
API and the *name* of the variable that holds the key (never the key).
"""

from __future__ import annotations

from dataclasses import dataclass

PROVIDER_ID = "memorybench"

#: `[features]` switched off: every one is a tool or context source outside the experiment
FEATURES_OFF = (
    "apps",
    "plugins",
    "remote_plugin",
    "goals",
    "image_generation",
    "memories",
    "browser_use",
    "computer_use",
    "hooks",
    "tool_suggest",
    "skill_search",
    "shell_snapshot",
)


@dataclass(frozen=True)
class ProviderSettings:
    base_url: str
    #: the environment variable holding the key (None: no Authorization header)
    env_key: str | None
    request_max_retries: int | None = None
    stream_max_retries: int | None = None


def _s(value: str) -> str:
    """A TOML basic string: `\\` and `"` escaped, and every control character TOML forbids raw
    (U+0000-U+001F but tab, and U+007F, which JSON's escaping leaves raw) as `\\uXXXX`; a lone
    surrogate (not encodable as UTF-8) as U+FFFD's escape."""
    out = []
    for ch in value:
        code = ord(ch)
        if ch in ('"', "\\"):
            out.append("\\" + ch)
        elif code < 0x20 and ch != "\t" or code == 0x7F or 0xD800 <= code <= 0xDFFF:
            out.append(f"\\u{0xFFFD if 0xD800 <= code <= 0xDFFF else code:04X}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def render_config(
    *,
    model: str,
    provider: ProviderSettings,
    reasoning_effort: str | None = None,
    developer_instructions: str | None = None,
) -> str:
    lines = [
        "# Written by memorybench for one run (answerer=codex); see memorybench/answer/agent/_codex_config.py.",
        f"model = {_s(model)}",
        f"model_provider = {_s(PROVIDER_ID)}",
    ]
    if reasoning_effort:
        lines.append(f"model_reasoning_effort = {_s(reasoning_effort)}")
    if developer_instructions:
        lines.append(f"developer_instructions = {_s(developer_instructions)}")
    lines += [
        'approval_policy = "never"',
        'web_search = "disabled"',
        "project_doc_max_bytes = 0",
        "check_for_update_on_startup = false",
        "allow_login_shell = false",
        "",
        "[sandbox_workspace_write]",
        "# persist on: only the workspace is writable (not /tmp, not $TMPDIR); no network",
        "exclude_slash_tmp = true",
        "exclude_tmpdir_env_var = true",
        "network_access = false",
        "",
        "[shell_environment_policy]",
        'inherit = "core"',
        "",
        "[analytics]",
        "enabled = false",
        "",
        "[feedback]",
        "enabled = false",
        "",
        "[history]",
        'persistence = "none"',
        "",
        "[agents]",
        "enabled = false",
        "",
        "[skills]",
        "include_instructions = false",
        "",
        "[features]",
        *(f"{name} = false" for name in FEATURES_OFF),
        "",
        "# no MCP servers",
        "[mcp_servers]",
        "",
        f"[model_providers.{PROVIDER_ID}]",
        f"name = {_s(PROVIDER_ID)}",
        f"base_url = {_s(provider.base_url)}",
        'wire_api = "responses"',
    ]
    if provider.env_key:
        lines.append(f"env_key = {_s(provider.env_key)}")
    if provider.request_max_retries is not None:
        lines.append(f"request_max_retries = {int(provider.request_max_retries)}")
    if provider.stream_max_retries is not None:
        lines.append(f"stream_max_retries = {int(provider.stream_max_retries)}")
    return "\n".join(lines) + "\n"
