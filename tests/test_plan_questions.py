"""`plan --questions` lists each question's kind and haystack size; `plan` refuses, before any
call, a LongMemEval run whose haystacks the embedded reader cannot hold."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from conftest import run_cli

sys.path.insert(0, str(Path(__file__).resolve().parent / "fixtures"))
from make_longmemeval import make_longmemeval  # noqa: E402


def test_plan_lists_the_questions_with_their_types_and_sizes(tmp_path):
    path = make_longmemeval(tmp_path / "lme.json")
    done = run_cli("plan", "--questions", "dataset=longmemeval_oracle", f"dataset.path={path}", "max_questions=6", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    header = lines.index("question_id\tkind\tabstention\tsessions\tturns\thaystack_tokens")
    rows = [line.split("\t") for line in lines[header + 1 : header + 7]]
    assert [r[0] for r in rows] == ["lme000", "lme001", "lme002", "lme003", "lme004_abs", "lme005"]
    assert rows[4][1] == "5 temporal-reasoning" and rows[4][2] == "yes" and rows[0][2] == "no"
    assert all(r[3] == "3" and r[4] == "6" and int(r[5]) > 100 for r in rows)


def test_haystacks_too_long_for_the_local_reader_are_refused_before_any_call(tmp_path):
    path = make_longmemeval(tmp_path / "lme.json", questions=3)
    data = json.loads(path.read_text())
    # one haystack of about 50k tokens: more than any embedded model's context
    data[1]["haystack_sessions"][1] = [{"role": "user", "content": "word " * 30000}, {"role": "assistant", "content": "ok"}] * 1
    data[1]["haystack_sessions"][2] = [{"role": "user", "content": "more " * 30000}]
    path.write_text(json.dumps(data))
    done = run_cli("plan", "dataset=longmemeval_s", f"dataset.path={path}", "reader=local", "memory=full_context", cwd=tmp_path)
    assert done.returncode != 0 and "Traceback" not in done.stderr
    (line,) = [x for x in done.stderr.splitlines() if "do not fit" in x]
    assert "1 of 3 questions' haystacks" in line and "nothing is cut silently" in line and "memory=rag" in line
    # a method that retrieves is not refused: its memory is not the whole haystack
    ok = run_cli("plan", "dataset=longmemeval_s", f"dataset.path={path}", "reader=local", "memory=rag", cwd=tmp_path)
    assert ok.returncode == 0, ok.stderr
