"""`memorybench import --format longmemeval_hypotheses|longmemeval_judged` (issue 32, item 5).

The LongMemEval authors' hypothesis file and evaluate_qa.py's judged output, made here over a
made 20-question dataset (tests/fixtures/make_longmemeval.py), import as packs that verify; a
judged file's pack gives, from its judge folder, exactly the text the pinned
print_qa_metrics.py prints over the same file; a bad row, an id the dataset lacks and a
missing question are one line each naming the file, the line and the fix.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fixtures"))
from make_longmemeval import make_longmemeval  # noqa: E402

from memorybench.answer.imported import REPRODUCTION, Reproduction  # noqa: E402
from memorybench.benchmark import LONGMEMEVAL  # noqa: E402
from memorybench.benchmarks.longmemeval.score import JUDGE_MODEL, JudgedQuestion, authors_report, qa_metrics  # noqa: E402
from memorybench.cli import main  # noqa: E402
from memorybench.data.pins import pin_path  # noqa: E402
from memorybench.benchmarks.longmemeval import importer as import_longmemeval  # noqa: E402
from memorybench.benchmarks.longmemeval.pins import PRINT_QA_METRICS  # noqa: E402
from memorybench.errors import UserError  # noqa: E402
from memorybench.hashing import sha256_file  # noqa: E402
from memorybench.pack.reader import PackReader  # noqa: E402
from memorybench.pack.verify import verify_pack  # noqa: E402
from memorybench.stages.import_results import import_results  # noqa: E402

HYPOTHESES, JUDGED = "longmemeval_hypotheses", "longmemeval_judged"
DATASET = "longmemeval_oracle"


def _jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    return path


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]


@pytest.fixture(scope="module")
def made(tmp_path_factory) -> dict:
    tmp = tmp_path_factory.mktemp("lme_import")
    data = make_longmemeval(tmp / "lme.json")
    items = json.loads(data.read_text("utf-8"))
    order = items[7:] + items[:7]  # not the dataset's order: rows are found by id
    hypotheses = [
        {"question_id": it["question_id"], "hypothesis": f"I think {it['question_id']}: \u00e9t\u00e9 {{x}}\n"} for it in order
    ]
    judged = [{**h, "autoeval_label": {"model": JUDGE_MODEL, "label": (i * 7) % 5 < 3}} for i, h in enumerate(hypotheses)]
    return {
        "tmp": tmp,
        "data": data,
        "items": items,
        "hypotheses": _jsonl(tmp / "hyp.jsonl", hypotheses),
        "judged": _jsonl(tmp / "hyp.jsonl.eval-results-gpt-4o", judged),
        "judged_rows": judged,
    }


def _import(made: dict, path: Path, fmt: str, packs: Path, **extra):
    return import_results([path], fmt, packs=packs, **{"dataset": DATASET, "dataset_path": made["data"], **extra})


def _authors_print(judged: Path, reference: Path, cwd: Path) -> str:
    proc = subprocess.run(
        [sys.executable, str(pin_path(PRINT_QA_METRICS)), str(judged), str(reference)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


# -- (1) a hypothesis file ------------------------------------------------------------------


def test_a_hypothesis_file_imports_into_a_pack_that_verifies(made, tmp_path):
    result = _import(made, made["hypotheses"], HYPOTHESES, tmp_path / "packs")
    root = result.pack_root
    assert result.created and verify_pack(root) == []
    predictions = _rows(root / "predictions.jsonl")
    by_id = {h["question_id"]: h["hypothesis"] for h in _rows(made["hypotheses"])}
    assert [p["question_id"] for p in predictions] == [it["question_id"] for it in made["items"]]  # the dataset's order
    assert {p["question_id"]: p["prediction"] for p in predictions} == by_id
    assert all(p["answerer"] == "imported" and p["sample_id"] == p["question_id"] for p in predictions)
    assert [p["gold"] for p in predictions] == [it["answer"] for it in made["items"]]  # an int answer stays an int
    meta = json.loads((root / "run_meta.json").read_text("utf-8"))
    assert meta["choices"] == {"dataset": DATASET, "memory": "imported", "answerer": "imported"}
    assert meta["data"]["name"] == DATASET and meta["data"]["pinned"] is False
    assert meta["data"]["sha256"] == sha256_file(made["data"])
    assert meta.get("partial") is None and meta["question_count"] == meta["questions_total"] == 20
    assert any("imported from hyp.jsonl" in n.lower() and "no model call" in n for n in meta["notes"])
    source = json.loads((root / "imported" / "source.json").read_text("utf-8"))
    assert source["format"] == HYPOTHESES and source["files"][0]["sha256"] == sha256_file(made["hypotheses"])
    assert not (root / "autorater").exists()
    metrics = json.loads((root / "metrics.json").read_text("utf-8"))
    assert metrics["benchmark"]["name"] == meta["benchmark"]["name"] == "longmemeval" and metrics["questions"] == 20
    rows = _rows(root / "imported" / "rows.jsonl")
    assert [r["file_index"] for r in rows] == list(range(20)) and rows[0]["file_key"] == rows[0]["question_id"]


def test_a_hypothesis_file_as_one_json_list_imports_too(made, tmp_path):
    listed = tmp_path / "hyp.json"
    listed.write_text(json.dumps(_rows(made["hypotheses"])), "utf-8")
    root = _import(made, listed, HYPOTHESES, tmp_path / "packs").pack_root
    assert verify_pack(root) == []
    assert "`hyp.json` item 1" in (root / "TRACE.md").read_text("utf-8")


def test_the_same_file_again_finds_the_finished_pack(made, tmp_path, capsys):
    first = _import(made, made["hypotheses"], HYPOTHESES, tmp_path / "packs")
    again = _import(made, made["hypotheses"], HYPOTHESES, tmp_path / "packs")
    assert again.pack_root == first.pack_root and not again.created
    assert "already imported" in capsys.readouterr().err


def test_an_imported_hypothesis_file_is_judged_by_the_authors_protocol(made, tmp_path):
    """A hypothesis pack is what `autorater judge.protocol=longmemeval` judges, as a qa pack."""
    from memorybench.stages.autorater import autorater_main
    from memorybench.testing.scripted_server import Reply, ScriptedOpenAIServer

    root = _import(made, made["hypotheses"], HYPOTHESES, tmp_path / "packs").pack_root
    with ScriptedOpenAIServer(responder=lambda body: Reply("Yes.")) as judge:
        assert (
            autorater_main(
                [
                    str(root),
                    "--quiet",
                    "judge=openai_compatible",
                    "judge.protocol=longmemeval",
                    f"judge.base_url={judge.base_url}",
                    "judge.model=judge-x",
                    f"paths.cache={tmp_path / 'cache'}",
                ]
            )
            == 0
        )
        assert len(judge.requests) == 20
    (folder,) = (root / "autorater").iterdir()
    metrics = json.loads((folder / "autorater_metrics.json").read_text("utf-8"))
    assert metrics["longmemeval"]["overall_accuracy"] == 1.0 and verify_pack(root) == []


# -- (2) a judged file ------------------------------------------------------------------------


def test_a_judged_file_reproduces_print_qa_metrics_exactly(made, tmp_path):
    result = _import(made, made["judged"], JUDGED, tmp_path / "packs")
    root = result.pack_root
    assert verify_pack(root) == []
    (folder,) = (root / "autorater").iterdir()
    assert folder.name.startswith(f"imported-{JUDGE_MODEL}-")
    metrics = json.loads((folder / "autorater_metrics.json").read_text("utf-8"))
    lme = metrics["longmemeval"]
    (first,) = lme["passes"]
    # the authors' script, run on the same judged file with the dataset as its reference file
    printed = _authors_print(made["judged"], made["data"], tmp_path)
    assert first["report"] == printed
    types = {it["question_id"]: it["question_type"] for it in made["items"]}
    labels = [
        JudgedQuestion(r["question_id"], types[r["question_id"]], r["autoeval_label"]["label"]) for r in made["judged_rows"]
    ]
    expected = qa_metrics(labels)
    assert authors_report(expected) == printed
    assert lme["accuracy_by_type"] == {t.question_type: t.accuracy for t in expected.by_type}
    for key in ("task_averaged_accuracy", "overall_accuracy", "abstention_accuracy"):
        assert lme[key] == getattr(expected, key)
    assert expected.task_averaged_accuracy is not None and expected.abstention_n > 0
    assert lme["comparable"] is True and lme["failed"] == 0
    # the verdicts are the file's labels; the rows keep them as written
    verdicts = {v["question_id"]: v for v in _rows(folder / "autorater_verdicts.jsonl")}
    for row in made["judged_rows"]:
        v = verdicts[row["question_id"]]
        assert v["score"] == int(row["autoeval_label"]["label"]) and v["status"] == ("CORRECT" if v["score"] else "WRONG")
        assert LONGMEMEVAL.category_names[v["category"]] == types[row["question_id"]]
    rep = PackReader.open(root).record(REPRODUCTION, Reproduction)
    block = rep.block(import_longmemeval.FIELD)  # the reproduction's own block, under the importer's key
    assert block is not None and block["equal"] and block["authors_report"] == printed
    assert json.loads(rep.dump())[import_longmemeval.FIELD] == block  # written back under that key
    assert rep.metrics["j"].rows.equal == 20 and rep.metrics["j"].rows.mismatched == 0
    assert rep == result.reproduction
    meta = json.loads((folder / "autorater_meta.json").read_text("utf-8"))
    assert meta["identity"]["protocol"] == "imported" and meta["judge_model_sent"] == JUDGE_MODEL


def test_the_command_prints_the_authors_table(made, tmp_path, capsys):
    code = main(
        [
            "import",
            str(made["judged"]),
            "--format",
            JUDGED,
            "--dataset",
            DATASET,
            "--dataset-path",
            str(made["data"]),
            "--packs",
            str(tmp_path / "packs"),
        ]
    )
    assert code == 0
    out = capsys.readouterr().out
    assert _authors_print(made["judged"], made["data"], tmp_path).strip("\n") in out
    assert "the same text, byte for byte" in out and "20 of 20 rows equal" in out and "pack: " in out


def test_labels_of_another_judge_import_labelled_not_comparable(made, tmp_path):
    rows = [{**r, "autoeval_label": {**r["autoeval_label"], "model": "gpt-4o-mini-2024-07-18"}} for r in made["judged_rows"]]
    root = _import(made, _jsonl(tmp_path / "mini.jsonl", rows), JUDGED, tmp_path / "packs").pack_root
    assert verify_pack(root) == []
    (folder,) = (root / "autorater").iterdir()
    lme = json.loads((folder / "autorater_metrics.json").read_text("utf-8"))["longmemeval"]
    assert lme["comparable"] is False and "gpt-4o-mini-2024-07-18" in lme["comparability"]


# -- (3) what is refused, in one line -------------------------------------------------------


def _refused(made: dict, tmp_path: Path, rows: list[dict] | str, fmt: str = JUDGED, **extra) -> str:
    path = tmp_path / "bad.jsonl"
    if isinstance(rows, str):
        path.write_text(rows, "utf-8")
    else:
        _jsonl(path, rows)
    with pytest.raises(UserError) as info:
        _import(made, path, fmt, tmp_path / "packs", **extra)
    message = info.value.message
    assert "\n" not in message and not (tmp_path / "packs").exists()
    return message


def test_a_malformed_row_is_named_by_file_and_line(made, tmp_path):
    lines = [json.dumps(r) for r in made["judged_rows"][:3]]
    message = _refused(made, tmp_path, "\n".join([*lines[:2], "{not json", lines[2]]) + "\n")
    assert "bad.jsonl:3: not valid JSON" in message and "one JSON object" in message
    rows = [dict(r) for r in made["judged_rows"]]
    del rows[4]["hypothesis"]
    assert "bad.jsonl:5: no hypothesis" in _refused(made, tmp_path, rows)
    rows = [dict(r) for r in made["judged_rows"]]
    rows[2] = {**rows[2], "autoeval_label": {"model": JUDGE_MODEL, "label": "yes"}}
    assert "bad.jsonl:3" in (m := _refused(made, tmp_path, rows)) and "JSON boolean" in m
    hypotheses = _rows(made["hypotheses"])
    assert "has no autoeval_label" in _refused(made, tmp_path, hypotheses)  # a hypothesis file is not a judged one


def test_an_id_the_dataset_lacks_is_named_with_its_line_and_the_fix(made, tmp_path):
    rows = [*made["judged_rows"], {**made["judged_rows"][0], "question_id": "zz_not_here"}]
    message = _refused(made, tmp_path, rows)
    assert "bad.jsonl:21: question zz_not_here is not in lme.json" in message and "--dataset-path" in message


def test_a_missing_question_needs_allow_partial(made, tmp_path):
    rows = [r for r in made["judged_rows"] if r["question_id"] not in ("lme003", "lme009_abs")]
    message = _refused(made, tmp_path, rows)
    assert "has no answer for 2 of the 20 questions" in message and "--allow-partial" in message
    assert "lme003" in message
    path = _jsonl(tmp_path / "partial.jsonl", rows)
    root = _import(made, path, JUDGED, tmp_path / "packs", allow_partial=True).pack_root
    assert verify_pack(root) == []
    meta = json.loads((root / "run_meta.json").read_text("utf-8"))
    assert meta["partial"]["absent_question_ids"] == ["lme003", "lme009_abs"] and meta["question_count"] == 18
    assert json.loads((root / "metrics.json").read_text("utf-8"))["partial"]["questions"] == 18
    (folder,) = (root / "autorater").iterdir()
    report = json.loads((folder / "autorater_metrics.json").read_text("utf-8"))["longmemeval"]["passes"][0]["report"]
    assert report == _authors_print(path, made["data"], tmp_path)


def test_several_judge_models_in_one_file_are_refused(made, tmp_path):
    rows = [dict(r) for r in made["judged_rows"]]
    rows[6] = {**rows[6], "autoeval_label": {"model": "gpt-4o-mini", "label": True}}
    message = _refused(made, tmp_path, rows)
    assert "bad.jsonl:7" in message and "gpt-4o-mini" in message and "split the file" in message


def test_the_dataset_is_named_and_only_for_these_formats(made, tmp_path):
    assert "needs --dataset NAME" in _refused(made, tmp_path, made["judged_rows"], dataset=None)
    assert "Did you mean 'longmemeval_s'" in _refused(made, tmp_path, made["judged_rows"], dataset="longmemeval_S")
    assert "is not a file" in _refused(made, tmp_path, made["judged_rows"], dataset_path=tmp_path / "none.json")
    with pytest.raises(UserError, match="--dataset and --dataset-path are for .*longmemeval_hypotheses, longmemeval_judged"):
        import_results([made["judged"]], "mem0_evals", dataset=DATASET)
    with pytest.raises(UserError, match="Did you mean 'longmemeval_judged'"):
        import_results([made["judged"]], "longmemeval_judge")


def test_a_link_as_the_file_is_refused(made, tmp_path):
    link = tmp_path / "link.jsonl"
    os.symlink(made["judged"], link)
    with pytest.raises(UserError, match="is a symbolic link"):
        _import(made, link, JUDGED, tmp_path / "packs")
