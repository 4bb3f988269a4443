"""`memorybench qa` end to end over real HTTP: pack contents, order, resume, errors."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import FIXTURES, run_cli, scripted_reader

from memorybench.answer.prompt import fill_template
from memorybench.benchmarks.locomo.data import load_locomo
from memorybench.cli import main
from memorybench.data import iter_questions
from memorybench.stages.rescore import rescore

MINI = FIXTURES / "mini_locomo.json"


def packs_of(tmp_path: Path) -> list[Path]:
    return sorted((tmp_path / "packs").glob("*/runs/*"))


def qa_args(tmp_path: Path, server, *extra: str) -> list[str]:
    return [
        "qa",
        *scripted_reader(server.base_url),
        f"paths.packs={tmp_path / 'packs'}",
        f"paths.cache={tmp_path / 'cache'}",
        *extra,
    ]


def test_mini_run_writes_a_complete_pack(tmp_path, scripted_server, capsys):
    assert main(qa_args(tmp_path, scripted_server, f"dataset.path={MINI}", "name=mini")) == 0
    (pack,) = packs_of(tmp_path)
    assert pack.parent.parent.name == "mini"
    for name in (
        "config.resolved.yaml",
        "run_meta.json",
        "TRACE.md",
        "predictions.jsonl",
        "predictions.csv",
        "metrics.json",
        "reader/traces.jsonl",
        "memory/lineage.jsonl",
        "memory/manifest.jsonl",
        "REFERENCE_PIN.json",
        "prompts/readers/qa_v1.txt",
        "prompts/system.txt",
        "_SUCCESS",
    ):
        assert (pack / name).is_file(), name
    rows = [json.loads(line) for line in (pack / "predictions.jsonl").read_text().splitlines()]
    expected = [q.question_id for q in iter_questions(load_locomo(MINI))]
    assert [r["question_id"] for r in rows] == expected
    assert all(r["schema"] == "prediction.v1" for r in rows)
    assert rows[2]["gold"] == 3 and rows[4]["gold"] is None and rows[4]["adversarial_answer"] == "Biscuit"
    # one request per question, in file order, and the memory stored once per conversation
    assert len(scripted_server.requests) == 10
    assert sorted(p.name for p in (pack / "memory" / "dumps").iterdir()) == ["mini-1.txt", "mini-2.txt"]
    metrics = json.loads((pack / "metrics.json").read_text())
    assert set(metrics["scores"]["locomo_f1"]["by_kind"]) == {"1", "2", "3", "4", "5"}
    assert metrics["counts"]["total"] == 10
    # _SUCCESS is written last
    newest = max(p.stat().st_mtime_ns for p in pack.rglob("*") if p.is_file() and p.name != "_SUCCESS")
    assert (pack / "_SUCCESS").stat().st_mtime_ns >= newest
    out = capsys.readouterr().out
    assert "5   adversarial" in out and "LoCoMo F1" in out


def test_payload_hash_rebuilds_from_references(tmp_path, scripted_server):
    main(qa_args(tmp_path, scripted_server, f"dataset.path={MINI}"))
    (pack,) = packs_of(tmp_path)
    pin = json.loads((pack / "REFERENCE_PIN.json").read_text())
    import hashlib

    for line, sent in zip((pack / "reader/traces.jsonl").read_text().splitlines(), scripted_server.requests):
        trace = json.loads(line)
        slots = trace["request"]["slots"]
        memory = (pack / pin["refs"][slots["memory"]["ref"]]["path"]).read_text("utf-8")
        template = (pack / "prompts" / trace["request"]["template"]).read_text("utf-8")
        text = fill_template(template, memory, slots["question"]["text"])
        assert text == sent["messages"][1]["content"]
        assert hashlib.sha256(text.encode()).hexdigest() == trace["reader_payload_sha256"]
        assert sent["messages"][0] == {"role": "system", "content": "You answer questions using only the provided memory."}


def test_rescore_is_byte_identical(tmp_path, scripted_server):
    main(qa_args(tmp_path, scripted_server, f"dataset.path={MINI}"))
    (pack,) = packs_of(tmp_path)
    before = {n: (pack / n).read_bytes() for n in ("predictions.csv", "metrics.json")}
    stamps = {n: (pack / n).stat().st_mtime_ns for n in before}
    rescore(pack)
    rescore(pack)
    assert {n: (pack / n).read_bytes() for n in before} == before
    # unchanged scores leave the files untouched: _SUCCESS is still the pack's last write
    assert {n: (pack / n).stat().st_mtime_ns for n in before} == stamps


def test_a_complete_pack_is_not_rerun(tmp_path, scripted_server):
    args = qa_args(tmp_path, scripted_server, f"dataset.path={MINI}", "max_questions=3")
    main(args)
    main(args)
    assert len(scripted_server.requests) == 3


def test_same_experiment_same_run_id_on_any_paths(tmp_path, scripted_server):
    main(qa_args(tmp_path / "a", scripted_server, f"dataset.path={MINI}", "max_questions=2"))
    main(qa_args(tmp_path / "b", scripted_server, f"dataset.path={MINI}", "max_questions=2", "reader.timeout_s=5"))
    assert [p.name for p in packs_of(tmp_path / "a")] == [p.name for p in packs_of(tmp_path / "b")]


def _gold_needles(conversation, questions, with_summaries: bool) -> set[str]:
    """Gold strings (length >= 4) of any question that are not in this conversation's source text.

    The released session summaries are source text of the file too: a gold phrase they
    contain verbatim is memory, not leakage.
    """
    text = conversation.text_blob()
    if with_summaries:
        text += "\n" + "\n".join(conversation.session_summaries.values())
    text = text.lower()
    golds = {g.strip().lower() for q in questions for g in q.gold_strings()}
    return {g for g in golds if len(g) >= 4 and g not in text}


def test_no_gold_reaches_any_prompt_on_the_real_data(tmp_path, scripted_server, conversations):
    # all of conv-26 and the start of conv-30, for both memories
    n = len(conversations[0].questions) + 20
    questions = list(iter_questions(conversations))[:n]
    by_id = {c.sample_id: c for c in conversations}
    for memory in ("full_context", "session_summaries"):
        scripted_server.requests.clear()
        assert main(qa_args(tmp_path, scripted_server, f"max_questions={n}", f"memory={memory}")) == 0
        assert len(scripted_server.requests) == n
        needles = {
            sid: _gold_needles(by_id[sid], questions, with_summaries=memory == "session_summaries")
            for sid in ("conv-26", "conv-30")
        }
        assert min(len(v) for v in needles.values()) > 50  # the check has teeth
        for body, question in zip(scripted_server.requests, questions):
            prompt = "\n".join(m["content"] for m in body["messages"]).lower()
            # a question may name another question's gold ("When is Melanie's daughter's birthday?")
            assert question.question.lower() in prompt
            prompt = prompt.replace(question.question.lower(), "")
            leaked = [g for g in needles[question.sample_id] if g in prompt]
            assert not leaked, (memory, question.question_id, leaked[:3])


def test_kill_minus_nine_then_resume_equals_an_uninterrupted_run(tmp_path, conversations):
    from memorybench.testing.scripted_server import ScriptedOpenAIServer, echo_responder

    def slow(body):
        time.sleep(0.03)
        return echo_responder(body)

    with ScriptedOpenAIServer(responder=slow) as server:
        common = [*qa_args(tmp_path, server, "max_questions=60", "memory=session_summaries")[1:]]
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        proc = subprocess.Popen(
            [sys.executable, "-m", "memorybench.cli", "qa", *common, "name=killed"],
            cwd=tmp_path,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        predictions = None
        deadline = time.time() + 120
        while time.time() < deadline:
            found = list((tmp_path / "packs" / "killed").glob("runs/*/predictions.jsonl"))
            if found and found[0].read_bytes().count(b"\n") >= 25:
                predictions = found[0]
                break
            time.sleep(0.01)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        assert predictions is not None, "the run never reached 25 answers"
        pack = predictions.parent
        assert not (pack / "_SUCCESS").exists()
        # simulate the worst case: a torn last line
        with predictions.open("ab") as f:
            f.write(b'{"schema":"prediction.v1","question_id":"conv-26-q-')
        resumed = run_cli("qa", *common, "name=killed", cwd=tmp_path)
        assert resumed.returncode == 0, resumed.stderr
        straight = run_cli("qa", *common, "name=straight", cwd=tmp_path)
        assert straight.returncode == 0, straight.stderr
    other = tmp_path / "packs" / "straight" / "runs" / pack.name
    for name in ("predictions.jsonl", "predictions.csv", "memory/lineage.jsonl", "memory/manifest.jsonl", "REFERENCE_PIN.json"):
        assert (pack / name).read_bytes() == (other / name).read_bytes(), name
    metrics = [json.loads((p / "metrics.json").read_text()) for p in (pack, other)]
    for m in metrics:
        del m["usage"]["reader"]["latency_s"]  # wall-clock: the only field that may differ
    assert metrics[0] == metrics[1]
    ids = [json.loads(line)["question_id"] for line in (pack / "reader/traces.jsonl").read_text().splitlines()]
    assert ids == [q.question_id for q in list(iter_questions(conversations))[:60]]
    assert json.loads((pack / "run_meta.json").read_text())["resumed"] == 1


@pytest.mark.parametrize(
    "args, expected",
    [
        (["qa", "memory=fullcontext"], "unknown memory option 'fullcontext'. Did you mean 'full_context'?"),
        (["qa", "reader=openai_compatible"], "reader.base_url is required"),
        (["qa", "max_questions=-1"], "max_questions=-1 must be at least 1"),
        (["qa", "memory=graph", "writer=local", "writer.json_max_items=0"], "writer.json_max_items=0 must be at least 1"),
        (["qa", "reader.temperature=hot"], "could not be converted to Float"),
        (["qa", "dataset.path=/nonexistent/locomo.json"], "does not exist"),
        (["rescore", "/nonexistent/pack"], "does not exist"),
        (["frobnicate"], "unknown command 'frobnicate'"),
    ],
)
def test_bad_input_is_one_line_without_traceback(args, expected, tmp_path):
    result = run_cli(*args, cwd=tmp_path)
    assert result.returncode != 0
    assert "Traceback" not in result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert expected in lines[0]


def test_openai_reader_without_key_fails_before_any_call(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    result = subprocess.run(
        [sys.executable, "-m", "memorybench.cli", "qa", "reader=openai", f"paths.packs={tmp_path}"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 2 and "OPENAI_API_KEY is not set" in result.stderr
    assert "Traceback" not in result.stderr


def test_the_summary_of_a_run_served_from_the_cache_says_so_instead_of_none():
    from memorybench.stages.rescore import format_table

    reader = {
        "calls": 3,
        "prompt_tokens": 30,
        "completion_tokens": 6,
        "cached_tokens": 0,
        "cost_usd": 0,
        "cost_known": False,
        "retries": 0,
        "cache_hits": 3,
        "models_answered": ["m"],
        "latency_s": {"p50": None, "p95": None, "mean": None},
    }
    category = {"overall": 0.5, "by_category": {str(c): 0.5 for c in range(1, 6)}}
    metrics = {
        "counts": {"total": 3, "by_category": {str(c): 1 for c in range(1, 6)}},
        "locomo_f1": category,
        "exact_match": category,
        "token_f1": category,
        "usage": {"reader": reader},
    }
    line = next(x for x in format_table(metrics).splitlines() if x.startswith("reader:"))
    assert "None" not in line and "no latency (3 calls from the response cache)" in line and "cost unknown" in line


def test_the_qa_summary_says_how_to_get_j(capsys):
    """Issue 30, item 9: the qa table ends with the autorater command for this pack."""
    from types import SimpleNamespace

    from memorybench.stages import qa as qa_stage

    category = {"overall": 0.5, "by_category": {str(c): 0.5 for c in range(1, 6)}}
    metrics = {
        "counts": {"total": 3, "by_category": {str(c): 1 for c in range(1, 6)}},
        "locomo_f1": category,
        "exact_match": category,
        "token_f1": category,
        "usage": {},
    }
    qa_stage.print_summary(SimpleNamespace(metrics=metrics, pack_uri="/p/default/runs/r1"))  # type: ignore[arg-type]
    last = capsys.readouterr().out.splitlines()[-1]
    assert last.startswith("J (Mem0's LLM judge, categories 1-4): memorybench autorater /p/default/runs/r1")
