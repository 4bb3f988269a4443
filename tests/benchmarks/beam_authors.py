"""The BEAM authors' own scoring functions, run from the pinned files for the tests.

compute_metrics.py cannot be imported here: it imports rouge_score, json_repair and
sentence_transformers at the top, calls `nltk.download` and star-imports src.llm, which reads
the authors' llms_config.json and builds three API clients. So its functions are taken out of
the pinned file by `ast` and defined, unchanged, in a namespace that holds what they use:
scipy's real `kendalltau`, `json`, `re`, the typing names, and the prompt strings of the pinned
src/prompts.py (a file of string assignments only, run whole). The judge is a stub `model` whose
`invoke` answers from stored replies and records every request; `repair_json` raises (no test
reply needs it). report_results.py's `report_llms_accuracies` runs the same way with real `os`
and `json` and a `pd` stand-in that keeps the table instead of writing an .xlsx (openpyxl is
not installed).

With `keep_half=True` the functions see `int` as `float`: the official code with the judge's
0.5 kept, the beam_paper profile by definition.
"""

from __future__ import annotations

import ast
import builtins
import json
import re
from pathlib import Path
from typing import Any, List, Tuple  # noqa: UP035 - the authors' annotations name them

from conftest import PINS
from scipy.stats import kendalltau

ROOT = PINS / "beam"
COMPUTE_METRICS = ROOT / "src/evaluation/compute_metrics.py"
REPORT_RESULTS = ROOT / "src/evaluation/report_results.py"
PROMPTS = ROOT / "src/prompts.py"


def prompt_strings() -> dict[str, str]:
    """src/prompts.py run as it is (it only assigns strings)."""
    namespace: dict[str, Any] = {}
    exec(compile(PROMPTS.read_text("utf-8"), str(PROMPTS), "exec"), namespace)  # noqa: S102 - a pinned file of literals
    return {k: v for k, v in namespace.items() if isinstance(v, str) and not k.startswith("__")}


def _functions(path: Path, names: tuple[str, ...] | None = None) -> ast.Module:
    tree = ast.parse(path.read_text("utf-8"), filename=str(path))
    body = [n for n in tree.body if isinstance(n, ast.FunctionDef) and (names is None or n.name in names)]
    return ast.Module(body=body, type_ignores=[])


def _no_repair(text: str) -> str:
    raise AssertionError(f"a stored reply needed json_repair: {text[:80]!r}")


class Reply:
    def __init__(self, content: str) -> None:
        self.content = content


class StubJudge:
    """`model.invoke(prompt or messages)` answered from stored replies, keyed by the request's
    text (a str prompt) or by the user message's text (a list of messages), else by a default
    for that kind of request; every request is kept."""

    def __init__(self, replies: dict[str, str] | None = None, *, prompt: str | None = None, messages: str | None = None) -> None:
        self.replies = replies or {}
        self.defaults = {str: prompt, list: messages}
        self.requests: list[Any] = []

    def invoke(self, request: Any) -> Reply:
        self.requests.append(request)
        key = request if isinstance(request, str) else request[-1]["content"]
        if key in self.replies:
            return Reply(self.replies[key])
        default = self.defaults[type(request)]
        if default is None:
            raise AssertionError(f"no stored reply for {key[:120]!r}")
        return Reply(default)


def compute_metrics(*, keep_half: bool = False) -> dict[str, Any]:
    """compute_metrics.py's functions (all but the embedding ones' models), defined unchanged."""
    namespace: dict[str, Any] = {
        "json": json,
        "re": re,
        "kendalltau": kendalltau,
        "List": List,
        "Tuple": Tuple,
        "repair_json": _no_repair,
        **prompt_strings(),
    }
    if keep_half:
        namespace["__builtins__"] = {**vars(builtins), "int": float}
    exec(compile(_functions(COMPUTE_METRICS), str(COMPUTE_METRICS), "exec"), namespace)  # noqa: S102 - pinned, sha256-checked
    return namespace


class _Frame:
    """pandas.DataFrame as report_llms_accuracies uses it: kept, never written."""

    made: list[_Frame] = []

    def __init__(self, rows: list[list[float]], columns: list[str]) -> None:
        self.rows, self.columns, self.index = rows, columns, None
        _Frame.made.append(self)

    def insert(self, position: int, name: str, values: list[str]) -> None:
        self.index = list(values)

    def to_excel(self, path: str, index: bool = False) -> None:
        self.path = path


class _Pandas:
    DataFrame = _Frame


def report_results(evaluation_directory: Path, row_names: list[str]) -> tuple[list[str], list[list[float]], list[str]]:
    """report_llms_accuracies run on a folder of the authors' evaluation files: (row names,
    the table's rows, its columns)."""
    import os

    namespace: dict[str, Any] = {"json": json, "os": os, "pd": _Pandas}
    exec(compile(_functions(REPORT_RESULTS, ("report_llms_accuracies",)), str(REPORT_RESULTS), "exec"), namespace)  # noqa: S102
    _Frame.made.clear()
    namespace["report_llms_accuracies"](
        evaluation_directory=str(evaluation_directory), row_names=row_names, output_filename="report.xlsx"
    )
    (frame,) = _Frame.made
    return frame.index, frame.rows, frame.columns
