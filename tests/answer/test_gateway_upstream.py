"""The gateway's upstream side (issue 29): `Retry-After` as an HTTP date is honoured, a retry
without one waits with full jitter, and the proxy is the one the environment names (NO_PROXY on
a dot boundary, `*`, proxy credentials on the CONNECT only)."""

from __future__ import annotations

import base64
import email.utils
import http.client
import json
import random
import time

import pytest

from memorybench.answer.agent.gateway import GatewayProcess
from memorybench.answer.agent.gateway_upstream import BACKOFF_BASE_S, RETRY_MAX_WAIT_S, Upstream, retry_delay
from memorybench.testing.scripted_responses import Message, ScriptedResponsesServer, Status

PROXY_VARS = ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "NO_PROXY", "no_proxy", "ALL_PROXY", "all_proxy")


class _Answered:
    def __init__(self, **headers: str) -> None:
        self.headers = http.client.HTTPMessage()
        for name, value in headers.items():
            self.headers[name.replace("_", "-")] = value


def test_retry_after_as_an_http_date_is_honoured():
    later = email.utils.formatdate(time.time() + 20, usegmt=True)
    wait, asked = retry_delay(_Answered(Retry_After=later), 1)
    assert 18.0 <= wait <= 20.0 and asked
    assert retry_delay(_Answered(Retry_After=email.utils.formatdate(time.time() + 3600, usegmt=True)), 1) == (
        RETRY_MAX_WAIT_S,
        True,
    )
    assert retry_delay(_Answered(Retry_After="2"), 3) == (2.0, True) and retry_delay(_Answered(retry_after_ms="250"), 1) == (
        0.25,
        True,
    )


def test_a_retry_without_retry_after_waits_with_full_jitter(monkeypatch):
    ceilings: list[float] = []
    monkeypatch.setattr(random, "uniform", lambda lo, hi: ceilings.append(hi) or hi / 2)
    assert retry_delay(None, 1) == (BACKOFF_BASE_S / 2, False) and retry_delay(_Answered(), 3) == (4 * BACKOFF_BASE_S / 2, False)
    assert ceilings == [BACKOFF_BASE_S, 4 * BACKOFF_BASE_S]


def test_the_gateway_waits_what_an_http_date_retry_after_asks():
    with ScriptedResponsesServer() as server, GatewayProcess(server.base_url, max_retries=1) as gateway:
        server.script(
            Status(429, "slow down", headers={"Retry-After": email.utils.formatdate(time.time() + 3, usegmt=True)}), Message("ok")
        )
        gateway.begin("q", "s", "answer")
        conn = http.client.HTTPConnection("127.0.0.1", gateway.port, timeout=30)
        t0 = time.perf_counter()
        body = {
            "model": "scripted",
            "stream": True,
            "input": [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]}],
        }
        conn.request("POST", "/v1/responses", body=json.dumps(body), headers={"Content-Type": "application/json"})
        reply = conn.getresponse()
        reply.read()
        elapsed = time.perf_counter() - t0
        (row,) = gateway.end().rows
    assert reply.status == 200 and row["retries"] == 1 and row["retry_statuses"] == [429]
    (wait,) = row["retry_waits_s"]
    assert row["retry_after"] == [True] and 1.5 <= wait <= 3.0 and elapsed >= wait  # the wait slept is the wait recorded
    assert elapsed >= 1.5  # the date is 2-3 s ahead (one-second resolution); a fallback backoff would wait 0.5 s at most


@pytest.fixture
def env(monkeypatch):
    for name in PROXY_VARS:
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


@pytest.mark.parametrize(
    "no_proxy, host, proxied",
    [
        ("example.com", "badexample.com", True),  # a suffix that is not a domain boundary
        ("example.com", "api.example.com", False),
        (".example.com", "example.com", False),
        ("example.com", "example.com", False),
        ("*", "api.openai.com", False),
        ("other.org, example.com", "x.example.com", False),
        ("", "api.openai.com", True),
    ],
)
def test_no_proxy_matches_on_a_domain_boundary(env, no_proxy, host, proxied):
    env.setenv("HTTPS_PROXY", "http://proxy.internal:3128")
    env.setenv("NO_PROXY", no_proxy)
    assert (Upstream(f"https://{host}/v1", 5.0).proxy is not None) is proxied


def test_a_loopback_upstream_never_goes_through_a_proxy(env):
    env.setenv("http_proxy", "http://proxy.internal:3128")
    assert Upstream("http://127.0.0.1:8080/v1", 5.0).proxy is None


def test_proxy_credentials_go_on_the_connect_only(env):
    env.setenv("https_proxy", "http://us%40er:p%3Ass@proxy.internal:3128")
    upstream = Upstream("https://api.example.com/v1", 5.0)
    conn, reused = upstream.get()
    assert not reused and (conn.host, conn.port) == ("proxy.internal", 3128)
    assert (conn._tunnel_host, conn._tunnel_port) == ("api.example.com", 443)
    assert conn._tunnel_headers == {"Proxy-Authorization": "Basic " + base64.b64encode(b"us@er:p:ss").decode()}
    plain = Upstream("https://api.example.com/v1", 5.0)
    env.setenv("https_proxy", "http://proxy.internal:3128")
    assert Upstream("https://api.example.com/v1", 5.0).get()[0]._tunnel_headers == {} and plain.proxy is not None
