"""Every memory method end to end: `memorybench qa memory=NAME` on the mini fixture with a
scripted reader and a scripted writer over real HTTP; the pack verifies; resume and the
memory budget."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import FIXTURES, scripted_reader
from memtest import writer_responder

from memorybench.cli import main
from memorybench.pack.verify import verify_pack
from memorybench.testing.scripted_server import ScriptedOpenAIServer, Status, echo_responder

MINI = FIXTURES / "mini_locomo.json"
#: method -> extra overrides
METHODS = {  # full_context: tests/stages/test_qa.py
    "raw_chunks": [],
    "rag": [],
    "session_summaries": ["memory.source=writer"],
    "graph": [],
    "mem0": [],
    "mem0g": [],
    "openai_memory": [],
}
WRITES = {"session_summaries", "graph", "mem0", "mem0g", "openai_memory"}


def rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()] if path.is_file() else []


@pytest.fixture(scope="module")
def servers():
    with ScriptedOpenAIServer() as reader, ScriptedOpenAIServer(responder=writer_responder) as writer:
        yield reader, writer


def qa(tmp: Path, reader, writer, *extra: str, name: str = "smoke") -> int:
    """`memorybench qa ...`; its exit code (a job's error ends Hydra's task with SystemExit)."""
    try:
        return _qa(tmp, reader, writer, *extra, name=name)
    except SystemExit as e:
        return int(e.code or 0)


def _qa(tmp: Path, reader, writer, *extra: str, name: str = "smoke") -> int:
    return main(
        [
            "qa",
            *scripted_reader(reader.base_url),
            "writer=openai_compatible",
            f"writer.base_url={writer.base_url}",
            "writer.model=scripted-writer",
            "embedder=hashing",
            f"dataset.path={MINI}",
            f"paths.packs={tmp / 'packs'}",
            f"paths.cache={tmp / 'cache'}",
            f"name={name}",
            *extra,
        ]
    )


def only_pack(tmp: Path, name: str = "smoke") -> Path:
    (pack,) = (tmp / "packs" / name / "runs").iterdir()
    return pack


@pytest.mark.parametrize("method", list(METHODS))
def test_each_method_end_to_end(method, tmp_path, servers):
    reader, writer = servers
    reader.requests.clear()
    writer.requests.clear()
    assert qa(tmp_path, reader, writer, f"memory={method}", *METHODS[method]) == 0
    pack = only_pack(tmp_path)
    assert verify_pack(pack) == []
    assert len(reader.requests) == 10
    manifest = rows(pack / "memory/manifest.jsonl")
    assert [r["sample_id"] for r in manifest] == ["mini-1", "mini-2"] and {r["method"] for r in manifest} == {method}
    # build cost: one row per conversation, apart from the reader's
    costs = rows(pack / "memory/build_cost.jsonl")
    assert [c["sample_id"] for c in costs] == ["mini-1", "mini-2"]
    lineage = rows(pack / "memory/lineage.jsonl")
    assert lineage and all(r["sources"] for r in lineage)
    assert sum(1 for r in lineage if r["sample_id"] == "mini-1") == manifest[0]["item_count"]
    calls = rows(pack / "memory/writer/calls.jsonl")
    if method in WRITES:
        assert len(calls) == len(writer.requests) == sum(c["writer"]["calls"] for c in costs) > 0
        assert all(c["ok"] and c["sample_id"] in ("mini-1", "mini-2") for c in calls)
        meta = json.loads((pack / "run_meta.json").read_text())
        assert [m["role"] for m in meta["models"]] == ["reader", "writer"] + (["embedder"] if method in ("mem0", "mem0g") else [])
        assert any("written by writer=openai_compatible" in n for n in meta["notes"])
        assert all(p in meta["prompts"] for p in ("writers/system_v1.txt",))
    else:
        assert not calls and not writer.requests
    question_dependent = manifest[0]["question_dependent"]
    assert question_dependent == (method in ("raw_chunks", "rag", "mem0", "mem0g"))
    if question_dependent:
        retrievals = rows(pack / f"memory/{method}/retrievals.jsonl")
        assert len(retrievals) == 10 and all(r["hits"] or r["memory_tokens"] == 0 for r in retrievals)
    if method in ("mem0", "mem0g", "openai_memory", "graph"):
        assert any("local clone" in json.dumps(r["metadata"]) for r in manifest) == (method != "graph")
    if method == "session_summaries":
        check_written_summaries(pack)


def check_written_summaries(pack: Path) -> None:
    manifest = rows(pack / "memory/manifest.jsonl")
    assert all(r["metadata"]["summaries"] == "writer" for r in manifest)
    assert all(r["metadata"]["writer"]["model"] == "scripted-writer" for r in manifest)
    stored = sorted(p.relative_to(pack).as_posix() for p in (pack / "memory/writer/sessions").rglob("*.txt"))
    assert stored == [f"memory/writer/sessions/mini-{c}/session_{s}.txt" for c in (1, 2) for s in (1, 2)]
    dump = (pack / "memory/dumps/mini-1.txt").read_text()
    assert dump.startswith("[Session 1]\n") and "\n\n[Session 2]\n" in dump
    # one call per session, and the writer saw that session's text, nothing else
    calls = rows(pack / "memory/writer/calls.jsonl")
    assert [(c["sample_id"], c["session"], c["role"]) for c in calls] == [
        (f"mini-{c}", s, "summary") for c in (1, 2) for s in (1, 2)
    ]
    first = calls[0]["request"]["messages"][1]["content"]
    assert "Session date: 1:56 pm on 8 May, 2023" in first and "Biscuit is 3" not in first
    notes = json.loads((pack / "run_meta.json").read_text())["notes"]
    assert any(n.startswith("The session summaries were written by writer=openai_compatible") for n in notes)


def test_a_resumed_run_does_not_build_memory_again(tmp_path):
    """The reader fails at question 7: memory of both conversations is already committed,
    so the rerun makes no writer call and writes no memory row twice."""
    seen = []

    def stop_once_at_the_seventh(body):
        seen.append(1)
        return Status(400, message="scripted stop") if len(seen) == 7 else echo_responder(body)

    with ScriptedOpenAIServer(responder=writer_responder) as writer, ScriptedOpenAIServer(stop_once_at_the_seventh) as reader:
        assert qa(tmp_path, reader, writer, "memory=mem0g", name="cut") == 3  # a 400 is not retried
        before = len(writer.requests)
        assert before > 0
        assert qa(tmp_path, reader, writer, "memory=mem0g", name="cut") == 0
        assert len(writer.requests) == before
    cut = only_pack(tmp_path, "cut")
    assert len(rows(cut / "memory/build_cost.jsonl")) == 2
    assert len(rows(cut / "memory/writer/calls.jsonl")) == before
    ops = rows(cut / "memory/mem0g/operations.jsonl")
    assert sum(o["event"] == "EXTRACT" for o in ops) == 12  # 2 conversations x 2 speakers x 3 pairs
    assert [r["question_id"] for r in rows(cut / "memory/mem0g/retrievals.jsonl")] == [
        f"mini-{c}-q-{i}" for c in (1, 2) for i in range(5)
    ]
    assert json.loads((cut / "run_meta.json").read_text())["resumed"] == 1
    assert verify_pack(cut) == []


def test_the_budget_caps_what_the_reader_gets(tmp_path, servers):
    from memorybench.memory._tokens import count_tokens

    reader, writer = servers
    reader.requests.clear()
    assert qa(tmp_path, reader, writer, "memory=mem0", "budget.max_memory_tokens=30", name="capped") == 0
    pack = only_pack(tmp_path, "capped")
    retrievals = rows(pack / "memory/mem0/retrievals.jsonl")
    assert any(r["dropped_by_budget"] > 0 for r in retrievals)
    assert all(r["memory_tokens"] <= 30 for r in retrievals)
    for body in reader.requests:
        user = body["messages"][1]["content"]
        memory = user.split("two people.\n\n", 1)[1].split("\n\nAnswer the question", 1)[0]
        assert count_tokens(memory) <= 30
    meta = json.loads((pack / "run_meta.json").read_text())
    assert any("capped at 30 cl100k_base tokens" in n for n in meta["notes"])
    assert rows(pack / "memory/manifest.jsonl")[0]["metadata"]["budget"]["max_memory_tokens"] == 30

    assert verify_pack(pack) == []


def test_a_writer_method_without_a_writer_fails_in_one_line(tmp_path, servers, capsys):
    reader, _ = servers
    reader.requests.clear()
    args = ["qa", *scripted_reader(reader.base_url), f"dataset.path={MINI}", f"paths.packs={tmp_path}", "memory=graph"]
    assert main(args) == 2 and not reader.requests  # refused while planning, before Hydra runs the job
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        "memorybench: error: memory=graph writes its memory with a model, but writer=none; add writer=openai, "
        "writer=local, or writer=openai_compatible writer.base_url=... writer.model=..."
    ]


@pytest.mark.parametrize("method", list(METHODS))
def test_each_method_end_to_end_on_the_real_data(method, tmp_path, servers, conversations):
    """`memorybench qa memory=NAME` on the pinned locomo10.json: the first conversation's
    memory is built from all of its sessions, its first questions answered, the pack verifies."""
    reader, writer = servers
    reader.requests.clear()
    writer.requests.clear()
    args = [
        "qa",
        *scripted_reader(reader.base_url),
        f"memory={method}",
        *METHODS[method],
        "writer=openai_compatible",
        f"writer.base_url={writer.base_url}",
        "writer.model=scripted-writer",
        "embedder=hashing",
        "max_questions=2",
        f"paths.packs={tmp_path / 'packs'}",
        f"paths.cache={tmp_path / 'cache'}",
        "name=real",
    ]
    try:
        assert main(args) == 0
    except SystemExit as e:  # a job's error ends Hydra's task with SystemExit
        pytest.fail(f"qa exited with {e.code}")
    pack = only_pack(tmp_path, "real")
    assert verify_pack(pack) == []
    conv26 = next(c for c in conversations if c.sample_id == "conv-26")
    (manifest,) = rows(pack / "memory/manifest.jsonl")
    assert manifest["sample_id"] == "conv-26" and manifest["item_count"] > 0
    dia_ids = {t.dia_id for s in conv26.sessions for t in s.turns}
    sessions = {f"session_{s.index}" for s in conv26.sessions}
    lineage = rows(pack / "memory/lineage.jsonl")
    assert len(lineage) == manifest["item_count"] and all(set(r["sources"]) <= dia_ids | sessions for r in lineage)
    (cost,) = rows(pack / "memory/build_cost.jsonl")
    if method in WRITES:
        calls = rows(pack / "memory/writer/calls.jsonl")
        assert len(calls) == cost["writer"]["calls"] == len(writer.requests) > 0
        # every session of the conversation reached the writer, none of another
        assert {c["session"] for c in calls} == {s.index for s in conv26.sessions if s.turns}
        assert {c["sample_id"] for c in calls} == {"conv-26"}
    else:
        assert cost["writer"] is None and not writer.requests
    assert len(reader.requests) == 2 and len(rows(pack / "predictions.jsonl")) == 2
