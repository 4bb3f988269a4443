"""`autorater` with LongMemEval's judge over real HTTP: a made 20-question pack judged with
`judge=openai_compatible judge.protocol=longmemeval` on the scripted server. Each request is
exactly the authors' prompt for its question (abstention ones take the abstention prompt), the
request is evaluate_qa.py's (temperature 0, max_tokens 10, no response format), the judged pack
verifies (every judge message rebuilt from the stored per-type template files), and
autorater_metrics.json holds what print_qa_metrics.py gives over the verdicts, labelled not
comparable with the authors' figures."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import FIXTURES, scripted_reader

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fixtures"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "score"))
from longmemeval_authors import load as load_authors  # noqa: E402
from make_longmemeval import make_longmemeval  # noqa: E402

from memorybench.benchmark import LONGMEMEVAL  # noqa: E402
from memorybench.benchmarks.longmemeval.autorater import comparability  # noqa: E402
from memorybench.benchmarks.longmemeval.score import (  # noqa: E402
    JUDGE_MODEL,
    QUESTION_TYPES,
    JudgedQuestion,
    anscheck_prompt,
    anscheck_templates,
    authors_report,
    is_abstention,
    qa_metrics,
)
from memorybench.cli import main  # noqa: E402
from memorybench.data.pins import pin_path  # noqa: E402
from memorybench.benchmarks.longmemeval.pins import EVALUATE_QA, PRINT_QA_METRICS  # noqa: E402
from memorybench.errors import UserError  # noqa: E402
from memorybench.hashing import sha256_text  # noqa: E402
from memorybench.pack.autorater_schemas import JudgeSummary  # noqa: E402
from memorybench.pack.verify import verify_pack  # noqa: E402
from memorybench.stages.autorater import autorater_main, compute_autorater_metrics, run_autorater  # noqa: E402
from memorybench.testing.scripted_server import Reply, ScriptedOpenAIServer  # noqa: E402

CITIES = ("Lisbon", "Oslo", "Quito", "Hanoi", "Perth", "Tunis", "Lima", "Riga")
HEADS = ("Correct Answer: ", "Rubric: ", "Explanation: ")


def answer_from_memory(body):
    user = body["messages"][-1]["content"]
    for city in CITIES:
        if f"moved to {city}" in user:
            return Reply(city)
    return Reply("not mentioned")


def _between(text: str, heads: tuple[str, ...], tail: str) -> str:
    head = next(h for h in heads if f"\n\n{h}" in text)
    return text.split(f"\n\n{head}", 1)[1].split(tail, 1)[0]


def judge_rule(body) -> Reply:
    """A mechanical judge (plumbing, not a result): yes when the response holds the correct answer
    (for an abstention question: by the response's length), in a few reply shapes; one empty reply."""
    user = body["messages"][-1]["content"]
    response = _between(user, ("Model Response: ",), "\n\n")
    answer = _between(user, HEADS, "\n\nModel Response: ")
    question = _between(user, ("Question: ",), "\n\n")
    if "sister visit" in question and answer == "12":
        return Reply("")  # no text, twice: a judge failure, never a silent no
    if user.startswith("I will give you an unanswerable question"):
        return Reply("Yes." if len(response) % 2 == 0 else "No.")
    return Reply("yes" if answer.lower() in response.lower() else "no, the response names another city")


@pytest.fixture(scope="module")
def lme(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("lme_judge")
    data = make_longmemeval(tmp / "lme.json")
    with ScriptedOpenAIServer(responder=answer_from_memory) as server:
        code = main(
            [
                "qa",
                "dataset=longmemeval_oracle",
                f"dataset.path={data}",
                *scripted_reader(server.base_url),
                f"paths.packs={tmp / 'packs'}",
                f"paths.cache={tmp / 'cache'}",
                "name=lme",
            ]
        )
    assert code == 0
    (pack,) = (tmp / "packs" / "lme" / "runs").iterdir()
    clean = tmp / "clean"
    shutil.copytree(pack, clean)
    with ScriptedOpenAIServer(responder=judge_rule) as judge:
        assert (
            autorater_main(
                [
                    str(pack),
                    "--quiet",
                    "judge=openai_compatible",
                    "judge.protocol=longmemeval",
                    f"judge.base_url={judge.base_url}",
                    "judge.model=judge-x",
                    f"paths.cache={tmp / 'cache'}",
                ]
            )
            == 0
        )
        requests = list(judge.requests)
    (folder,) = (pack / "autorater").iterdir()
    return {"pack": pack, "clean": clean, "data": data, "requests": requests, "folder": folder, "tmp": tmp}


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]


def test_every_request_is_the_authors_prompt_for_its_question_and_their_request(lme):
    authors = load_authors(EVALUATE_QA)
    predictions = _rows(lme["pack"] / "predictions.jsonl")
    types = {item["question_id"]: item["question_type"] for item in json.loads(lme["data"].read_text())}
    asked = [r["messages"] for r in lme["requests"]]
    assert all(len(m) == 1 and m[0]["role"] == "user" for m in asked)
    contents = [m[0]["content"] for m in asked]
    expected = []
    for row in predictions:  # every question, in saved order (the empty reply is asked twice)
        qtype = types[row["question_id"]]
        assert LONGMEMEVAL.category_names[row["category"]] == qtype
        abstention = is_abstention(row["question_id"])
        prompt = anscheck_prompt(qtype, row["question"], row["gold"], row["prediction"], abstention)
        assert prompt.encode("utf-8") == authors.get_anscheck_prompt(
            qtype, row["question"], row["gold"], row["prediction"], abstention=abstention
        ).encode("utf-8")
        expected.append(prompt)
    # in saved order; a reply without text is asked once more (the same bytes, right after)
    once = [c for i, c in enumerate(contents) if i == 0 or c != contents[i - 1]]
    assert once == expected and len(predictions) == 20 and len(contents) == 21
    abstention_prompt = anscheck_templates()["abstention"].split("{}", 1)[0]
    for row, prompt in zip(predictions, expected):
        assert prompt.startswith(abstention_prompt) == is_abstention(row["question_id"])
    assert any(isinstance(row["gold"], int) for row in predictions)  # an integer answer, printed as format prints it
    for body in lme["requests"]:
        assert body["temperature"] == 0 and body["max_tokens"] == 10 and "response_format" not in body
        assert body["model"] == "judge-x"


def test_the_traces_name_per_type_template_files_that_rebuild_each_message(lme):
    folder = lme["folder"]
    templates = anscheck_templates()
    stored = {p.name: p.read_text("utf-8") for p in (folder / "prompts").iterdir()}
    assert stored == {f"longmemeval_anscheck_{k}.txt": v for k, v in templates.items()}
    traces = _rows(folder / "traces.jsonl")
    assert len(traces) == 20
    for trace in traces:
        request = trace["request"]
        key = "abstention" if is_abstention(trace["question_id"]) else None
        name = request["template"].removeprefix("prompts/")
        assert key is None or name == "longmemeval_anscheck_abstention.txt"
        assert request["response_format"] is None and request["template_sha256"] == sha256_text(stored[name])
        message = stored[name].format(request["slots"]["question"], request["slots"]["answer"], request["slots"]["response"])
        assert sha256_text(message) == trace["judge_payload_sha256"]
    meta = json.loads((folder / "autorater_meta.json").read_text())
    assert meta["identity"]["protocol"] == "longmemeval" and meta["identity"]["response_format"] is None
    assert meta["judge_config"]["max_tokens"] == 10 and meta["judge_config"]["temperature"] == 0.0
    assert any("judge.max_tokens=256" in note for note in meta["notes"])  # openai_compatible's default, replaced
    assert set(meta["prompt"]["files"]) == set(stored)


def test_the_judged_pack_verifies(lme):
    assert verify_pack(lme["pack"]) == []


def test_metrics_are_the_authors_qa_metrics_over_the_verdicts(lme, tmp_path):
    folder = lme["folder"]
    metrics = json.loads((folder / "autorater_metrics.json").read_text())
    assert metrics == compute_autorater_metrics(lme["pack"])
    verdicts = _rows(folder / "autorater_verdicts.jsonl")
    assert len(verdicts) == 20 and not any(v["status"] == "SKIPPED" for v in verdicts)
    failed = [v for v in verdicts if v["status"] == "FAILED"]
    assert failed and all(v["error"] == "empty reply" for v in failed)
    labelled = [v for v in verdicts if v["status"] != "FAILED"]
    assert {v["score"] for v in labelled} == {0, 1}
    assert all(v["score"] == int("yes" in v["label_raw"].strip().lower()) for v in labelled)
    expected = qa_metrics(
        JudgedQuestion(v["question_id"], LONGMEMEVAL.category_names[v["category"]], v["score"] == 1) for v in labelled
    )
    lme_metrics = metrics["longmemeval"]
    assert metrics["benchmark"] == "longmemeval" and lme_metrics["failed"] == len(failed)
    (first,) = lme_metrics["passes"]
    assert {t: first["by_type"][t]["accuracy"] for t in QUESTION_TYPES} == {t.question_type: t.accuracy for t in expected.by_type}
    assert lme_metrics["accuracy_by_type"] == {t.question_type: t.accuracy for t in expected.by_type}
    for key in ("task_averaged_accuracy", "overall_accuracy", "abstention_accuracy"):
        assert lme_metrics[key] == first[key] == getattr(expected, key)
    assert expected.task_averaged_accuracy is not None and expected.abstention_n == first["abstention_n"] > 0
    assert first["report"] == authors_report(expected)
    # the authors' script prints the same text over the same labels
    (tmp_path / "judged.jsonl").write_text(
        "".join(
            json.dumps(
                {
                    "question_id": v["question_id"],
                    "hypothesis": "h",
                    "autoeval_label": {"model": JUDGE_MODEL, "label": v["score"] == 1},
                }
            )
            + "\n"
            for v in labelled
        )
    )
    proc = subprocess.run(
        [sys.executable, str(pin_path(PRINT_QA_METRICS)), str(tmp_path / "judged.jsonl"), str(lme["data"])],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == first["report"]
    # J is the same accuracy, per type by category number
    assert metrics["j"]["overall"] == pytest.approx(expected.overall_accuracy)
    assert metrics["category_names"] == {str(k): v for k, v in LONGMEMEVAL.category_names.items()}


def test_the_result_is_labelled_not_comparable_with_the_authors_figures(lme, capsys):
    metrics = json.loads((lme["folder"] / "autorater_metrics.json").read_text())
    assert metrics["longmemeval"]["comparable"] is False
    assert "not comparable" in metrics["longmemeval"]["comparability"]
    assert "judge-x" in metrics["longmemeval"]["comparability"]
    from memorybench.stages.autorater_metrics import format_autorater_table

    table = format_autorater_table(metrics)
    assert "task-averaged" in table and "abstention" in table and "not comparable" in table


def test_only_gpt_4o_2024_08_06_through_openai_is_comparable():
    def summary(**extra) -> JudgeSummary:
        fields = dict(
            name="longmemeval",
            provider="openai",
            model_requested=JUDGE_MODEL,
            models_answered=[JUDGE_MODEL],
            base_url="https://api.openai.com/v1",
            temperature=0.0,
            max_tokens=10,
            local=False,
        )
        return JudgeSummary(**{**fields, **extra})

    assert comparability("longmemeval", summary())[0] is True
    assert comparability("longmemeval", summary(model_requested="gpt-4o-mini"))[0] is False
    assert comparability("longmemeval", summary(provider="openai_compatible", base_url="http://127.0.0.1:8000/v1"))[0] is False
    assert comparability("longmemeval", summary(base_url="http://127.0.0.1:8000/v1"))[0] is False
    assert comparability("longmemeval", summary(provider="local", local=True, base_url=None))[0] is False
    assert comparability("longmemeval", summary(models_answered=["gpt-4o-2024-11-20"]))[0] is False
    assert comparability("mem0", summary())[0] is False


def test_judge_longmemeval_composes_as_the_authors_judge(tmp_path):
    from memorybench.stages.autorater import compose_judge, judge_id_of

    cfg = compose_judge(["judge=longmemeval"])
    assert cfg.judge.protocol == "longmemeval" and cfg.judge.model == JUDGE_MODEL and cfg.judge.provider == "openai"
    assert cfg.judge.temperature == 0.0 and cfg.judge.max_tokens == 10
    assert judge_id_of(cfg.judge).startswith(f"longmemeval-{JUDGE_MODEL}-")


def test_a_protocol_of_another_benchmark_is_refused_before_any_call(lme, tmp_path):
    pack = tmp_path / "pack"
    shutil.copytree(lme["clean"], pack)
    with ScriptedOpenAIServer() as server:
        with pytest.raises(UserError, match="longmemeval pack and judge.protocol=mem0 judges locomo packs"):
            run_autorater(pack, _node(server, protocol="mem0"))
        assert server.requests == []
    assert not (pack / "autorater").exists()


def test_a_locomo_pack_refuses_the_longmemeval_protocol_and_judge_check_too(tmp_path):
    from memorybench.stages.judge_check import run_judge_check

    with ScriptedOpenAIServer() as server:
        with pytest.raises(UserError, match="judge.protocol=longmemeval judges longmemeval packs; use judge.protocol=mem0"):
            run_judge_check(_node(server, protocol="longmemeval"), cache_dir=tmp_path / "cache")
        assert server.requests == []


def test_a_changed_template_or_slot_is_found_by_verify(lme, tmp_path):
    pack = tmp_path / "pack"
    shutil.copytree(lme["pack"], pack)
    (folder,) = (pack / "autorater").iterdir()
    template = folder / "prompts" / "longmemeval_anscheck_abstention.txt"
    template.write_text(template.read_text("utf-8").replace("unanswerable", "answerable"), "utf-8")
    codes = {f.code for f in verify_pack(pack)}
    assert "hash.judge" in codes
    shutil.rmtree(pack)
    shutil.copytree(lme["pack"], pack)
    traces = folder / "traces.jsonl"
    rows = _rows(traces)
    rows[0]["request"]["slots"]["response"] = "something else"
    traces.write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    found = [f for f in verify_pack(pack) if f.code == "hash.judge"]
    assert found and "traces.jsonl:1" in found[0].path


def test_verify_rebuilds_mem0_judge_messages_by_mem0s_protocol(tmp_path):
    with ScriptedOpenAIServer() as server:
        assert (
            main(
                [
                    "qa",
                    *scripted_reader(server.base_url),
                    f"dataset.path={FIXTURES / 'mini_locomo.json'}",
                    f"paths.packs={tmp_path / 'packs'}",
                    f"paths.cache={tmp_path / 'cache'}",
                    "name=mini",
                ]
            )
            == 0
        )
    (pack,) = (tmp_path / "packs" / "mini" / "runs").iterdir()
    with pytest.raises(UserError, match="locomo pack and judge.protocol=longmemeval"):
        run_autorater(pack, _node(server, protocol="longmemeval"))
    with ScriptedOpenAIServer(responder=lambda body: Reply('{"label": "CORRECT"}')) as judge:
        run_autorater(pack, _node(judge))
    assert verify_pack(pack) == []
    (traces,) = (pack / "autorater").glob("*/traces.jsonl")
    rows = _rows(traces)
    assert rows[0]["request"]["template"] == "prompts/mem0_accuracy_prompt.txt"
    rows[1]["request"]["slots"]["generated_answer"] += " (edited)"
    traces.write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    found = [f for f in verify_pack(pack) if f.code == "hash.judge"]
    assert {f.path.rsplit(":", 1)[1] for f in found} == {"2"}  # its slots are not its row's, its message not its hash
    assert any("slots" in f.message for f in found) and any("judge_payload_sha256" in f.message for f in found)


def _node(server, **extra):
    from omegaconf import OmegaConf

    node = {
        "name": "openai_compatible",
        "provider": "openai_compatible",
        "model": "judge-x",
        "base_url": server.base_url,
        "api_key_env": None,
        "temperature": 0.0,
        "max_tokens": 256,
        "seed": None,
        "timeout_s": 30.0,
        "max_retries": 0,
        "retry_max_wait_s": 1.0,
        "min_request_interval_s": 0.0,
        "cache": False,
    }
    node.update(extra)
    return OmegaConf.create(node)


def test_the_embedded_judge_is_said_to_be_served_on_this_machine_not_at_none():
    """Issue 40, item 6: the comparability line said "served by local at None"."""
    from memorybench.benchmarks.longmemeval.autorater import comparability
    from memorybench.pack.autorater_schemas import JudgeSummary

    judge = JudgeSummary(
        name="local",
        provider="local",
        model_requested="smollm2-135m",
        model_configured="auto",
        models_answered=["smollm2-135m"],
        base_url=None,
        temperature=0.0,
        max_tokens=10,
        seed=None,
        response_format=None,
        local=True,
        weights=None,
    )
    comparable, why = comparability("longmemeval", judge)
    assert not comparable and "served by local (on this machine)" in why and "None" not in why
