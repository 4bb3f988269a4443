"""Network faults over a whole qa run, against the scripted server over real HTTP: a 429
storm, a server that dies mid-run and comes back on the same port, a reply that never ends.

Each run is compared with an undisturbed run of the same questions: the same rows, bytes
and scores, no row lost or duplicated, and every attempt (the failed ones too) in the trace
of the call it belongs to.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from faultkit import (
    FAST_RETRIES,
    MINI_IDS,
    PerQuestion,
    assert_journals_whole,
    assert_prefix_without_duplicates,
    assert_same_as_undisturbed,
    attempts_of,
    pack_of,
    run_qa,
    undisturbed_run,
)

from memorybench.testing.scripted_server import Drop, Hang, ScriptedOpenAIServer, Stall, Status


@pytest.fixture(scope="module")
def undisturbed(tmp_path_factory) -> Path:
    return undisturbed_run(tmp_path_factory.mktemp("undisturbed"))


def error_lines(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.strip()]


def rate_limited(seconds: str = "0.02") -> Status:
    return Status(429, headers={"Retry-After": seconds}, message="Rate limit reached for requests")


# -- a 429 storm ---------------------------------------------------------------------------------


def test_a_429_storm_over_the_whole_run_loses_nothing_and_traces_every_attempt(tmp_path, undisturbed):
    # per question: 0..4 consecutive 429s (4 is every retry the reader has), one 503 among them
    storm = {
        0: [rate_limited()] * 4,
        1: [rate_limited()],
        3: [rate_limited(), Status(503), rate_limited()],
        4: [rate_limited()] * 2,
        5: [rate_limited()] * 4,
        7: [rate_limited()],
        9: [rate_limited()] * 3,
    }
    limited = sum(len(script) for script in storm.values())
    with ScriptedOpenAIServer(responder=PerQuestion(storm)) as server:
        assert run_qa(server, tmp_path, "storm", *FAST_RETRIES) == 0
        requests = len(server.requests)
    pack = pack_of(tmp_path, "storm")
    assert_same_as_undisturbed(pack, undisturbed)
    attempts = attempts_of(pack)
    # every request the server saw is an attempt in the trace of its own question, in order
    assert requests == len(MINI_IDS) + limited == sum(len(a) for a in attempts)
    for i, tried in enumerate(attempts):
        expected = [a.code for a in storm.get(i, [])] + [200]
        assert [a["status"] for a in tried] == expected, (MINI_IDS[i], tried)
        assert [a["n"] for a in tried] == list(range(1, len(tried) + 1))
        for a in tried[:-1]:
            # Retry-After is honoured and said so; the 503 has none and backs off with full jitter (capped)
            assert a["retry_after"] == (a["status"] == 429)
            assert a["wait_s"] == pytest.approx(0.02) if a["status"] == 429 else 0.0 <= a["wait_s"] <= 0.05
            assert a["error"].startswith(f"HTTP {a['status']}:")
    usage = json.loads((pack / "metrics.json").read_text())["usage"]["reader"]
    assert usage["retries"] == limited and usage["calls"] == len(MINI_IDS)


def test_a_storm_longer_than_the_retries_stops_the_run_in_one_line_and_a_rerun_resumes(tmp_path, undisturbed, capfd):
    # question 6 gets more 429s than the reader has attempts (1 + max_retries=2)
    storm = {2: [rate_limited()] * 2, 6: [rate_limited()] * 3}
    with ScriptedOpenAIServer(responder=PerQuestion(storm)) as server:
        code = run_qa(server, tmp_path, "long_storm", *FAST_RETRIES, "reader.max_retries=2")
        err = capfd.readouterr().err
        assert code == 3
        (line,) = error_lines(err)
        assert line.startswith("memorybench: error: model call to ") and "failed after 3 attempt(s): HTTP 429" in line
        assert "rerun the same command to resume" in line and "Traceback" not in err
        pack = pack_of(tmp_path, "long_storm")
        assert assert_prefix_without_duplicates(pack) == MINI_IDS[:6]
        assert_journals_whole(pack)
        assert not (pack / "_SUCCESS").exists()
        # the storm is over: the same command finishes the run, asking only what is left
        before = len(server.requests)
        assert run_qa(server, tmp_path, "long_storm", *FAST_RETRIES, "reader.max_retries=2") == 0
        assert len(server.requests) - before == len(MINI_IDS) - 6
    assert_same_as_undisturbed(pack, undisturbed)
    assert json.loads((pack / "run_meta.json").read_text())["resumed"] == 1


# -- a server that dies and comes back ---------------------------------------------------------------


def test_a_server_that_dies_mid_request_and_comes_back_is_retried_through(tmp_path, undisturbed):
    holder: dict[str, ScriptedOpenAIServer] = {}

    def crash() -> Drop:
        holder["server"].outage(0.3)  # listening stops, open connections are cut, back in 0.3 s
        return Drop()

    # the 4th question's first request is the one the server dies on
    with ScriptedOpenAIServer(responder=PerQuestion({3: [crash]})) as server:
        holder["server"] = server
        port = server.port
        assert run_qa(server, tmp_path, "outage", "reader.max_retries=30", "reader.retry_max_wait_s=0.05") == 0
        assert server.port == port and server.up
    pack = pack_of(tmp_path, "outage")
    assert_same_as_undisturbed(pack, undisturbed)
    attempts = attempts_of(pack)
    assert all(len(a) == 1 for i, a in enumerate(attempts) if i != 3)
    failed = attempts[3][:-1]
    # the cut request, then refused connections while the server was down, then the answer
    assert len(failed) >= 2 and attempts[3][-1]["status"] == 200
    assert all(a.get("status") is None and a["error"].startswith("connection error") for a in failed), failed
    assert "Connection refused" in failed[-1]["error"]  # the port was really closed for a while


def test_a_server_down_past_the_retries_stops_the_run_and_a_rerun_after_it_is_back_resumes(tmp_path, undisturbed, capfd):
    holder: dict[str, ScriptedOpenAIServer] = {}

    def crash() -> Drop:
        holder["server"].kill()
        return Drop()

    with ScriptedOpenAIServer(responder=PerQuestion({7: [crash]})) as server:
        holder["server"] = server
        code = run_qa(server, tmp_path, "down", "reader.max_retries=2", "reader.retry_max_wait_s=0.05")
        err = capfd.readouterr().err
        assert code == 3 and "Traceback" not in err
        (line,) = error_lines(err)
        assert "failed after 3 attempt(s): connection error" in line and "rerun the same command to resume" in line
        pack = pack_of(tmp_path, "down")
        assert assert_prefix_without_duplicates(pack) == MINI_IDS[:7]
        assert_journals_whole(pack)
        server.restart()  # the endpoint is back, on the same base URL
        assert run_qa(server, tmp_path, "down", "reader.max_retries=2", "reader.retry_max_wait_s=0.05") == 0
    assert_same_as_undisturbed(pack, undisturbed)


# -- a reply that never ends -----------------------------------------------------------------------


def test_replies_that_never_end_time_out_are_retried_and_traced(tmp_path, undisturbed):
    # a server that never answers, and one that sends headers and half a body then stalls
    faults = {1: [Hang(3.0)], 4: [Stall(3.0), Stall(3.0)], 8: [Hang(3.0)]}
    with ScriptedOpenAIServer(responder=PerQuestion(faults)) as server:
        assert run_qa(server, tmp_path, "endless", "reader.timeout_s=0.4", *FAST_RETRIES) == 0
    pack = pack_of(tmp_path, "endless")
    assert_same_as_undisturbed(pack, undisturbed)
    for i, tried in enumerate(attempts_of(pack)):
        timed_out = tried[:-1]
        assert len(timed_out) == len(faults.get(i, [])) and tried[-1]["status"] == 200
        for a in timed_out:
            assert a["error"] == "timeout after 0.4s" and a.get("status") is None and a["latency_s"] >= 0.4


def test_a_reply_that_never_ends_on_every_attempt_is_one_line_and_a_rerun_resumes(tmp_path, undisturbed, capfd):
    with ScriptedOpenAIServer(responder=PerQuestion({5: [Stall(2.0)] * 2})) as server:
        args = ("reader.timeout_s=0.3", "reader.max_retries=1", *FAST_RETRIES)
        code = run_qa(server, tmp_path, "stalled", *args)
        err = capfd.readouterr().err
        assert code == 3 and "Traceback" not in err
        (line,) = error_lines(err)
        assert "failed after 2 attempt(s): timeout after 0.3s" in line and "rerun the same command to resume" in line
        pack = pack_of(tmp_path, "stalled")
        assert assert_prefix_without_duplicates(pack) == MINI_IDS[:5]
        assert_journals_whole(pack)
        assert run_qa(server, tmp_path, "stalled", *args) == 0
    assert_same_as_undisturbed(pack, undisturbed)
