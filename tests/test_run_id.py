"""memorybench.run_id: a credential never becomes part of a run id (issue 29, secrets)."""

from __future__ import annotations

import pytest
from conftest import FIXTURES, cli_in_process, scripted_reader

MINI = FIXTURES / "mini_locomo.json"
KEY = "sk-test-RUNID-0123456789abcdef"


def args(tmp_path, model: str) -> list[str]:
    return [
        *scripted_reader("http://127.0.0.1:9/v1", model=model),
        f"dataset.path={MINI}",
        f"paths.packs={tmp_path / 'packs'}",
        f"paths.cache={tmp_path / 'cache'}",
    ]


@pytest.mark.parametrize("command", ["qa", "plan"])
def test_a_key_pasted_as_the_model_is_refused_in_one_line(command, tmp_path, monkeypatch):
    # the key the user exported, pasted as reader.model: it would name the pack folder and bucket paths
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    outcome = cli_in_process([command, *args(tmp_path, KEY)], cwd=tmp_path)
    assert outcome.returncode != 0
    lines = outcome.stderr.strip().splitlines()
    assert len(lines) == 1 and "reader.model holds a credential" in lines[0] and "Traceback" not in outcome.stderr
    assert KEY not in outcome.stdout + outcome.stderr and KEY.lower() not in outcome.stdout + outcome.stderr
    assert not any(KEY.lower() in str(p).lower() for p in tmp_path.rglob("*"))


def test_a_key_shaped_model_is_refused_even_when_not_exported(tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    refused = cli_in_process(["plan", *args(tmp_path, KEY)], cwd=tmp_path)
    assert refused.returncode != 0 and "reader.model holds a credential" in refused.stderr and KEY not in refused.stderr
    planned = cli_in_process(["plan", *args(tmp_path, "gpt-4o-mini")], cwd=tmp_path)
    assert planned.returncode == 0 and "-gpt-4o-mini-" in planned.stdout
