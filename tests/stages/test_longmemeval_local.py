"""LongMemEval on the embedded model as README shows it (issue 32, item 7): `qa
experiment=longmemeval` (the authors' step-by-step reader prompt, full_context, 800 tokens)
over a made oracle-shaped file, every question answered by the real llama.cpp server, a pack
that verifies and is labelled local."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from memorybench.cli import main
from memorybench.pack.verify import verify_pack

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fixtures"))
from make_longmemeval import make_longmemeval  # noqa: E402


@pytest.mark.local_model
def test_the_readme_longmemeval_run_finishes_on_the_embedded_model(tmp_path, capsys):
    data = make_longmemeval(tmp_path / "lme.json", questions=6)
    code = main(
        [
            "qa",
            "experiment=longmemeval",
            f"dataset.path={data}",
            "max_questions=6",
            f"paths.packs={tmp_path / 'packs'}",
            f"paths.cache={tmp_path / 'cache'}",
        ]
    )
    assert code == 0
    (pack,) = (tmp_path / "packs" / "longmemeval" / "runs").iterdir()
    assert verify_pack(pack) == []
    rows = [json.loads(line) for line in (pack / "predictions.jsonl").read_text().splitlines()]
    assert len(rows) == 6 and all(r["prediction"].strip() for r in rows)
    traces = [json.loads(line) for line in (pack / "reader" / "traces.jsonl").read_text().splitlines()]
    assert {t["request"]["renderer"] for t in traces} == {"longmemeval_con"}
    assert all(t["request"]["max_tokens"] == 800 for t in traces)
    printed = capsys.readouterr()
    assert "Embedded local model: not comparable with published LongMemEval numbers." in printed.out + printed.err
    meta = json.loads((pack / "run_meta.json").read_text())
    assert meta["choices"]["dataset"] == "longmemeval_oracle" and meta["local_model"] is True
