"""`memorybench import --format core`: CORE's one evaluation file per conversation.

No CORE file is pinned, so the files are made here in CORE's released shape
(RedPlanetHQ/core-benchmark, locomo/evals/evaluation_locomo<N>.json) from the pinned
dataset: a known answer and label per row, and a `summary.categoryBreakdown` whose
correct/wrong counts the test states itself. The import must reproduce those stated J
figures from the rows' labels, take the files in any order, and refuse what CORE never
writes in one line.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from memorybench.errors import UserError
from memorybench.pack.reader import PackReader
from memorybench.pack.verify import failures, verify_pack
from memorybench.stages.import_results import import_results


def _label(index: int) -> str:
    return "WRONG" if index % 3 == 0 else "CORRECT"


def _core_files(folder: Path, locomo_raw: list[dict]) -> tuple[list[Path], Counter, Counter]:
    folder.mkdir(parents=True, exist_ok=True)
    correct: Counter = Counter()
    judged: Counter = Counter()
    paths = []
    for n, conversation in enumerate(locomo_raw, start=1):
        results = []
        for i, q in enumerate(conversation["qa"]):
            if q["category"] == 5:  # CORE leaves the adversarial questions out
                continue
            label = _label(i)
            results.append(
                {
                    "question": q["question"],
                    "expectedAnswer": q["answer"],
                    "evidence": q.get("evidence", []),
                    "category": q["category"],
                    "conversationId": f"locomo_{n}",
                    "generatedAnswer": str(q["answer"]) if label == "CORRECT" else "I do not know.",
                    "evaluationResult": label,
                    "evaluationReasoning": json.dumps({"label": label}),
                    "evaluationMethod": "llm",
                }
            )
        mine = Counter(r["category"] for r in results if r["evaluationResult"] == "CORRECT")
        wrong = Counter(r["category"] for r in results if r["evaluationResult"] == "WRONG")
        correct += mine
        judged += mine + wrong
        summary = {
            "totalQuestions": len(conversation["qa"]),
            "categoryBreakdown": {
                str(c): {"total": mine[c] + wrong[c], "correct": mine[c], "wrong": wrong[c], "errors": 0}
                for c in sorted(mine | wrong)
            },
        }
        path = folder / f"evaluation_locomo{n}.json"
        path.write_text(
            json.dumps(
                {
                    "timestamp": "2025-08-24T17:28:41.903Z",
                    "summary": summary,
                    "conversations": [{"conversationId": f"locomo_{n}", "results": results}],
                },
                indent=2,
            ),
            "utf-8",
        )
        paths.append(path)
    return paths, correct, judged


@pytest.fixture(scope="module")
def core(tmp_path_factory, locomo_raw):
    root = tmp_path_factory.mktemp("core")
    paths, correct, judged = _core_files(root / "files", locomo_raw)
    result = import_results(paths, "core", name="core", packs=root / "packs")
    return result, paths, correct, judged, root


def test_core_files_reproduce_their_stated_j_from_their_labels(core):
    result, paths, correct, judged, _ = core
    j = result.reproduction.metrics["j"]
    assert j.rows is not None and j.rows.reported_field == "evaluationResult"
    assert j.rows.rows == j.rows.equal == sum(judged.values()) == 1540 and j.rows.mismatched == 0
    for c, figure in j.by_category.items():
        assert figure.stated_rows == figure.rows == judged[int(c)]
        assert figure.stated == figure.reported == figure.ours == correct[int(c)] / judged[int(c)], c
    assert j.overall.stated == pytest.approx(sum(correct.values()) / sum(judged.values()))
    assert result.source.absent == {"5": 446}


def test_an_imported_core_pack_verifies_and_has_the_files_judge(core):
    result = core[0]
    assert failures(verify_pack(result.pack_root)) == []
    pack = PackReader.open(result.pack_root)
    (judge,) = pack.judges()
    assert pack.autorater_metrics(judge).counts.judged == 1540
    assert {p.category for p in pack.predictions()} == {1, 2, 3, 4}


def test_the_files_order_does_not_change_the_pack(core):
    result, paths, *_, root = core
    again = import_results(list(reversed(paths)), "core", name="core", packs=root / "packs")
    assert again.pack_root == result.pack_root and not again.created


def test_core_files_name_every_file_they_were_read_from(core):
    result, paths, *_ = core
    assert sorted(f.name for f in result.source.files) == sorted(p.name for p in paths)
    assert len({f.sha256 for f in result.source.files}) == 10


def test_what_core_never_writes_is_one_line(tmp_path, locomo_raw):
    paths, *_ = _core_files(tmp_path / "files", locomo_raw)
    with pytest.raises(UserError, match="both hold conversation locomo_1"):
        import_results([paths[0], paths[0]], "core", packs=tmp_path / "packs")
    data = json.loads(paths[1].read_text("utf-8"))
    data["conversations"][0]["results"][2]["evaluationResult"] = "MAYBE"
    paths[1].write_text(json.dumps(data), "utf-8")
    with pytest.raises(UserError, match="evaluationResult that is not CORRECT or WRONG .first: locomo_2\\[2\\]='MAYBE'"):
        import_results(paths, "core", packs=tmp_path / "packs")
    with pytest.raises(UserError, match="no row for .* questions"):
        import_results(paths[:1], "core", packs=tmp_path / "packs")
    (tmp_path / "list.json").write_text("[]", "utf-8")
    with pytest.raises(UserError, match="is not a core file"):
        import_results([tmp_path / "list.json"], "core", packs=tmp_path / "packs")
