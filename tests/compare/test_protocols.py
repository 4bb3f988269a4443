"""Runs whose question protocols differ are marked where they are compared: a
`reader.prompt=locomo` run (LoCoMo's own prompts, category 5 as a two-way choice) beside a
`qa_v1` run, both over real HTTP on the scripted server, in `report` and in `compare`."""

from __future__ import annotations

import csv
import re
from pathlib import Path

import pytest
import yaml
from conftest import FIXTURES, scripted_reader

from memorybench.cli import main
from memorybench.compare.compare_command import format_compare
from memorybench.compare.conditions import paired_difference
from memorybench.compare.report import run_report
from memorybench.testing.scripted_server import Reply, ScriptedOpenAIServer

MINI = FIXTURES / "mini_locomo.json"


def _responder(body: dict) -> Reply:
    """Plumbing: a category-5 choice is answered by its letter (a), anything else by one word."""
    content = body["messages"][-1]["content"]
    return Reply("a" if re.search(r"Select the correct answer: \(a\)", content) else "pottery")


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("protocols")
    made = {}
    with ScriptedOpenAIServer(responder=_responder) as server:
        for name, extra in {"open": [], "locomo": ["reader.prompt=locomo"]}.items():
            assert (
                main(
                    [
                        "qa",
                        *scripted_reader(server.base_url),
                        f"dataset.path={MINI}",
                        f"paths.packs={root / 'packs'}",
                        f"paths.cache={root / 'cache'}",
                        f"name={name}",
                        "memory=full_context",
                        *extra,
                    ]
                )
                == 0
            )
            (made[name],) = (root / "packs" / name / "runs").iterdir()
    made["root"] = root / "packs"
    return made


def test_a_report_marks_the_protocols_as_different(runs, tmp_path):
    design = tmp_path / "design.yaml"
    design.write_text(
        yaml.safe_dump(
            {
                "name": "protocols",
                "packs": [str(runs["root"])],
                "conditions": ["experiment"],
                "tables": ["scores_by_category", "paired_differences"],
                "figures": [],
            }
        )
    )
    report = run_report(design, tmp_path / "out")
    text = report.markdown.read_text("utf-8")
    assert "The question protocols differ (locomo: locomo; open: open-ended)" in text
    with report.table_files["paired_differences"].open(newline="") as f:
        rows = list(csv.DictReader(f))
    assert rows and all(r["protocols"] == "differ: locomo; open-ended" for r in rows)


def test_compare_marks_the_protocols_as_different(runs):
    result = paired_difference([runs["open"]], [runs["locomo"]])
    assert result["protocols"] == {"a": ["open-ended"], "b": ["locomo"]} and result["protocols_differ"] is True
    assert "question protocols differ (A open-ended; B locomo)" in format_compare({"difference": result})
    same = paired_difference([runs["open"]], [runs["open"]])
    assert same["protocols_differ"] is False
