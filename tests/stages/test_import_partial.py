"""`memorybench import --allow-partial`: a released file of fewer conversations or rows is a pack labelled partial.

The partial files are made here from the pinned peer files (../shared/pins/peers), in
their own format: memobase's mem0 `evals.py` output less one whole conversation (as
Memobase's v0.0.37-a1 table covers 9 of the 10), Honcho's LoCoMo `task_eval` output kept
to one conversation (as LoCoMo's pull request 7 ships one run per conversation), and the
same with a few rows left unanswered (a run that stopped). Without the flag each is one
line naming it; with it the pack says what it holds and lacks, `verify` passes, and the
reproduction table is over the questions present, a whole-run stated figure marked not
comparable.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import PINS

from memorybench.answer.imported import REPRODUCTION, SOURCE, ImportSource, Reproduction
from memorybench.cli import main
from memorybench.errors import UserError
from memorybench.pack.reader import PackReader
from memorybench.pack.verify import failures, verify_pack
from memorybench.stages.import_results import import_results
from memorybench.benchmarks.locomo.importers import format_reproduction

PEERS = PINS / "peers"
MEMOBASE = PEERS / "memobase_eval_0710_3000.json"
HONCHO = PEERS / "locomo10_qa_honcho_base.json"
HONCHO_STATS = PEERS / "locomo10_qa_stats_honcho_base.json"


def _json(path: Path) -> object:
    return json.loads(path.read_text("utf-8"))


def _write(path: Path, data: object) -> Path:
    path.write_text(json.dumps(data), "utf-8")
    return path


def _meta(root: Path) -> dict:
    return json.loads((root / "run_meta.json").read_text("utf-8"))


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("partial-files")
    memobase = _json(MEMOBASE)
    del memobase["0"]  # conv-26 out: nine conversations, 1,388 rows, as Memobase's v0.0.37-a1 table
    honcho = _json(HONCHO)
    first = [s for s in honcho if s["sample_id"] == "conv-26"]  # conv-26 only: LoCoMo's one run per conversation
    stopped = _json(HONCHO)
    for row in next(s for s in stopped if s["sample_id"] == "conv-30")["qa"][-3:]:  # a run that stopped
        del row["honcho_prediction"], row["honcho_f1"]
    # the stats file LoCoMo's evaluation_stats.py writes for the conv-26 run alone
    counts: dict[str, int] = {}
    totals: dict[str, float] = {}
    for row in first[0]["qa"]:
        c = str(row["category"])
        counts[c] = counts.get(c, 0) + 1
        totals[c] = totals.get(c, 0.0) + row["honcho_f1"]
    return {
        "memobase9": _write(folder / "memobase_9_conversations.json", memobase),
        "conv26": _write(folder / "locomo10_qa_honcho_conv-26.json", first),
        "conv26_stats": _write(
            folder / "locomo10_qa_stats_honcho_conv-26.json",
            {"honcho": {"category_counts": counts, "cum_accuracy_by_category": totals}},
        ),
        "stopped": _write(folder / "locomo10_qa_honcho_stopped.json", stopped),
    }


@pytest.fixture(scope="module")
def packs(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("packs")


@pytest.fixture(scope="module")
def memobase9(files, packs):
    return import_results([files["memobase9"]], "mem0_evals", name="memobase9", packs=packs, allow_partial=True)


@pytest.fixture(scope="module")
def conv26(files, packs):
    # beside the whole run's stats file: its figures count other rows
    return import_results([files["conv26"], HONCHO_STATS], "locomo_task_eval", name="conv26", packs=packs, allow_partial=True)


# -- refused without the flag, in one line naming it ---------------------------------------
@pytest.mark.parametrize(
    "which, fmt, expected",
    [
        ("memobase9", "mem0_evals", "has no row for 152 questions .* by conversation conv-26: 152;"),
        ("conv26", "locomo_task_eval", "has no row for 1787 questions .* by conversation conv-30: 105,"),
        ("stopped", "locomo_task_eval", r"has no row for 3 questions .* 3 of them rows left unanswered, first conv-30 qa\[102\]"),
    ],
)
def test_a_partial_file_is_refused_in_one_line_naming_the_flag(files, tmp_path, which, fmt, expected):
    with pytest.raises(UserError, match=expected) as error:
        import_results([files[which]], fmt, packs=tmp_path / "packs")
    message = error.value.message
    assert "\n" not in message and "pass --allow-partial to import it as a pack labelled partial" in message
    assert not (tmp_path / "packs").exists() or not any((tmp_path / "packs").rglob("_SUCCESS"))


def test_the_cli_refusal_is_one_line_without_a_traceback(files, tmp_path, capsys):
    code = main(["import", str(files["memobase9"]), "--format", "mem0_evals", "--packs", str(tmp_path / "packs")])
    err = capsys.readouterr().err
    assert code != 0 and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1 and "--allow-partial" in err


# -- a mem0-format file of nine conversations ----------------------------------------------
def test_a_partial_mem0_file_is_a_pack_labelled_partial(memobase9):
    root = memobase9.pack_root
    meta = _meta(root)
    assert meta["is_prefix"] is False and meta["categories"] == [1, 2, 3, 4]
    partial = meta["partial"]
    assert (partial["questions"], partial["of"]) == (1388, 1540)  # Memobase's v0.0.37-a1 row count
    assert partial["absent_by_conversation"] == {"conv-26": 152}
    assert sum(partial["absent_by_category"].values()) == 152 and "5" not in partial["absent_by_category"]
    assert len(partial["conversations"]) == 9 and "conv-26" not in partial["conversations"]
    assert len(partial["absent_question_ids"]) == 152 and all(q.startswith("conv-26") for q in partial["absent_question_ids"])
    assert any(note.startswith("Partial: ") for note in meta["notes"])
    metrics = json.loads((root / "metrics.json").read_text("utf-8"))
    assert metrics["questions"] == 1388 and metrics["is_prefix"] is False and metrics["partial"] == partial
    pack = PackReader.open(root)
    assert len(list(pack.predictions())) == 1388
    assert len((root / "memory/manifest.jsonl").read_text("utf-8").splitlines()) == 9


def test_category_5_left_out_by_the_format_is_not_partial(memobase9):
    source = PackReader.open(memobase9.pack_root).record(SOURCE, ImportSource)
    assert source.absent == {"5": 446}  # the format never holds it: categories, as for a full file
    assert len(source.absent_question_ids) == 446
    assert source.partial is not None and sum(source.partial.absent_by_category.values()) == 152


def test_the_partial_mem0_table_is_over_the_questions_present(memobase9):
    rep = memobase9.reproduction
    assert rep.partial is not None and rep.partial.questions == 1388
    for name in ("mem0_bleu1", "mem0_f1", "j"):
        metric = rep.metrics[name]
        assert (metric.rows.rows, metric.rows.equal) == (1388, 1388), name
        assert metric.overall.rows == 1388 and sum(f.rows for f in metric.by_category.values()) == 1388
        assert round(metric.overall.ours, 10) == round(metric.overall.reported, 10)
    table = format_reproduction(rep)
    assert table.splitlines()[1].startswith("PARTIAL: over the 1388 of 1540 questions the file holds (9 conversations)")
    assert "not comparable" in table.splitlines()[1]


def test_the_judge_folder_of_a_partial_pack_covers_the_questions_held(memobase9):
    metrics = PackReader.open(memobase9.pack_root).autorater_metrics(memobase9.reproduction.judge_id)
    assert metrics.counts.judged == 1388 and metrics.counts.failed == 0


# -- a LoCoMo task_eval file of one conversation -------------------------------------------
def test_a_per_conversation_task_eval_file_is_a_pack_labelled_partial_not_a_prefix(conv26):
    meta = _meta(conv26.pack_root)
    # conv-26's questions are the dataset's first 199: still not a max_questions prefix
    assert meta["is_prefix"] is False and meta["max_questions"] is None and "categories" not in meta
    partial = meta["partial"]
    assert (partial["questions"], partial["of"], partial["conversations"]) == (199, 1986, ["conv-26"])
    assert sum(partial["absent_by_conversation"].values()) == 1787 and "conv-26" not in partial["absent_by_conversation"]
    assert partial["absent_by_category"]["5"] == 446 - 47  # conv-26 holds 47 of category 5: here absent is partial
    assert len(list(PackReader.open(conv26.pack_root).predictions())) == 199


def test_a_whole_run_stats_file_is_not_comparable_with_one_conversation(conv26):
    f1 = conv26.reproduction.metrics["locomo_f1"]
    assert (f1.rows.rows, f1.rows.equal) == (199, 199)
    figures = [*f1.by_category.values(), f1.overall]
    assert all(f.stated_comparable is False and f.stated_rows > f.rows for f in figures)
    table = format_reproduction(conv26.reproduction)
    assert "n/c" in table and "not comparable (n/c)" in table
    record = PackReader.open(conv26.pack_root).record(REPRODUCTION, Reproduction)
    assert record.partial.questions == 199


def test_a_stats_file_of_the_same_conversation_is_comparable(files, tmp_path):
    result = import_results(
        [files["conv26"], files["conv26_stats"]], "locomo_task_eval", packs=tmp_path / "packs", allow_partial=True
    )
    f1 = result.reproduction.metrics["locomo_f1"]
    for figure in [*f1.by_category.values(), f1.overall]:
        assert figure.stated_comparable is True and figure.stated_rows == figure.rows
        assert round(figure.stated, 6) == round(figure.ours_rounded, 6)
    assert "n/c" not in format_reproduction(result.reproduction)


def test_rows_left_unanswered_are_absent_with_the_flag(files, tmp_path):
    result = import_results([files["stopped"]], "locomo_task_eval", packs=tmp_path / "packs", allow_partial=True)
    partial = _meta(result.pack_root)["partial"]
    assert (partial["questions"], partial["absent_by_conversation"]) == (1983, {"conv-30": 3})
    assert "3 of them rows it left unanswered" in partial["reason"] and len(partial["conversations"]) == 10
    assert failures(verify_pack(result.pack_root)) == []


# -- verify, and the CLI -------------------------------------------------------------------
@pytest.mark.parametrize("which", ["memobase9", "conv26"])
def test_a_partial_pack_verifies(which, request):
    assert failures(verify_pack(request.getfixturevalue(which).pack_root)) == []


def test_verify_still_counts_the_questions_of_a_partial_pack(memobase9, tmp_path):
    import shutil

    copy = tmp_path / "pack"
    shutil.copytree(memobase9.pack_root, copy)
    meta = _meta(copy)
    meta["partial"]["absent_question_ids"] = meta["partial"]["absent_question_ids"][:-1]  # one held question forgotten
    (copy / "run_meta.json").write_text(json.dumps(meta), "utf-8")
    found = failures(verify_pack(copy))
    assert any(f.code == "count" for f in found)


def test_the_cli_imports_a_partial_file_with_the_flag(files, memobase9, packs, capsys):
    code = main(
        [
            "import",
            str(files["memobase9"]),
            "--format",
            "mem0_evals",
            "--name",
            "memobase9",
            "--packs",
            str(packs),
            "--allow-partial",
        ]
    )
    out = capsys.readouterr().out
    assert code == 0 and "PARTIAL: over the 1388 of 1540 questions" in out and f"pack: {memobase9.pack_root}" in out


def test_rescore_keeps_a_partial_pack_as_it_was(memobase9):
    from memorybench.stages.rescore import format_table, rescore

    before = (memobase9.pack_root / "metrics.json").read_bytes()
    metrics = rescore(memobase9.pack_root)
    assert (memobase9.pack_root / "metrics.json").read_bytes() == before
    assert "Partial import: 1388 of 1540 questions (9 conversations held)" in format_table(metrics)
    assert failures(verify_pack(memobase9.pack_root)) == []


# -- CORE: some of its one-file-per-conversation files ------------------------------------
def test_some_core_files_are_a_partial_pack_whose_stated_j_covers_them(tmp_path, locomo_raw):
    from test_import_core import _core_files  # CORE's released shape, made from the dataset

    paths, *_ = _core_files(tmp_path / "files", locomo_raw)
    with pytest.raises(UserError, match="by conversation conv-41: 152, .*pass --allow-partial"):
        import_results(paths[:2], "core", packs=tmp_path / "packs")
    result = import_results(paths[:2], "core", packs=tmp_path / "packs", allow_partial=True)
    partial = _meta(result.pack_root)["partial"]
    assert (partial["questions"], partial["of"], partial["conversations"]) == (152 + 81, 1540, ["conv-26", "conv-30"])
    assert "5" not in partial["absent_by_category"] and result.source.absent == {"5": 446}
    j = result.reproduction.metrics["j"]
    # CORE's stated J is summed over the files given: it counts the rows held, so it stands beside ours
    for figure in [*j.by_category.values(), j.overall]:
        assert figure.stated_comparable is True and figure.stated == pytest.approx(figure.ours)
    assert failures(verify_pack(result.pack_root)) == []
