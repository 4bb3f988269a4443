"""Shared pieces of the fault-injection suite: a qa run on the mini fixture against a
scripted server, the undisturbed run it is compared with, and the checks that nothing was
lost, duplicated or torn.

Every run goes over real HTTP to `ScriptedOpenAIServer` on 127.0.0.1. Faults are injected
by the server (statuses, stalls, a crash and a restart on the same port) or by the disk
(a size-limited tmpfs); the run is then compared row for row with an undisturbed one.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from conftest import FIXTURES, scripted_reader

from memorybench.benchmarks.locomo.data import load_locomo
from memorybench.cli import main
from memorybench.data import iter_questions
from memorybench.testing.scripted_server import Action, ScriptedOpenAIServer, echo_responder

MINI = FIXTURES / "mini_locomo.json"
#: the mini fixture's question ids in file order: the rows every finished run must hold, once each
MINI_IDS = [q.question_id for q in iter_questions(load_locomo(MINI))]
#: files whose bytes do not depend on the server, the retries or the wall clock
SAME_BYTES = ("predictions.jsonl", "predictions.csv", "memory/manifest.jsonl", "memory/lineage.jsonl", "REFERENCE_PIN.json")
#: fast retries for tests: waits are capped well under a second
FAST_RETRIES = ("reader.retry_max_wait_s=0.05",)


def qa_argv(server: ScriptedOpenAIServer, root: Path, name: str, *extra: str) -> list[str]:
    """`memorybench qa` on the mini fixture, every path under `root`."""
    return [
        "qa",
        *scripted_reader(server.base_url),
        f"dataset.path={MINI}",
        f"paths.packs={root / 'packs'}",
        f"paths.cache={root / 'cache'}",
        f"name={name}",
        *extra,
    ]


def run_qa(server: ScriptedOpenAIServer, root: Path, name: str, *extra: str) -> int:
    """The CLI in process; the exit code (Hydra ends a failed job with SystemExit)."""
    try:
        return main(qa_argv(server, root, name, *extra))
    except SystemExit as e:
        return int(e.code or 0)


def pack_of(root: Path, name: str) -> Path:
    (pack,) = (root / "packs" / name / "runs").iterdir()
    return pack


def rows(path: Path) -> list[dict[str, Any]]:
    """Every row of a journal; fails on a torn or non-JSON line (a journal must stay whole)."""
    data = path.read_bytes()
    assert not data or data.endswith(b"\n"), f"{path} ends in a torn line: {data[-60:]!r}"
    return [json.loads(line) for line in data.decode("utf-8").splitlines()]


def assert_journals_whole(pack: Path) -> None:
    """Every JSONL file of the pack ends on a whole row and every row parses."""
    for path in sorted(pack.rglob("*.jsonl")):
        rows(path)
    assert not list(pack.rglob("*.part")), "a temporary file of an interrupted write was left behind"


def assert_prefix_without_duplicates(pack: Path) -> list[str]:
    """The answered question ids: a prefix of the run's questions in file order, each once."""
    ids = [r["question_id"] for r in rows(pack / "predictions.jsonl")] if (pack / "predictions.jsonl").exists() else []
    assert ids == MINI_IDS[: len(ids)], ids
    traced = [r["question_id"] for r in rows(pack / "reader/traces.jsonl")] if (pack / "reader/traces.jsonl").exists() else []
    # a trace may be one row ahead of its prediction (written just before a failure); never behind or twice
    assert traced[: len(ids)] == ids and len(traced) - len(ids) <= 1 and len(set(traced)) == len(traced), traced
    return ids


def assert_same_as_undisturbed(pack: Path, undisturbed: Path) -> None:
    """The finished pack holds exactly the undisturbed run's rows and scores."""
    assert (pack / "_SUCCESS").is_file()
    assert [r["question_id"] for r in rows(pack / "predictions.jsonl")] == MINI_IDS
    for name in SAME_BYTES:
        assert (pack / name).read_bytes() == (undisturbed / name).read_bytes(), name
    metrics = [json.loads((p / "metrics.json").read_text()) for p in (pack, undisturbed)]
    for m in metrics:
        del m["usage"]["reader"]["latency_s"]  # wall clock
    assert metrics[0]["scores"] == metrics[1]["scores"] and metrics[0]["counts"] == metrics[1]["counts"]
    # the answers: the same reply text for each question, traced once each
    replies = {r["question_id"]: r["response"]["text"] for r in rows(pack / "reader/traces.jsonl")}
    assert replies == {r["question_id"]: r["response"]["text"] for r in rows(undisturbed / "reader/traces.jsonl")}


def attempts_of(pack: Path) -> list[list[dict[str, Any]]]:
    """Each trace's attempts, in trace order."""
    return [r["response"]["attempts"] for r in rows(pack / "reader/traces.jsonl")]


def undisturbed_run(root: Path) -> Path:
    """The same questions over a server that never fails."""
    with ScriptedOpenAIServer() as server:
        assert run_qa(server, root, "undisturbed") == 0
    return pack_of(root, "undisturbed")


class PerQuestion:
    """A responder that plays a script per question: `faults[n]` are the actions for the
    n-th distinct question asked (0-based), then the echo reply. Retries of a question are
    recognised by their identical user message, so the script follows the question, not
    the request count."""

    def __init__(self, faults: dict[int, list[Action | Callable[[], Action]]]) -> None:
        self.faults = faults
        self.order: list[str] = []  # user messages in the order first asked
        self.served: dict[str, int] = {}  # user message -> actions of its script used so far

    def __call__(self, body: dict[str, Any]) -> Action:
        user = body["messages"][-1]["content"]
        if user not in self.served:
            self.order.append(user)
            self.served[user] = 0
        script = self.faults.get(self.order.index(user), [])
        step = self.served[user]
        self.served[user] = step + 1
        if step < len(script):
            action = script[step]
            return action() if callable(action) else action
        return echo_responder(body)
