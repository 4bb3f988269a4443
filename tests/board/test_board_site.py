"""`memorybench board`: the pinned peers' packs and two scripted own runs on one board.

LoCoMo's table shows each pack's figure with its interval over conversations, its judge and its
protocol marks; packs judged differently carry the `judge` mark; the judge-sensitivity table ranks
three packs under two scripted judges; a new pack adds its row without rereading the others; the
contract's marks and the forest plot's paired differences are checked against compare's own.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
from board.packs import HOSTILE_MODEL, JUDGES, board_packs

from memorybench.board.board_command import board_main, build_board
from memorybench.board.contract import MEASURED, marks, reference
from memorybench.board.store import BOARD_FILE, Board
from memorybench.board.tables import benchmark_tables, judge_sensitivity, paired_from_units
from memorybench.cli import main
from memorybench.compare.intervals import paired_difference
from memorybench.pack.reader import PackReader


@pytest.fixture(scope="module")
def packs() -> dict[str, Path]:
    return board_packs()


@pytest.fixture(scope="module")
def site(packs, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("site")
    build_board([str(packs["root"])], out)
    return out


def _board(out: Path) -> Board:
    return Board.model_validate_json((out / BOARD_FILE).read_bytes())


def _data(page: Path) -> dict:
    text = page.read_text("utf-8")
    block = re.search(r'<script type="application/json" id="mb-board">(.*?)</script>', text, re.S)
    assert block is not None
    return json.loads(block.group(1))


def _entry(table: dict, system_start: str, judge_part: str = "") -> dict:
    found = [e for e in table["entries"] if e["system"].startswith(system_start) and judge_part in e["judge"]]
    assert len(found) == 1, [(e["system"], e["judge"]) for e in table["entries"]]
    return found[0]


def test_locomos_table_shows_every_pack_with_its_interval_judge_and_marks(packs, site):
    (table,) = _data(site / "index.html")["tables"]
    assert table["benchmark"] == "locomo" and table["figure_name"] == "J" and table["lexical_name"] == "LoCoMo F1"
    systems = {e["system"].split(" ")[0] for e in table["entries"]}
    assert {"memobase", "zep", "honcho", "core", "memos-fork", "amb-cognee", "session_summaries"} <= systems
    memobase = PackReader.open(packs["memobase"])
    imported_judge = next(j for j in memobase.judges() if j.startswith("imported"))
    entry = _entry(table, "memobase", "imported judge")
    # the figure is the pack's own J (its judge's metrics), with an interval over its 10 conversations
    assert entry["figure"]["value"] == pytest.approx(memobase.autorater_metrics(imported_judge).j.mean)
    assert entry["figure"]["low"] < entry["figure"]["value"] < entry["figure"]["high"]
    assert entry["figure"]["units"] == 10 and "Korn-Graubard" in entry["figure"]["method"] and entry["figure"]["n"] == 1540
    assert entry["lexical"]["value"] == pytest.approx(
        json.loads((packs["memobase"] / "metrics.json").read_text())["scores"]["locomo_f1"]["subsets"]["1-4"]["value"]
    )
    assert "10 conversations, 9 df" in entry["lexical"]["method"] and "by_unit" not in entry["figure"]  # the index has no sums
    # every entry is marked by each contract field in which it differs from the column's reference
    for e in table["entries"]:
        chosen = [f for f in table["fields"] if f not in MEASURED]
        assert [f for f in e["marks"] if f not in MEASURED] == [f for f in chosen if e["contract"][f] != table["reference"][f]]
    # packs judged differently carry the mark: the imported judges are not the reference judge
    judges = {e["contract"]["judge"] for e in table["entries"]}
    assert len(judges) > 2
    assert all(("judge" in e["marks"]) == (e["contract"]["judge"] != table["reference"]["judge"]) for e in table["entries"])
    assert "judge" in _entry(table, "zep")["marks"]
    # the partial AMB pack covers 152 questions of one conversation: its coverage is marked
    amb = _entry(table, "amb-cognee")
    assert amb["figure"]["n"] == 152 and amb["figure"]["units"] == 1 and "questions" in amb["marks"]
    # the own runs asked category 5 (open-ended), the peers did not: the policy is a field
    own = _entry(table, "session_summaries / scripted-a", "lenient")
    assert own["contract"]["abstention"].startswith("category 5 asked") and own["gold_wrong"] == 99
    assert _entry(table, "zep")["contract"]["abstention"].startswith("category 5 not asked")


def test_the_judge_sensitivity_table_ranks_three_packs_under_two_scripted_judges(packs, site):
    data = _data(site / "benchmark-locomo.html")
    sensitivity = data["sensitivity"]
    scripted = [j for j in sensitivity["judges"] if any(m in j["judge"] for m in JUDGES)]
    assert len(scripted) == 2
    for judge in scripted:
        cells = {r["system"]: r["cells"][judge["id"]] for r in sensitivity["rows"] if judge["id"] in r["cells"]}
        assert len(cells) == 3 and {c["of"] for c in cells.values()} == {3}
        ordered = sorted(cells.values(), key=lambda c: -c["value"])
        # rank 1 the highest; ties share the better rank
        for cell in ordered:
            assert cell["rank"] == 1 + sum(1 for o in ordered if o["value"] > cell["value"])
    for row in sensitivity["rows"]:
        ranks = [c["rank"] for j, c in row["cells"].items() if any(j == s["id"] for s in scripted)]
        if len(ranks) == 2:
            # places moved spans every judge that judged it (memobase's own imported judge too)
            every = [c["rank"] for c in row["cells"].values()]
            assert row["places_moved"] == max(every) - min(every)
    # the same pure function over the board's rows
    rows = _board(site).rows
    assert judge_sensitivity(rows) == sensitivity


def test_a_new_pack_adds_its_row_without_rereading_the_others(packs, tmp_path, capsys, monkeypatch):
    root = tmp_path / "packs"
    for name in ("zep", "honcho"):
        shutil.copytree(packs[name], root / name / "runs" / packs[name].name)
    out = tmp_path / "site"
    assert board_main([str(root), "--out", str(out), "--no-views"]) == 0
    first = {row.key: row.model_dump_json() for row in _board(out).rows}
    assert len(first) == 2 and "2 read, 0 kept" in capsys.readouterr().out
    shutil.copytree(packs["core"], root / "core" / "runs" / packs["core"].name)
    from memorybench.board import store

    read: list[str] = []
    real = store.board_row
    monkeypatch.setattr(store, "board_row", lambda location, key=None: read.append(str(location)) or real(location, key))
    assert board_main([str(root), "--out", str(out), "--no-views"]) == 0
    assert "1 read, 2 kept, 0 dropped" in capsys.readouterr().out
    assert read == [str(root / "core" / "runs" / packs["core"].name)]
    after = {row.key: row.model_dump_json() for row in _board(out).rows}
    assert {k: after[k] for k in first} == first and len(after) == 3
    # a pack no longer given is dropped, and so is its system page
    shutil.rmtree(root / "zep")
    assert board_main([str(root), "--out", str(out), "--no-views"]) == 0
    assert "0 read, 2 kept, 1 dropped" in capsys.readouterr().out
    assert len(list(out.glob("system-*.html"))) == 2
    # a pack that gains a judge is read again (its _SUCCESS files are its key)
    from tracking.pack_factory import add_autorater

    add_autorater(root / "core" / "runs" / packs["core"].name, passes=1, model="late-judge")
    assert board_main([str(root), "--out", str(out), "--no-views"]) == 0
    assert "1 read, 1 kept, 1 dropped" in capsys.readouterr().out


def test_hostile_strings_stay_text_in_every_page(site):
    for page in site.glob("*.html"):
        text = page.read_text("utf-8")
        assert text.count("<script") == text.count("</script>"), page.name  # nothing closed a script early
        if not page.name.startswith("run-"):
            assert "<img" not in text and "</script><script>window" not in text, page.name  # `<` is \u003c in the data
            assert "Content-Security-Policy" in text and "'unsafe-inline'" not in text
    table = _data(site / "index.html")["tables"][0]
    assert any(e["contract"]["answer_model"] == HOSTILE_MODEL for e in table["entries"])  # kept exactly, as data


def test_the_first_page_carries_no_per_question_or_per_unit_data(site):
    index = json.dumps(_data(site / "index.html"))
    assert '"by_unit"' not in index and "conv-26-q-" not in index
    assert '"by_unit"' in json.dumps(_data(site / "benchmark-locomo.html"))


def test_paired_from_units_is_compares_paired_difference_over_the_same_questions():
    rng = np.random.default_rng(3)
    units = [f"conv-{g}" for g in range(10) for _ in range(rng.integers(5, 30))]
    ids = [f"q{i}" for i in range(len(units))]
    a, b = rng.random(len(ids)).round(2), rng.random(len(ids)).round(2)

    def sums(values):
        out: dict[str, list] = {}
        for q, u, v in zip(ids, units, values):
            cell = out.setdefault(u, [0.0, 0, []])
            cell[0] += v
            cell[1] += 1
            cell[2].append(q)
        return {u: [s, n, ",".join(sorted(qs))] for u, (s, n, qs) in out.items()}

    found = paired_from_units(sums(a), sums(b))
    expected = paired_difference(a, b, units)
    assert found["units"] == 10 and found["n"] == len(ids)
    assert found["difference"] == pytest.approx(expected.difference)
    assert (found["low"], found["high"]) == (pytest.approx(expected.low), pytest.approx(expected.high))
    # a unit whose questions differ is left out, never paired
    other = sums(b)
    other["conv-0"] = [other["conv-0"][0], other["conv-0"][1], "another question set"]
    assert paired_from_units(sums(a), other)["left_out"] == ["conv-0"]


def test_reference_and_marks():
    def entry(judge: str, length: float | None, questions: str = "1540 questions") -> dict:
        contract = {"judge": judge, "questions": questions}
        return {"contract": contract, "answer_length_mean": length, "context_tokens": None}

    entries = [entry("mem0", 4.0), entry("mem0", 5.0), entry("other", 11.0, "152 questions")]
    ref = reference(entries)
    assert ref["judge"] == "mem0" and ref["answer_length"] == 5.0 and ref["context_tokens"] is None
    assert marks(entries[0], ref) == []
    assert marks(entries[2], ref) == ["judge", "answer_length", "questions"]
    assert marks(entry("mem0", None), ref) == ["answer_length"]  # unknown where the others are known


def test_bad_inputs_are_one_line(tmp_path, capsys):
    (tmp_path / "file").write_text("x")
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["board", str(empty), "--out", str(tmp_path / "site")]) == 2
    err = capsys.readouterr().err
    assert "no pack under" in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert main(["board", str(empty), "--out", str(tmp_path / "file")]) == 2
    assert "is a file; pass a folder" in capsys.readouterr().err


def test_benchmark_tables_are_one_per_benchmark(site):
    tables = benchmark_tables(_board(site).rows)
    assert [t["benchmark"] for t in tables] == ["locomo"]
    assert all("context_tokens" not in t["filters"] and "answer_length" not in t["filters"] for t in tables)
