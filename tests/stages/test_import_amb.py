"""`--format amb_locomo`: AMB's (vectorize-io/agent-memory-benchmark) per-question LoCoMo output.

The pinned file is AMB's Cognee run (rag mode) over the 152 questions of conv-26 that AMB asks
(categories 1-4; PINS.md: accuracy 122/152 = 0.8026, judged by gemini-2.5-flash-lite). It goes
through the real command line: imported as a partial pack that verifies, its own labels a judge
folder, every figure it states recomputed from its rows and from the pack. Malformed inputs are
small files written here from the pinned one, each refused in one line.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import json
from collections import Counter
from pathlib import Path

import pytest
from conftest import PINS

from memorybench.answer.imported import REPRODUCTION, SOURCE, ImportSource, Reproduction
from memorybench.benchmarks.locomo.importers.amb import AMB_CATEGORIES, AmbFigures
from memorybench.cli import main
from memorybench.errors import UserError
from memorybench.pack.reader import PackReader
from memorybench.pack.verify import failures, verify_pack
from memorybench.stages.import_results import import_results

AMB = PINS / "peers" / "amb" / "locomo_cognee_rag_locomo10.json.gz"
SOURCE_REF = (
    "vectorize-io/agent-memory-benchmark@de83fa7816ab6bbb8a0ed63916f49f65300fb74b:outputs/locomo/cognee/rag/locomo10.json.gz"
)
#: PINS.md: the figure AMB's site shows for this run
STATED = {"correct": 122, "total_queries": 152}


def _data() -> dict:
    return json.loads(gzip.decompress(AMB.read_bytes()))


@pytest.fixture(scope="module")
def packs(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("packs")


@pytest.fixture(scope="module")
def cognee(packs):
    """The pinned file through `memorybench import`: (the pack's folder, its reproduction, what was printed)."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        argv = ["import", str(AMB), "--format", "amb_locomo", "--allow-partial", "--name", "amb-cognee"]
        assert main([*argv, "--packs", str(packs), "--source", SOURCE_REF]) == 0
    printed = out.getvalue()
    root = Path(printed.rsplit("pack: ", 1)[1].strip())
    return root, PackReader.open(root).record(REPRODUCTION, Reproduction), printed


def _own(rep: Reproduction) -> AmbFigures:
    return AmbFigures.model_validate(rep.own)


# -- the pinned file -----------------------------------------------------------------------------------------
def test_the_pinned_file_states_the_figure_pins_md_gives():
    data = _data()
    assert (data["correct"], data["total_queries"]) == (STATED["correct"], STATED["total_queries"])
    assert data["accuracy"] == STATED["correct"] / STATED["total_queries"]


def test_its_accuracy_is_reproduced_exactly_from_the_rows_and_by_the_pack(cognee):
    _, rep, printed = cognee
    data = _data()
    own = _own(rep)
    figures = {f.name: f for f in own.figures}
    for name in ("accuracy", "correct", "total_queries"):
        f = figures[name]
        assert f.stated == f.recomputed == f.ours == data[name], name
        assert (f.agreement, f.ours_agreement) == ("equal", "equal"), name
    # the averages runner.py writes are recomputed from the rows' context_tokens and retrieve_time_ms
    for name in ("avg_context_tokens", "avg_retrieve_time_ms"):
        assert figures[name].stated == figures[name].recomputed == data[name] and figures[name].ours is None, name
    assert own.reproduced and "reproduced: every stated figure, exactly" in printed
    assert own.system["judge_llm"] == data["judge_llm"] and own.system["answer_llm"] == data["answer_llm"]
    # the judge folder of the file's labels gives J = the file's accuracy, every digit
    assert rep.metrics["j"].overall.ours == data["accuracy"]
    assert (rep.metrics["j"].rows.rows, rep.metrics["j"].rows.equal, rep.metrics["j"].rows.reported_field) == (
        152,
        152,
        "correct",
    )


def test_per_category_the_rows_give_the_judge_folders_j(cognee):
    _, rep, _ = cognee
    data = _data()
    # the file states no per-category figure: AMB's own names, counted here from its rows
    rows = Counter(r["meta"]["category"] for r in data["results"])
    right = Counter(r["meta"]["category"] for r in data["results"] if r["correct"])
    shares = {c.amb_name: c for c in _own(rep).by_category}
    assert set(shares) == set(rows)
    for name, share in shares.items():
        assert (share.rows, share.correct) == (rows[name], right[name]) and share.category == AMB_CATEGORIES[name]
        assert (
            share.recomputed == right[name] / rows[name] == share.ours == rep.metrics["j"].by_category[str(share.category)].ours
        )
        assert share.agreement == "equal"
    # AMB's names are not LoCoMo's for categories 1, 3 and 4
    assert {c.category: (c.name, c.amb_name) for c in shares.values()}[1] == ("multi-hop", "single-hop")


def test_it_says_why_the_figure_compares_with_no_other(cognee):
    _, rep, printed = cognee
    comparability = _own(rep).comparability
    assert any(c.startswith("partial: 152 of the 1,986 questions of locomo10, from conv-26") for c in comparability)
    assert any("gemini:gemini-2.5-flash-lite" in c and "not Mem0's gpt-4o-mini" in c for c in comparability)
    assert rep.partial is not None and (rep.partial.questions, rep.partial.of) == (152, 1540)
    assert rep.partial.conversations == ["conv-26"]
    assert "PARTIAL: over the 152 of 1540 questions" in printed and "not comparable: another judge" in printed


def test_the_pack_verifies_and_holds_conv_26_joined_by_id(cognee, capsys):
    root, _, _ = cognee
    assert failures(verify_pack(root)) == []
    assert main(["verify", str(root)]) == 0
    capsys.readouterr()
    data = _data()
    locomo = json.loads((PINS / "data" / "locomo10.json").read_text("utf-8"))
    qa = {c["sample_id"]: c["qa"] for c in locomo}
    pack = PackReader.open(root)
    predictions = {p.question_id: p for p in pack.predictions()}
    assert len(predictions) == 152
    for r in data["results"]:
        sample, index = r["query_id"].rsplit("_q", 1)
        p = predictions[f"{sample}-q-{index}"]
        q = qa[sample][int(index)]
        assert (
            (p.question, p.gold, p.prediction)
            == (q["question"], q["answer"], r["answer"])
            == (r["query"], r["gold_answers"][0], r["answer"])
        )
    meta = pack.meta()
    assert meta.categories == [1, 2, 3, 4] and meta.partial is not None and meta.choices["answerer"] == "imported"
    source = pack.record(SOURCE, ImportSource)
    assert source.conversations == {"conv-26": "conv-26"} and source.tie_broken == 0 and source.absent == {"5": 446}
    assert source.source is not None and source.source.repository == "vectorize-io/agent-memory-benchmark"
    (judge,) = pack.judges()
    metrics = pack.autorater_metrics(judge)
    assert metrics.counts.judged == 152 and metrics.counts.failed == 0
    assert "question id names `qa[0]`" in (root / "TRACE.md").read_text("utf-8")


def test_without_allow_partial_it_is_refused_in_one_line(tmp_path, capsys):
    code = main(["import", str(AMB), "--format", "amb_locomo", "--packs", str(tmp_path / "packs")])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err and err.count("\n") == 1
    assert "no row for 1388 questions" in err and "--allow-partial" in err


def test_as_amb_beam_it_is_refused_as_another_datasets_and_back(tmp_path):
    with pytest.raises(UserError, match="AMB's output for dataset 'locomo', not BEAM"):
        import_results([AMB], "amb_beam", packs=tmp_path / "packs", allow_partial=True)
    data = _data()
    data["dataset"] = "beam"
    path = _written(tmp_path, data)
    with pytest.raises(UserError, match="AMB's output for dataset 'beam', not LoCoMo; import LoCoMo's"):
        import_results([path], "amb_locomo", packs=tmp_path / "packs", allow_partial=True)


# -- written files -------------------------------------------------------------------------------------------
def _written(tmp_path: Path, data, name: str = "locomo10.json.gz") -> Path:
    path = tmp_path / name
    raw = json.dumps(data).encode("utf-8")
    path.write_bytes(gzip.compress(raw) if name.endswith(".gz") else raw)
    return path


def _small(results: int = 6) -> dict:
    """The pinned file cut to its first rows, its figures as runner.py writes them for those rows."""
    data = _data()
    data["results"] = data["results"][:results]
    data["total_queries"] = len(data["results"])
    data["correct"] = sum(r["correct"] for r in data["results"])
    data["accuracy"] = data["correct"] / data["total_queries"]
    data["avg_context_tokens"] = round(sum(r["context_tokens"] for r in data["results"]) / results, 1)
    data["avg_retrieve_time_ms"] = round(sum(r["retrieve_time_ms"] for r in data["results"]) / results, 1)
    return data


def test_a_figure_the_rows_do_not_give_is_not_reproduced_and_says_so(tmp_path):
    data = _small()
    data["accuracy"] += 0.01
    data["avg_context_tokens"] += 1
    result = import_results(
        [_written(tmp_path, data, "locomo10.json")], "amb_locomo", packs=tmp_path / "packs", allow_partial=True
    )
    own = AmbFigures.model_validate(result.reproduction.own)
    figures = {f.name: f for f in own.figures}
    assert figures["accuracy"].agreement == figures["accuracy"].ours_agreement == "differs"
    assert figures["avg_context_tokens"].agreement == "differs" and figures["correct"].agreement == "equal"
    assert not own.reproduced and any("NOT reproduced" in line for line in own.lines())
    assert failures(verify_pack(result.pack_root)) == []


def _edit_row(n: int, **fields):
    def edit(data):
        data["results"][n].update(fields)

    return edit


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda d: d.update(results={}), r"is not an amb_locomo file: expected AMB's output object with 'results'"),
        (lambda d: d.update(split="locomo5"), r"split 'locomo5' is not AMB's LoCoMo split 'locomo10'"),
        (lambda d: d["results"][1].pop("correct"), r"results\[1\]: key 'correct' must be bool \(found no such key\)"),
        (_edit_row(2, answer=3), r"results\[2\]: key 'answer' must be text or null, got int"),
        (_edit_row(0, query_id="conv-26-0"), r"query_id 'conv-26-0' is not <sample_id>_q<index>"),
        (_edit_row(0, meta={"sample_id": "conv-30", "category": "temporal"}), r"names conv-26, meta.sample_id 'conv-30'"),
        (_edit_row(0, meta={"sample_id": "conv-26", "category": "adversarial"}), r"meta.category 'adversarial' is none of AMB's"),
        (_edit_row(0, gold_answers=["7 May 2023", "8 May 2023"]), r"gold_answers holds 2 answers"),
        (_edit_row(1, query_id="conv-26_q0"), r"query_id conv-26_q0 occurs twice"),
        (
            _edit_row(3, query_id="conv-26_q999"),
            r"1 of 6 rows .* \(1 unmapped, 0 contradicting .*question id conv-26-q-999 is none",
        ),
        (_edit_row(0, query="Where did Caroline go?"), r"\(1 unmapped, 0 contradicting.*not conv-26-q-0's"),
        (
            _edit_row(0, gold_answers=["8 May 2023"]),
            r"\(0 unmapped, 1 contradicting.*gold '8 May 2023', conv-26-q-0 has '7 May 2023'",
        ),
        (_edit_row(0, meta={"sample_id": "conv-26", "category": "multi-hop"}), r"category 3, conv-26-q-0 is category 2"),
    ],
    ids=[
        "not-summary",
        "split",
        "no-correct",
        "answer-type",
        "query-id",
        "sample",
        "category-name",
        "two-golds",
        "id-twice",
        "unknown-id",
        "other-text",
        "other-gold",
        "other-category",
    ],
)
def test_a_malformed_file_is_one_line(tmp_path, capsys, edit, message):
    data = _small()
    edit(data)
    path = _written(tmp_path, data)
    with pytest.raises(UserError, match=message) as error:
        import_results([path], "amb_locomo", packs=tmp_path / "packs", allow_partial=True)
    assert "\n" not in error.value.message
    code = main(["import", str(path), "--format", "amb_locomo", "--allow-partial", "--packs", str(tmp_path / "packs")])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err
    assert not (tmp_path / "packs").exists() or not any((tmp_path / "packs").rglob("_SUCCESS"))


def test_a_file_that_is_not_gzip_or_json_and_other_arguments_are_one_line(tmp_path):
    bad = tmp_path / "locomo10.json.gz"
    bad.write_bytes(b"{not gzip")
    with pytest.raises(UserError, match="is not gzip data"):
        import_results([bad], "amb_locomo", packs=tmp_path / "packs")
    with pytest.raises(UserError, match="--model honcho is for locomo_task_eval files; an amb_locomo file"):
        import_results([AMB], "amb_locomo", model_key="honcho", packs=tmp_path / "packs")
    with pytest.raises(UserError, match="an amb_locomo import reads one file, got 2"):
        import_results([AMB, AMB], "amb_locomo", packs=tmp_path / "packs")
    with pytest.raises(UserError, match="--dataset and --dataset-path are for .*amb_beam.*; a amb_locomo file maps onto"):
        import_results([AMB], "amb_locomo", dataset="beam_128k", packs=tmp_path / "packs")
