"""Re-judge anything: AMB's Cognee file under its own labels and under a scripted judge, side by side.

Issue 44's "re-judge anything": the pinned AMB file (`--format amb_locomo`, 152 questions of
conv-26) is imported through the command line and reproduces its stated 122/152 = 0.8026 under
its own labels; `memorybench autorater` then judges the same answers again with a scripted judge
on the scripted server (CORRECT when the generated answer holds the gold answer's text, a rule
this test applies to the pack's rows on its own). The board over that pack and two own runs (the
reference judge: each judged by the two scripted judges of `board.packs`) shows both of the
file's figures in LoCoMo's table, one row per judge, each carrying the `judge` mark, and the
judge-sensitivity table holds the system under both.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
from pathlib import Path

import pytest
from board.packs import JUDGES, board_packs
from conftest import PINS

from memorybench.board.board_command import build_board
from memorybench.cli import main
from memorybench.pack.reader import PackReader
from memorybench.testing.scripted_server import Reply, ScriptedOpenAIServer

AMB = PINS / "peers" / "amb" / "locomo_cognee_rag_locomo10.json.gz"
#: PINS.md: what AMB states for this run, judged by gemini-2.5-flash-lite
STATED = (122, 152)


def _holds_gold(gold: str, generated: str) -> bool:
    """The scripted judge's rule: the generated answer holds the gold answer's text."""
    return gold.strip().lower() in generated.lower()


def _judge(body: dict) -> Reply:
    content = body["messages"][-1]["content"]
    gold, rest = content.rsplit("\nGold answer: ", 1)[1].split("\nGenerated answer: ", 1)
    generated = rest.rsplit("\n\nFirst, provide", 1)[0]
    return Reply(json.dumps({"label": "CORRECT" if _holds_gold(gold, generated) else "WRONG"}))


@pytest.fixture(scope="module")
def rejudged(tmp_path_factory) -> Path:
    packs = tmp_path_factory.mktemp("packs")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        argv = ["import", str(AMB), "--format", "amb_locomo", "--allow-partial", "--name", "amb-cognee"]
        assert main([*argv, "--packs", str(packs)]) == 0
    pack = Path(out.getvalue().rsplit("pack: ", 1)[1].strip())
    with ScriptedOpenAIServer(responder=_judge) as server:
        argv = ["autorater", str(pack), "judge=openai_compatible", f"judge.base_url={server.base_url}", "judge.model=scripted"]
        assert main([*argv, "--quiet"]) == 0
    return pack


def _data(page: Path) -> dict:
    block = re.search(r'<script type="application/json" id="mb-board">(.*?)</script>', page.read_text("utf-8"), re.S)
    assert block is not None
    return json.loads(block.group(1))


def test_amb_cognee_under_its_own_labels_and_a_scripted_judge_side_by_side(rejudged, tmp_path):
    pack = PackReader.open(rejudged)
    imported, scripted = sorted(pack.judges(), key=lambda j: not j.startswith("imported"))
    # the scripted figure, from the pack's own rows by the judge's rule
    right = sum(_holds_gold(str(p.gold), p.prediction or "") for p in pack.predictions())
    assert right == 46  # the rule over the pinned file: 46 of the 152 answers hold their gold text
    assert pack.autorater_metrics(imported).j.mean == STATED[0] / STATED[1]
    assert pack.autorater_metrics(scripted).j.mean == pytest.approx(right / STATED[1])

    own = board_packs()
    out = tmp_path / "site"
    build_board([str(own["own"]), str(own["own-hostile"]), str(rejudged)], out, views=False)
    (table,) = _data(out / "index.html")["tables"]
    entries = {e["judge_id"]: e for e in table["entries"] if e["uri"] == str(rejudged)}
    assert set(entries) == {imported, scripted}
    first, second = entries[imported], entries[scripted]
    assert (first["figure"]["value"], first["figure"]["n"], first["figure"]["units"]) == (STATED[0] / STATED[1], 152, 1)
    assert first["figure"]["value"] == pytest.approx(0.8026, abs=5e-5)
    assert second["figure"]["value"] == pytest.approx(right / STATED[1]) and second["figure"]["n"] == 152
    # one system, two judges: each named in its contract and marked against the table's reference
    # judge (one of the own runs' scripted judges), the figures never in one row
    assert first["system"] == second["system"] and first["lexical"] == second["lexical"]
    assert "imported" in first["judge"] and "model scripted" in second["judge"]
    assert any(m in table["reference"]["judge"] for m in JUDGES)
    assert "judge" in first["marks"] and "judge" in second["marks"]
    assert {f for f in first["marks"] if f not in ("judge", "calibration")} == {
        f for f in second["marks"] if f not in ("judge", "calibration")
    }
    # the benchmark's page: the judge-sensitivity table holds the system under both judges
    sensitivity = _data(out / "benchmark-locomo.html")["sensitivity"]
    (row,) = [r for r in sensitivity["rows"] if r["system"] == first["system"]]
    assert row["cells"][imported]["value"] == STATED[0] / STATED[1] and row["cells"][imported]["n"] == 152
    assert row["cells"][scripted]["value"] == pytest.approx(right / STATED[1])
