"""README says what the code does (issue 45, item 2): its claims that name a file of the
checkout, a key of metrics.json or a command's output are checked against the code and the
golden pack, so a change that moves one cannot leave the text behind.

The bench figures themselves are machine-dependent and live in git-ignored bench/results/;
what README says of a bench script is checked for the script's existence and its name.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
README = (REPO / "README.md").read_text("utf-8")
GOLDEN = REPO / "tests" / "pack" / "golden_mini_pack"
#: the checkout's own top-level folders: a path README names under one of them is a file of the checkout
CHECKOUT = (
    "bench/",
    "conf/",
    "docs/",
    "memorybench/",
    "tests/",
    "plugins/",
    "prompts/",
    "notebooks/",
    "infra/",
    "launchers/",
    "smoke/",
    ".ci/",
)
#: not files of the checkout: an example a user makes (git-ignored), and the folders a wheel maps
#: conf/ and prompts/ to (pyproject.toml [tool.setuptools.package-dir])
USERS_OWN = ("conf/local/", "memorybench/_conf", "memorybench/_prompts")


def _backticked() -> set[str]:
    return set(re.findall(r"`([^`\s]+)`", README))


def test_every_file_of_the_checkout_readme_names_exists():
    named = sorted(
        t.rstrip(".,;:")
        for t in _backticked()
        if t.startswith(CHECKOUT) and not t.startswith(USERS_OWN) and not re.search(r"[<>*{}]|_N\b", t)
    )
    assert named, "README names no file of the checkout?"
    missing = [t for t in named if not (REPO / t.split(":")[0].split("#")[0]).exists()]
    assert missing == []


def test_every_bench_script_in_the_benchmarks_table_exists():
    scripts = set(re.findall(r"^\| `(bench/[\w./-]+\.py)", README, re.M))
    assert len(scripts) >= 10
    assert sorted(s for s in scripts if not (REPO / s).is_file()) == []


def _resolves(doc: object, path: str) -> bool:
    for part in path.split("."):
        if not isinstance(doc, dict) or part not in doc:
            return False
        doc = doc[part]
    return True


def test_the_metrics_keys_readme_names_are_the_golden_packs():
    metrics = json.loads((next(GOLDEN.rglob("metrics.json"))).read_text("utf-8"))
    named = {t for t in _backticked() if re.fullmatch(r"scores\.[\w.-]+|overall_[\d_]+|by_category|overall_covers", t)}
    assert {"scores.locomo_f1.subsets.1-4", "scores.locomo_f1.subsets.1-5"} <= named
    assert sorted(t for t in named if not _resolves(metrics, t)) == []


@pytest.mark.parametrize(
    "sentence",
    [
        r"overall (LoCoMo F1 )?(number )?includes category 5",
        r"the overall includes category 5",
    ],
)
def test_readme_never_says_the_overall_includes_category_5(sentence):
    """metrics.json has two overalls, each naming what it covers: a sentence that the overall
    includes category 5 is what README said while the code had split them."""
    assert not re.search(sentence, README, re.I)


def test_the_main_command_and_the_test_command_are_the_ones_ci_runs():
    ci = (REPO / ".ci" / "run").read_text("utf-8")
    (test_line,) = [line for line in README.splitlines() if "# the whole test suite" in line]
    command = test_line.split("#", 1)[0].strip()
    assert command in ci and "bash setup.sh" in ci


def _benchmark_rows() -> list[list[str]]:
    section = README.split("\n## Benchmarks", 1)[1].split("\n## ", 1)[0]
    table = [line for line in section.splitlines() if line.startswith("|")]
    return [[cell.strip() for cell in line.strip().strip("|").split(" | ")] for line in table[2:]]


def test_every_benchmark_figure_is_a_ratio_to_a_yardstick_or_says_why_not():
    """Issue 45: an absolute time says as much about the machine as the code. Each row of the
    benchmarks table names its yardstick (measured in the same run) and quotes a ratio to it
    ("12.3x"), or its ratio cell says why the figure cannot be one ("none: ...")."""
    rows = _benchmark_rows()
    assert len(rows) >= 10
    for row in rows:
        assert len(row) == 4, row[:1]
        bench, yardstick, ratio, _absolute = row
        assert yardstick, bench
        assert re.search(r"\d[\d.,]*x\b", ratio) or ratio.startswith("none: "), bench
