"""Text from outside (a dataset, a model's reply, a server's message) printed on a terminal, written
to a CSV a spreadsheet opens, or quoted in TRACE.md: neutralised there, exact everywhere else (issue 29)."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import FIXTURES, scripted_reader

from memorybench.cli import main
from memorybench.compare.aggregate import _spreadsheet_safe, aggregate
from memorybench.errors import error_line, printable
from memorybench.pack.verify import failures, verify_pack
from memorybench.score.rows import csv_cell, csv_text
from memorybench.testing.scripted_server import Reply, ScriptedOpenAIServer

HOSTILE = '=HYPERLINK("http://evil.example","x")\x1b]0;pwned\x07\x1b[2J</script>\u202e\x9b31m'


def test_printable_escapes_every_control_but_structure():
    out = printable("a\x1b[31mb\x07c\rd\x9be\u202ef\x7fg\nh\ti")
    assert out == "a\\u001b[31mb\\u0007c\\u000dd\\u009be\\u202ef\\u007fg\nh\ti"
    assert printable("x\ny", newlines=False) == "x\\u000ay"
    assert json.loads(printable(json.dumps({"t": "\x9b\u202e"}, ensure_ascii=False))) == {"t": "\x9b\u202e"}


def test_an_error_line_carries_no_escape():
    line = error_line("HTTP 400: bad model \x1b]0;pwned\x07 \x9b2J")
    assert "\x1b" not in line and "\x07" not in line and "\x9b" not in line and "\\u001b]0;pwned" in line


@pytest.mark.parametrize("text", ["=1+1", "+1", "-5 degrees", "@SUM(A1)", "\t=x", "'=x", "''+x", "plain", "", "a=b"])
def test_csv_cells_are_guarded_and_read_back_exactly(text):
    cell = csv_cell(text)
    assert cell[:1] not in ("=", "+", "-", "@", "\t", "\r") or cell == ""
    assert csv_text(cell) == text
    assert _spreadsheet_safe(pa.table({"c": [text]})).column("c").to_pylist() == [cell]


@pytest.fixture(scope="module")
def hostile_pack(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("hostile")
    with ScriptedOpenAIServer(responder=lambda body: Reply(HOSTILE)) as server:
        assert (
            main(
                [
                    "qa",
                    *scripted_reader(server.base_url),
                    f"dataset.path={FIXTURES / 'mini_locomo.json'}",
                    f"paths.packs={root / 'packs'}",
                    f"paths.cache={root / 'cache'}",
                    "name=hostile",
                    "max_questions=2",
                ]
            )
            == 0
        )
    (pack,) = (root / "packs" / "hostile" / "runs").iterdir()
    return pack


def test_show_prints_no_control_character(hostile_pack, capsys):
    qid = json.loads((hostile_pack / "predictions.jsonl").read_text("utf-8").splitlines()[0])["question_id"]
    for extra in ([], ["--json"]):
        assert main(["show", str(hostile_pack), qid, *extra]) == 0
        out = capsys.readouterr().out
        assert not any(c in out for c in "\x1b\x07\x9b\u202e") and "]0;pwned" in out
        if extra:
            assert json.loads(out)["walk"]["prediction"] == HOSTILE.strip()  # JSON keeps the exact text


def test_predictions_csv_is_guarded_and_the_pack_still_verifies(hostile_pack, tmp_path):
    rows = list(csv.DictReader(io.StringIO((hostile_pack / "predictions.csv").read_text("utf-8"), newline="")))
    assert rows[0]["prediction"] == "'" + HOSTILE.strip()
    assert json.loads((hostile_pack / "predictions.jsonl").read_text("utf-8").splitlines()[0])["prediction"] == HOSTILE.strip()
    assert failures(verify_pack(hostile_pack)) == []  # rescore writes the same guarded CSV
    result = aggregate([hostile_pack.parents[2]], tmp_path)
    assert pq.read_table(result.examples).column("prediction").to_pylist()[0] == HOSTILE.strip()  # parquet: exact


def test_trace_md_quotes_the_reply_in_a_fenced_block(hostile_pack):
    trace = (hostile_pack / "TRACE.md").read_text("utf-8")
    raw = next(line for line in trace.splitlines() if line.startswith("- Raw reply"))
    assert "</script>" not in raw and "(quoted below)" in raw
    fenced = trace.split("```text\n", 1)[1].split("\n```", 1)[0]
    assert fenced.startswith("=HYPERLINK(") and "</script>" in fenced and "\x1b" not in fenced
