"""Codex's config.toml stays valid TOML whatever the strings in it hold (issue 29): read back with tomllib."""

from __future__ import annotations

import tomllib

import pytest

from memorybench.answer.agent._codex_config import PROVIDER_ID, ProviderSettings, render_config

NASTY = [
    "plain",
    'quote " and back\\slash',
    "del \x7f",
    "nul \x00 bell \x07 esc \x1b",
    "line\nbreak\r\n",
    "tab\there",
    "c1 \x85\x9b",
    "unicode é ☃ \u2028",
    "''' and \"\"\"",
    "[table]\nkey = 1",
]


@pytest.mark.parametrize("text", NASTY)
def test_every_string_reads_back_exactly(text):
    toml = render_config(
        model=text,
        provider=ProviderSettings(base_url=f"http://127.0.0.1:1/v1?{text}", env_key="KEY"),
        reasoning_effort=text,
        developer_instructions=text,
    )
    data = tomllib.loads(toml)
    assert data["model"] == data["model_reasoning_effort"] == data["developer_instructions"] == text
    assert data["model_providers"][PROVIDER_ID]["base_url"] == f"http://127.0.0.1:1/v1?{text}"
    assert set(data) >= {"approval_policy", "features", "model_providers"}  # no key injected or lost


def test_a_lone_surrogate_is_written_as_a_replacement_not_a_crash():
    data = tomllib.loads(render_config(model="x\ud800y", provider=ProviderSettings(base_url="http://h/v1", env_key=None)))
    assert data["model"] == "x\ufffdy"
