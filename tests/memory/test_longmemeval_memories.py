"""Every reader memory method runs on LongMemEval (issue 32, item 3): a made file of six
questions (each its own haystack of sessions, evidence turns flagged `has_answer`), built by
the scripted writer that copies session text, answered by the scripted reader. Each pack
verifies, holds every question, and no writer request carries a question, a gold answer's
session ids or the `has_answer` flag."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from memtest import writer_responder

from memorybench.cli import main
from memorybench.pack.verify import verify_pack
from memorybench.testing.scripted_server import ScriptedOpenAIServer

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fixtures"))
from make_longmemeval import make_longmemeval  # noqa: E402

METHODS = {  # memory overrides
    "full_context": [],
    "session_summaries": ["memory.source=writer"],
    "raw_chunks": [],
    "rag": [],
    "graph": [],
    "openai_memory": [],
    "mem0": [],
    "mem0g": [],
}


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    return make_longmemeval(tmp_path_factory.mktemp("lme") / "lme.json", questions=6)


@pytest.mark.parametrize("method", sorted(METHODS))
def test_each_memory_method_answers_every_longmemeval_question_with_no_gold_at_the_writer(tmp_path, data, method):
    with ScriptedOpenAIServer(responder=writer_responder) as server:
        code = main(
            [
                "qa",
                "dataset=longmemeval_oracle",
                f"dataset.path={data}",
                f"memory={method}",
                *METHODS[method],
                "reader=openai_compatible",
                f"reader.base_url={server.base_url}",
                "reader.model=r",
                "writer=openai_compatible",
                f"writer.base_url={server.base_url}",
                "writer.model=scripted-writer",
                "embedder=hashing",
                f"paths.packs={tmp_path / 'packs'}",
                f"paths.cache={tmp_path / 'cache'}",
            ]
        )
        bodies = [json.dumps(r) for r in server.requests]
    assert code == 0
    (pack,) = (tmp_path / "packs" / "default" / "runs").iterdir()
    assert verify_pack(pack) == []
    rows = [json.loads(line) for line in (pack / "predictions.jsonl").read_text().splitlines()]
    assert len(rows) == 6 and [r["question_id"] for r in rows] == [r["sample_id"] for r in rows]
    items = json.loads(data.read_text())
    writer = [b for b in bodies if '"model": "scripted-writer"' in b]
    assert bool(writer) == (method not in ("full_context", "raw_chunks", "rag"))
    for body in writer:
        assert "has_answer" not in body and "answer_session_ids" not in body
        assert not any(item["question"] in body for item in items)
