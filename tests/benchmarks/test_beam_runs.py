"""BEAM as a dataset like any other, up to judging (issue 42, items 1 and 2): the 128K tier is a
folder dataset, fetched and verified as a whole, planned, run on the scripted server and verified;
a local copy of a tier folder is read and recorded by its manifest's sha256; the tiers without a
pin are refused in one line naming dataset.path; the rubric and the answer-bearing fields are gold
to verify's contamination check."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import PINS, cli_in_process, scripted_reader

from memorybench.benchmark import benchmarks, datasets
from memorybench.benchmarks.beam.data import read_tier
from memorybench.benchmarks.beam.pins import TIER_128K
from memorybench.cli import main
from memorybench.data import pins as pin_module
from memorybench.data.folders import folder_sha256
from memorybench.pack.success import reclose
from memorybench.pack.verify import verify_pack
from memorybench.pack.verify.needles import Needles
from memorybench.testing.scripted_server import ScriptedOpenAIServer

TIER = PINS / "beam" / "chats" / "100K"
FIRST = "beam-100K-1"


def qa(root: Path, server: ScriptedOpenAIServer, name: str, *extra: str) -> Path:
    assert (
        main(
            [
                "qa",
                "dataset=beam_128k",
                *scripted_reader(server.base_url),
                f"paths.packs={root / 'packs'}",
                f"paths.cache={root / 'cache'}",
                f"name={name}",
                *extra,
            ]
        )
        == 0
    )
    (pack,) = (root / "packs" / name / "runs").iterdir()
    return pack


def copy_of(target: Path, numbers=(1, 2)) -> Path:
    for n in numbers:
        shutil.copytree(TIER / str(n), target / str(n))
    return target


@pytest.fixture(scope="module")
def packs(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("beam_packs")
    local = copy_of(root / "copy" / "100K", (1,))
    with ScriptedOpenAIServer() as server:
        return {
            # the first conversation of the pinned tier, its 20 questions
            "pinned": qa(root, server, "pinned", "max_questions=20"),
            "local": qa(root, server, "local", f"dataset.path={local}", "memory=raw_chunks"),
            "copy": local,
        }


def test_a_run_over_the_first_conversation_writes_a_pack_that_verifies(packs):
    pack = packs["pinned"]
    meta = json.loads((pack / "run_meta.json").read_text())
    assert meta["data"]["pinned"] is True and meta["data"]["pin"] == "beam/chats/100K"
    assert meta["data"]["sha256"] == TIER_128K.sha256 and meta["data"]["source_path"] == "chats/100K"
    rows = [json.loads(line) for line in (pack / "predictions.jsonl").read_text().splitlines()]
    assert [r["question_id"] for r in rows] == [f"{FIRST}-q-{i}" for i in range(20)]
    assert verify_pack(pack) == []


def test_a_local_copy_is_recorded_by_its_manifest_and_checked_by_it(packs, tmp_path):
    pack, copy = packs["local"], packs["copy"]
    data = json.loads((pack / "run_meta.json").read_text())["data"]
    assert data["pinned"] is False and data["sha256"] == folder_sha256(copy)
    assert verify_pack(pack) == []
    # a copy of the whole pinned tier hashes to the pin's own number
    assert folder_sha256(copy_of(tmp_path / "whole" / "100K", range(1, 21))) == TIER_128K.sha256
    moved = tmp_path / "packs" / "local" / "runs" / pack.name
    shutil.copytree(pack, moved)
    (copy / "1" / "extra.txt").write_text("a file the copy did not have")
    try:
        codes = {f.code for f in verify_pack(moved)}
    finally:
        (copy / "1" / "extra.txt").unlink()
    assert "hash.data" in codes


def test_the_rubric_and_the_answer_fields_are_gold_to_the_contamination_check(packs, tmp_path):
    conversations = read_tier(TIER).conversations[:1]
    needles = Needles(conversations, with_summaries=False)
    scorer = read_tier(TIER).questions
    blob = conversations[0].text_blob().lower()
    rubric = [
        (q.question_id, item)
        for q in scorer.values()
        if q.sample_id == FIRST
        for item in q.rubric
        if len(item) >= 4 and item.strip().lower() not in blob
    ]
    assert rubric and all(needles.gold_of[item.strip().lower()] == qid for qid, item in rubric[:1])
    assert all(item.strip().lower() in needles.gold_of for _, item in rubric)
    for question in conversations[0].questions:  # none of it is what a model is asked
        assert question.other_gold and not any(g in question.asked().question for g in question.other_gold)
    # planted in the memory the reader was given, a rubric item is a leak naming its question
    pack = tmp_path / "packs" / "pinned" / "runs" / packs["pinned"].name
    shutil.copytree(packs["pinned"], pack)
    qid, item = rubric[0]
    dump = pack / "memory" / "dumps" / f"{FIRST}.txt"
    dump.write_text(dump.read_text("utf-8") + f"\nnote: {item}\n", "utf-8")
    reclose(pack, [dump.relative_to(pack).as_posix()])
    leaks = [f for f in verify_pack(pack) if f.code == "gold.leak"]
    assert leaks and any(qid in f.message and item.strip().lower()[:30] in f.message for f in leaks), leaks


def test_plan_lists_the_400_questions_with_ability_difficulty_and_memory_tokens(tmp_path):
    done = cli_in_process(["plan", "--questions", "dataset=beam_128k", "memory=raw_chunks"], cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    header = lines.index("question_id\tkind\tdifficulty\tabstention\tsessions\tturns\thaystack_tokens")
    rows = [line.split("\t") for line in lines[header + 1 :] if line.startswith("beam-")]
    assert len(rows) == 400 and rows[0][:3] == [f"{FIRST}-q-0", "1 abstention", "medium"]
    assert {r[2] for r in rows} == {"easy", "medium", "hard", "clear", "-"}  # one summarization question has none
    assert rows[2][1:3] == ["2 contradiction_resolution", "clear"] and all(int(r[6]) > 100_000 for r in rows)


def test_a_tier_without_a_pin_is_refused_in_one_line_naming_dataset_path(tmp_path):
    for name in ("beam_500k", "beam_1m", "beam_10m"):
        assert datasets()[name].folder and datasets()[name].pin is None
        done = cli_in_process(["plan", f"dataset={name}", "memory=raw_chunks"], cwd=tmp_path)
        assert done.returncode != 0 and "Traceback" not in done.stderr
        (line,) = [x for x in done.stderr.splitlines() if "has no pin" in x]
        assert f"dataset={name} has no pin" in line and "set dataset.path to a local copy of BEAM's tier folder" in line
    refused = cli_in_process(["fetch", "--dataset", "beam_10m"], cwd=tmp_path)
    assert refused.returncode != 0 and "set dataset.path" in refused.stderr
    # a local copy of the tier's folder (here the 128K tier's first conversation, under the name 10M) is read
    copy = copy_of(tmp_path / "10M", (1,))
    done = cli_in_process(["plan", "--questions", "dataset=beam_10m", f"dataset.path={copy}", "memory=raw_chunks"], cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "beam-10M-1-q-19\t10 temporal_reasoning" in done.stdout


def test_a_local_folders_run_id_is_its_content_not_its_place(tmp_path):
    from memorybench.plan import plan_runs

    one, two = copy_of(tmp_path / "a" / "100K", (1,)), copy_of(tmp_path / "b" / "100K", (1,))
    ids = [plan_runs(["dataset=beam_128k", f"dataset.path={p}", "memory=raw_chunks"], False)[0].run_id for p in (one, two)]
    assert ids[0] == ids[1]
    (two / "1" / "chat.json").write_bytes((two / "1" / "chat.json").read_bytes() + b"\n")
    changed = plan_runs(["dataset=beam_128k", f"dataset.path={two}", "memory=raw_chunks"], False)[0].run_id
    assert changed != ids[0]


def test_fetch_verifies_the_tier_as_a_whole(tmp_path, monkeypatch, capsys):
    pins = tmp_path / "pins"
    shutil.copytree(PINS, pins, ignore=shutil.ignore_patterns("peers", "locomo-plus"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    own = {p.url: (PINS / p.relpath).read_bytes() for b in benchmarks().values() for p in b.own_pins()}
    monkeypatch.setattr(pin_module, "_download", lambda url: own[url])  # the files left out above, as downloaded
    assert main(["fetch", "--dataset", "beam_128k", "--pins", str(pins)]) == 0
    out = capsys.readouterr().out
    assert "ok       beam/chats/100K/ (40 files, verified as a whole" in out and "datasets: beam_128k" in out
    (pins / "beam" / "chats" / "100K" / "21").mkdir()
    (pins / "beam" / "chats" / "100K" / "21" / "chat.json").write_text("[]")
    assert main(["fetch", "--pins", str(pins)]) != 0
    assert "holds 21/chat.json, which its pin does not list; remove it" in capsys.readouterr().err
