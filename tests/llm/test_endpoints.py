"""memorybench.llm.endpoints: where an endpoint's key is read (issue 29, secrets)."""

from __future__ import annotations

import openai
import pytest
from omegaconf import OmegaConf

from memorybench import secrets
from memorybench.llm.endpoints import api_key_for
from memorybench.secrets import register, scrub

KEY = "sk-test-NEWLINE-0123456789abcdef"


def node():
    return OmegaConf.create({"name": "openai", "provider": "openai", "api_key_env": "OPENAI_API_KEY"})


def test_a_key_pasted_from_a_file_is_read_without_its_newline(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY + "\n")
    assert api_key_for(node(), "reader") == KEY
    monkeypatch.setenv("OPENAI_API_KEY", " \n")
    with pytest.raises(Exception, match="OPENAI_API_KEY is not set"):
        api_key_for(node(), "reader")


def test_httpx_refusing_a_key_with_its_newline_never_prints_the_key(monkeypatch, scripted_server):
    # the real SDK over HTTP with the key as it was read before: httpx's own error quotes it whole,
    # inside a bytes literal with the newline escaped; the error line passes `scrub`
    monkeypatch.setattr(secrets, "_registered", set())
    monkeypatch.setenv("OPENAI_API_KEY", KEY + "\n")
    register([KEY + "\n"])
    sdk = openai.OpenAI(base_url=scripted_server.base_url, api_key=KEY + "\n", max_retries=0)
    with pytest.raises(openai.APIConnectionError) as info:
        sdk.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
    raw = str(info.value.__cause__)
    assert KEY in raw  # what httpx says: the whole key
    line = scrub(raw)
    assert KEY not in line and KEY[:10] not in line and "***" in line
