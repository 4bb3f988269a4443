"""The Codex agent over a LongMemEval haystack (issue 32, item 3): sessions as files, read by
the real CLI against the scripted Responses server. LongMemEval's session ids say which
sessions hold the answer (the evidence sessions' ids start with `answer_`), so the workspace
shows each turn by its place (`D1:1`), never by its own id, and the trajectory maps what the
agent read back to the turns' own ids: recall against the evidence turns works as on LoCoMo."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from memorybench.cli import main
from memorybench.pack.verify import verify_pack
from memorybench.testing.scripted_responses import Message, ScriptedResponsesServer, Shell

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fixtures"))
from make_longmemeval import make_longmemeval  # noqa: E402


def rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]


def test_the_agent_reads_sessions_by_place_never_by_their_telling_ids_and_recall_maps_back(tmp_path):
    data = make_longmemeval(tmp_path / "lme.json", questions=2)
    with ScriptedResponsesServer() as server:
        server.script(Shell("cat sessions/session_1.md"), Message("Lisbon"), Shell("cat sessions/session_2.md"), Message("Oslo"))
        code = main(
            [
                "qa",
                "answerer=codex",
                "answerer.provider=openai_compatible",
                f"answerer.base_url={server.base_url}",
                "answerer.model=scripted",
                "answerer.api_key_env=null",
                "answerer.request_max_retries=0",
                "answerer.stream_max_retries=0",
                "answerer.timeout_s=60",
                "memory=workspace_files",
                "dataset=longmemeval_oracle",
                f"dataset.path={data}",
                f"paths.packs={tmp_path / 'packs'}",
                f"paths.cache={tmp_path / 'cache'}",
            ]
        )
        sent = json.dumps(server.requests)
    assert code == 0
    (pack,) = (tmp_path / "packs" / "default" / "runs").iterdir()
    assert verify_pack(pack) == []
    session = (pack / "agent" / "workspaces" / "lme000" / "sessions" / "session_1.md").read_text()
    assert "[D1:1] user: I moved to Lisbon last spring" in session
    workspace = "\n".join(p.read_text() for p in (pack / "agent" / "workspaces").rglob("*.md"))
    for item in json.loads(data.read_text()):
        for sid in item["haystack_session_ids"]:
            assert sid not in workspace and sid not in sent  # no session id reaches the agent or its model
    steps = {r["question_id"]: r for r in rows(pack / "agent" / "trajectory.jsonl")}
    # session_1 of lme000 is its evidence session (answer_000_a); lme001 read session_2, a filler one
    assert steps["lme000"]["dia_ids"] == ["answer_000_a:0", "answer_000_a:1"]
    assert steps["lme001"]["dia_ids"] == ["noise_001_b:0", "noise_001_b:1"]
    recall = {r["question_id"]: r for r in rows(pack / "agent" / "recall.jsonl")}
    assert recall["lme000"]["found"] == ["answer_000_a:0"] and recall["lme000"]["memory_recall"] == 1.0
    assert recall["lme001"]["found"] == [] and recall["lme001"]["memory_recall"] == 0.0
