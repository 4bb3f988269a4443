"""A reader that loops (issue 39, item 1): one long token never makes a pack unfinishable.

A reply of 1,200 `y` made LoCoMo F1's Porter stemmer raise RecursionError; qa ended with a
traceback and no `_SUCCESS`, and every rerun replayed the stored answer into the same crash.
Through the CLI: replies of 10,000 `y` and of 100,000 letters without a space give finished
packs that verify, on LoCoMo and on LongMemEval, and so does an import of such a hypothesis.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from conftest import FIXTURES, scripted_reader

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fixtures"))
from make_longmemeval import make_longmemeval  # noqa: E402

from memorybench.cli import main  # noqa: E402
from memorybench.pack.verify import verify_pack  # noqa: E402
from memorybench.testing.scripted_server import Reply, ScriptedOpenAIServer  # noqa: E402

LOOPS = {"y10k": "y" * 10_000, "letters100k": "ya" * 50_000}


def _run(tmp: Path, reply: str, *dataset: str) -> Path:
    with ScriptedOpenAIServer(responder=lambda body: Reply(reply)) as server:
        code = main(
            [
                "qa",
                *dataset,
                *scripted_reader(server.base_url),
                "reader.max_answer_chars=200000",
                "max_questions=6",
                f"paths.packs={tmp / 'packs'}",
                f"paths.cache={tmp / 'cache'}",
                "name=loop",
            ]
        )
    assert code == 0
    (pack,) = (tmp / "packs" / "loop" / "runs").iterdir()
    return pack


@pytest.mark.parametrize("name", sorted(LOOPS))
def test_a_locomo_run_of_one_long_token_finishes_and_verifies(name, tmp_path):
    pack = _run(tmp_path, LOOPS[name], f"dataset.path={FIXTURES / 'mini_locomo.json'}")
    assert (pack / "_SUCCESS").is_file() and verify_pack(pack) == []
    rows = [json.loads(line) for line in (pack / "predictions.jsonl").read_text("utf-8").splitlines()]
    assert len(rows) == 6 and {len(r["prediction"]) for r in rows} == {len(LOOPS[name])}
    metrics = json.loads((pack / "metrics.json").read_text("utf-8"))
    assert metrics["scores"]["locomo_f1"]["subsets"]["1-4"]["value"] == 0.0  # no gold token in a loop


@pytest.mark.parametrize("name", sorted(LOOPS))
def test_a_longmemeval_run_of_one_long_token_finishes_and_verifies(name, tmp_path):
    data = make_longmemeval(tmp_path / "lme.json")
    pack = _run(tmp_path, LOOPS[name], "dataset=longmemeval_oracle", f"dataset.path={data}")
    assert (pack / "_SUCCESS").is_file() and verify_pack(pack) == []


def test_a_longmemeval_hypothesis_of_one_long_token_imports_and_verifies(tmp_path, capsys):
    data = make_longmemeval(tmp_path / "lme.json")
    items = json.loads(data.read_text("utf-8"))
    hypotheses = tmp_path / "hyp.jsonl"
    hypotheses.write_text(
        "".join(json.dumps({"question_id": it["question_id"], "hypothesis": "y" * 10_000}) + "\n" for it in items), "utf-8"
    )
    code = main(
        [
            "import",
            str(hypotheses),
            "--format",
            "longmemeval_hypotheses",
            "--dataset",
            "longmemeval_oracle",
            "--dataset-path",
            str(data),
            "--packs",
            str(tmp_path / "packs"),
        ]
    )
    assert code == 0, capsys.readouterr().err
    (pack,) = (tmp_path / "packs").glob("*/runs/*")
    assert verify_pack(pack) == []
