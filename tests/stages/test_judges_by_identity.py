"""Judges by judge identity: one folder per judge, `autorater/<judge id>/`, over real HTTP.

Two judges of one pack keep their folders side by side and each verifies; `--passes`
above what a judge has adds the missing passes, below it changes nothing; a start that
wrote no verdict (a URL with nothing listening, a server that answers 500) binds nothing;
a pack of the flat layout (`autorater/autorater_metrics.json`) is read as one judge.
"""

from __future__ import annotations

import json
import re
import shutil
import socket
from pathlib import Path

import pytest
from conftest import FIXTURES, scripted_reader

from memorybench.cli import main
from memorybench.compare.summary import run_summary
from memorybench.errors import ModelCallError, UserError
from memorybench.pack import layout
from memorybench.pack.autorater_schemas import AutoraterMeta, AutoraterMetaV1, JudgeIdentity
from memorybench.pack.reader import LEGACY_JUDGE, PackReader
from memorybench.pack.verify import verify_pack
from memorybench.stages.autorater import autorater_main, judge_id_of, run_autorater, wave_marker
from memorybench.testing.scripted_server import Reply, ScriptedOpenAIServer, Status

MINI = FIXTURES / "mini_locomo.json"
#: what each scripted judge says: judge-y is stricter than judge-x on two rows
LABELS = {
    "What did Ana start?": "CORRECT",
    "When did Ana move?": "CORRECT",
    "How old is Ben's dog?": "WRONG",
    "What might Ana enjoy?": "CORRECT",
    "What did Cleo start?": "CORRECT",
    "When did Cleo move?": "WRONG",
    "How old is Dev's dog?": "CORRECT",
    "What might Cleo enjoy?": "WRONG",
}
STRICTER = {"What did Ana start?", "How old is Dev's dog?"}
JUDGED_ROWS = 8  # categories 1-4 of the mini fixture; its two category 5 rows are skipped


def asked(body: dict) -> str:
    content = body["messages"][-1]["content"]
    return content.rsplit("\nQuestion: ", 1)[1].split("\nGold answer: ", 1)[0]


def judges(body: dict) -> Reply:
    """One scripted server, two judges told apart by the model they are asked for."""
    question, model = asked(body), body["model"]
    label = "WRONG" if model == "judge-y" and question in STRICTER else LABELS[question]
    return Reply(json.dumps({"label": label}), model=f"{model}-2025")


def node(base_url: str, model: str = "judge-x", **extra):
    from omegaconf import OmegaConf

    data = {
        "name": "openai_compatible",
        "protocol": "mem0",
        "provider": "openai_compatible",
        "model": model,
        "base_url": base_url,
        "api_key_env": None,
        "temperature": 0.0,
        "max_tokens": 256,
        "seed": None,
        "prompt": None,
        "timeout_s": 10.0,
        "max_retries": 0,
        "retry_max_wait_s": 1.0,
        "min_request_interval_s": 0.0,
        "cache": False,
        "n_ctx": None,
    }
    data.update(extra)
    return OmegaConf.create(data)


def rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text("utf-8").splitlines()]


def folder_bytes(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def mini_pack(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("judges")
    with ScriptedOpenAIServer(responder=lambda body: Reply("pottery classes")) as server:
        assert (
            main(
                [
                    "qa",
                    *scripted_reader(server.base_url),
                    f"dataset.path={MINI}",
                    f"paths.packs={root / 'packs'}",
                    f"paths.cache={root / 'cache'}",
                    "name=mini",
                ]
            )
            == 0
        )
    (pack,) = sorted((root / "packs").glob("*/runs/*"))
    return pack


@pytest.fixture()
def pack(mini_pack, tmp_path) -> Path:
    target = tmp_path / "packs" / "mini" / "runs" / mini_pack.name
    shutil.copytree(mini_pack, target)
    return target


# -- the judge id ------------------------------------------------------------------------------
def test_the_judge_id_is_readable_safe_and_changes_with_the_identity():
    identity = JudgeIdentity(
        protocol="mem0", model="gpt-4o-mini", prompt_sha256="a" * 64, temperature=0.0, response_format={"type": "json_object"}
    )
    assert re.fullmatch(r"mem0-gpt-4o-mini-[0-9a-f]{8}", identity.judge_id)
    assert identity.judge_id.endswith(identity.sha256()[:8])
    assert identity.judge_id == JudgeIdentity.model_validate_json(identity.model_dump_json(by_alias=True)).judge_id
    # a model id with a path or a tag becomes one path component, still readable
    served = identity.model_copy(update={"model": "meta-llama/Llama-3.1-8B:q4 k"})
    assert re.fullmatch(r"mem0-meta-llama-Llama-3\.1-8B-q4-k-[0-9a-f]{8}", served.judge_id)
    long = identity.model_copy(update={"model": "m" * 300})
    assert len(long.judge_id) <= 128
    # every field is part of who the judge is
    others = [
        identity.model_copy(update=change)
        for change in (
            {"temperature": 0.7},
            {"prompt_sha256": "b" * 64},
            {"protocol": "other"},
            {"response_format": {"type": "text"}},
        )
    ]
    assert len({identity.judge_id, *(o.judge_id for o in others)}) == 5


def test_where_a_judge_is_served_is_not_who_it_is():
    a = judge_id_of(node("http://127.0.0.1:9/v1"))
    assert a == judge_id_of(node("http://10.0.0.1:8000/v1", timeout_s=99.0, max_retries=7, max_tokens=100))
    assert a != judge_id_of(node("http://127.0.0.1:9/v1", model="judge-y"))
    assert a != judge_id_of(node("http://127.0.0.1:9/v1", temperature=0.5))


# -- several judges ----------------------------------------------------------------------------
def test_two_judges_keep_two_folders_each_verifies_and_the_reader_lists_both(pack):
    with ScriptedOpenAIServer(responder=judges) as server:
        x = run_autorater(pack, node(server.base_url, "judge-x"))
        y = run_autorater(pack, node(server.base_url, "judge-y"))
        assert len(server.requests) == 2 * JUDGED_ROWS
        id_x, id_y = judge_id_of(node(server.base_url, "judge-x")), judge_id_of(node(server.base_url, "judge-y"))
    assert sorted(p.name for p in (pack / "autorater").iterdir()) == sorted([id_x, id_y])
    assert id_x.startswith("mem0-judge-x-") and id_y.startswith("mem0-judge-y-")
    assert x["j"]["overall"] == 5 / 8 and y["j"]["overall"] == 3 / 8

    reader = PackReader.open(pack)
    assert reader.judges() == sorted([id_x, id_y])
    assert reader.autorater_metrics(id_x).j.overall == 5 / 8 and reader.autorater_metrics(id_y).j.overall == 3 / 8
    meta = reader.autorater_meta(id_y)
    assert isinstance(meta, AutoraterMeta) and meta.judge_id == id_y and meta.identity.model == "judge-y"
    assert meta.identity.judge_id == id_y and meta.judge.answered == ["judge-y-2025"]
    assert len(reader.verdicts(id_x)) == len(reader.verdicts(id_y)) == 10
    assert {t.model_requested for t in reader.judge_traces(id_y)} == {"judge-y"}
    for judge_id in (id_x, id_y):
        folder = pack / layout.autorater_dir(judge_id)
        assert sorted(folder_bytes(folder)) == [
            "_SUCCESS",
            "autorater_meta.json",
            "autorater_metrics.json",
            "autorater_verdicts.jsonl",
            "prompts/mem0_accuracy_prompt.txt",
            "traces.jsonl",
        ]
        closed = json.loads((folder / "_SUCCESS").read_text())  # success.v1: the sha256 of every file of the folder
        assert sorted(closed["files"]) == sorted(
            f"{layout.autorater_dir(judge_id)}/{rel}" for rel in folder_bytes(folder) if rel != "_SUCCESS"
        )
    assert verify_pack(pack) == []
    # the run summary keys each J by its judge: both are there, never one in place of the other
    summary = run_summary(pack)
    assert summary["judges"] == ",".join(reader.judges()) and "j_mean" not in summary
    for judge_id in reader.judges():
        assert summary[f"j_mean/{judge_id}"] == reader.autorater_metrics(judge_id).j.mean


def test_the_command_line_prints_the_judge_folder(pack, capsys):
    with ScriptedOpenAIServer(responder=judges) as server:
        args = [str(pack), "judge=openai_compatible", f"judge.base_url={server.base_url}", "judge.model=judge-x", "--quiet"]
        assert autorater_main(args) == 0
        judge_id = judge_id_of(node(server.base_url))
    out = capsys.readouterr().out
    assert f"autorater: {pack / 'autorater' / judge_id}" in out


# -- passes ------------------------------------------------------------------------------------
def test_more_passes_are_added_to_a_finished_judge_and_fewer_change_nothing(pack, tmp_path, capsys):
    straight = tmp_path / "straight" / pack.name
    shutil.copytree(pack, straight)
    with ScriptedOpenAIServer(responder=judges) as server:
        judge = node(server.base_url)
        judge_id = judge_id_of(judge)
        folder = pack / layout.autorater_dir(judge_id)
        one = run_autorater(pack, judge, passes=1)
        assert one["passes"] == 1 and len(server.requests) == JUDGED_ROWS
        three = run_autorater(pack, judge, passes=3)
        assert len(server.requests) == 3 * JUDGED_ROWS  # passes 2-3 only: pass 1 is not asked again
        assert "has 1 passes: adding passes 2-3" in capsys.readouterr().err
        verdicts = rows(folder / layout.JUDGE_VERDICTS)
        assert len(verdicts) == 3 * 10  # 3 passes x every row (category 5: a SKIPPED verdict per pass)
        assert [v["pass"] for v in verdicts] == [1] * 10 + [2] * 10 + [3] * 10
        assert three["passes"] == 3 and three["j"]["passes"] == [5 / 8] * 3 and three["counts"]["requests"] == 24
        assert three["counts"]["by_pass"][2] == {"pass": 3, "judged": 8, "skipped": 2, "failed": 0}
        assert PackReader.open(pack).autorater_meta(judge_id).passes == 3
        assert verify_pack(pack) == []  # the new _SUCCESS closes the new bytes

        # fewer passes than the judge has: one line, nothing changed, no request
        before = folder_bytes(folder)
        assert run_autorater(pack, judge, passes=1) == three
        assert "complete with 3 passes, more than --passes 1; nothing changed" in capsys.readouterr().err
        assert folder_bytes(folder) == before and len(server.requests) == 3 * JUDGED_ROWS

        # the same files as a judge given its three passes at once
        run_autorater(straight, judge, passes=3)
    other = straight / layout.autorater_dir(judge_id)
    assert (folder / layout.JUDGE_VERDICTS).read_bytes() == (other / layout.JUDGE_VERDICTS).read_bytes()
    keys = [(t["question_id"], t["pass"]) for t in rows(folder / layout.JUDGE_TRACES)]
    assert keys == [(t["question_id"], t["pass"]) for t in rows(other / layout.JUDGE_TRACES)]
    got, want = (json.loads((f / layout.JUDGE_METRICS).read_text()) for f in (folder, other))
    for m in (got, want):
        del m["usage"]["judge"]["latency_s"]
    assert got == want


def test_an_unfinished_judge_with_more_passes_is_not_cut_short(pack):
    with ScriptedOpenAIServer(responder=judges) as server:
        server.script(*[Reply('{"label": "CORRECT"}')] * 12, *[Status(500)] * 5)  # pass 2 stops: the endpoint is down
        with pytest.raises(ModelCallError, match="failed 5 calls in a row"):
            run_autorater(pack, node(server.base_url), passes=3)
        with pytest.raises(UserError, match="started with --passes 3 and is not finished; rerun with --passes 3"):
            run_autorater(pack, node(server.base_url), passes=1)
        assert run_autorater(pack, node(server.base_url), passes=3)["passes"] == 3


# -- nothing written, nothing bound --------------------------------------------------------------
def test_a_url_with_nothing_listening_locks_nothing(pack):
    dead = f"http://127.0.0.1:{free_port()}/v1"
    with pytest.raises(ModelCallError, match="fix the endpoint and rerun"):
        run_autorater(pack, node(dead, max_tokens=100))
    judge_id = judge_id_of(node(dead))
    folder = pack / layout.autorater_dir(judge_id)
    assert rows(folder / layout.JUDGE_VERDICTS) == [] and not (folder / layout.SUCCESS).exists()
    assert PackReader.open(pack).judges() == []
    # the right URL (and other settings: nothing bound them) finishes in the same folder
    with ScriptedOpenAIServer(responder=judges) as server:
        metrics = run_autorater(pack, node(server.base_url), passes=2)
        assert len(server.requests) == 2 * JUDGED_ROWS
    assert metrics["counts"]["failed"] == 0 and metrics["passes"] == 2
    assert PackReader.open(pack).judges() == [judge_id]
    meta = PackReader.open(pack).autorater_meta(judge_id)
    assert meta.resumed == 0 and meta.judge_settings["max_tokens"] == 256
    assert verify_pack(pack) == []


def test_a_server_answering_500_to_a_few_rows_locks_nothing(pack):
    # three rows to judge, fewer than the five failures in a row that say "down": a run in
    # which no call was answered is the endpoint's failure all the same, not three FAILED rows
    kept = rows(pack / "predictions.jsonl")[:4]
    assert sum(r["category"] != 5 for r in kept) == 4
    (pack / "predictions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in kept[:3]))
    with ScriptedOpenAIServer(responder=judges) as server:
        server.script(*[Status(500)] * 3)
        with pytest.raises(ModelCallError, match="failed 3 calls in a row"):
            run_autorater(pack, node(server.base_url))
        judge_id = judge_id_of(node(server.base_url))
        folder = pack / layout.autorater_dir(judge_id)
        assert rows(folder / layout.JUDGE_VERDICTS) == [] and not (folder / layout.SUCCESS).exists()
        metrics = run_autorater(pack, node(server.base_url))
        assert len(server.requests) == 3 + 3
    assert metrics["counts"]["judged"] == 3 and metrics["counts"]["failed"] == 0


def test_verdicts_bind_the_folder_to_their_request_settings(pack):
    with ScriptedOpenAIServer(responder=judges) as server:
        server.script(*[Reply('{"label": "CORRECT"}')] * 2, *[Status(500)] * 5)
        with pytest.raises(ModelCallError):
            run_autorater(pack, node(server.base_url))
        with pytest.raises(UserError, match=r"holds verdicts of this judge with max_tokens=256; rerun with those settings"):
            run_autorater(pack, node(server.base_url, max_tokens=100))
        # another URL for the same judge is fine: where it is served is not who it is
        with ScriptedOpenAIServer(responder=judges) as moved:
            metrics = run_autorater(pack, node(moved.base_url))
            assert len(moved.requests) == JUDGED_ROWS - 2
    assert metrics["counts"]["judged"] == JUDGED_ROWS


# -- the flat layout -----------------------------------------------------------------------------
def flatten(pack: Path, judge_id: str, *, keep_meta: bool = True) -> None:
    """Rewrite a judge's folder as a pack judged before judges had folders wrote it."""
    folder = pack / layout.autorater_dir(judge_id)
    meta = AutoraterMeta.model_validate_json((folder / layout.JUDGE_META).read_text())
    for rel in folder_bytes(folder):
        target = pack / layout.AUTORATER / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(folder / rel, target)
    shutil.rmtree(folder)
    (pack / layout.legacy_autorater_file(layout.SUCCESS)).write_text("")  # markers were empty then
    old = {**meta.judge_config, "prompt_sha256": meta.identity.prompt_sha256, "response_format": meta.response_format}
    old = {
        k: v
        for k, v in old.items()
        if k not in ("timeout_s", "max_retries", "retry_max_wait_s", "min_request_interval_s", "cache", "api_key_env")
    }
    v1 = AutoraterMetaV1(
        **meta.model_dump(exclude={"schema_", "judge_id", "identity", "judge_settings", "legacy"}), judge_identity=old
    )
    path = pack / layout.legacy_autorater_file(layout.JUDGE_META)
    if keep_meta:
        path.write_text(v1.dump())
    else:
        path.unlink()


def test_a_pack_of_the_flat_layout_is_one_judge_named_by_its_meta(pack):
    with ScriptedOpenAIServer(responder=judges) as server:
        metrics = run_autorater(pack, node(server.base_url))
        judge_id = judge_id_of(node(server.base_url))
        flatten(pack, judge_id)
        assert (pack / "autorater" / "autorater_metrics.json").is_file()
        reader = PackReader.open(pack)
        assert reader.judges() == [judge_id]  # the id a new run of the same judge gets
        assert reader.judge_path(judge_id, layout.JUDGE_METRICS) == "autorater/autorater_metrics.json"
        assert reader.autorater_metrics(judge_id).model_dump(mode="json", by_alias=True) == metrics
        meta = reader.autorater_meta(judge_id)
        assert meta.legacy is True and meta.judge_id == judge_id and meta.identity.model == "judge-x"
        assert len(reader.verdicts(judge_id)) == 10 and len(reader.judge_traces(judge_id)) == 8
        assert run_summary(pack)[f"j_mean/{judge_id}"] == metrics["j"]["mean"]
        assert verify_pack(pack) == []

        # judging it again writes the judge's folder, which is then read before the flat files
        again = run_autorater(pack, node(server.base_url), passes=2)
        assert again["passes"] == 2
    reader = PackReader.open(pack)
    assert reader.judges() == [judge_id]
    assert reader.judge_path(judge_id, layout.JUDGE_METRICS) == f"autorater/{judge_id}/autorater_metrics.json"
    assert reader.autorater_metrics(judge_id).passes == 2


def test_a_flat_layout_without_a_meta_is_the_legacy_judge(pack):
    with ScriptedOpenAIServer(responder=judges) as server:
        run_autorater(pack, node(server.base_url))
        flatten(pack, judge_id_of(node(server.base_url)), keep_meta=False)
    reader = PackReader.open(pack)
    assert reader.judges() == [LEGACY_JUDGE]
    assert reader.autorater_meta(LEGACY_JUDGE) is None
    assert reader.autorater_metrics(LEGACY_JUDGE).j.overall == 5 / 8


# -- waves ---------------------------------------------------------------------------------------
def test_a_wave_skips_a_pack_by_the_named_judges_marker():
    args = ["judge=openai_compatible", "judge.base_url=http://127.0.0.1:9/v1", "judge.model=judge-x"]
    judge_id = judge_id_of(node("http://127.0.0.1:9/v1"))
    assert wave_marker(args) == f"autorater/{judge_id}/_SUCCESS"
    assert wave_marker([*args, "--passes", "1"]) == f"autorater/{judge_id}/_SUCCESS"
    assert wave_marker([*args, "--passes", "3"]) is None  # a finished judge may have fewer: each task decides
