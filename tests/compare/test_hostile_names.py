"""A pack from someone else names things (its run id, experiment, models, file names, judge
ids): `compare`, `report` and `verify` print those names with every control character
escaped (`errors.printable`), so a name such as "\\x1b]0;pwned\\x07" cannot retitle the
terminal's window, and report's Markdown and figures carry none either (issue 29)."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest
from conftest import cli_in_process
from tracking.pack_factory import make_packs

from memorybench.pack.verify.findings import CODES

EVIL = "\x1b]0;pwned\x07"
RAW = ("\x1b", "\x07")


def _clean(text: str) -> bool:
    return not any(c in text for c in RAW)


@pytest.fixture(scope="module")
def packs(tmp_path_factory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("hostile-names")
    theirs, ours = make_packs(root)
    meta = json.loads((theirs / "run_meta.json").read_text("utf-8"))
    meta["name"] = f"their-experiment{EVIL}"
    meta["run_id"] += EVIL
    (theirs / "run_meta.json").write_text(json.dumps(meta, indent=2), "utf-8")
    config = (theirs / "config.resolved.yaml").read_text("utf-8")
    assert "model: scripted\n" in config
    (theirs / "config.resolved.yaml").write_text(
        config.replace("model: scripted\n", 'model: "scripted\\e]0;pwned\\a"\n', 1), "utf-8"
    )
    (theirs / "memory" / "dumps" / f"x{EVIL}.txt").write_text("added", "utf-8")
    return theirs, ours


def test_compare_prints_no_control_character(packs):
    theirs, ours = packs
    for args in ([str(theirs)], [str(ours), "--vs", str(theirs)], [str(theirs), "--json", "-"]):
        out = cli_in_process(["compare", *args])
        assert out.returncode == 0, out.stderr
        assert _clean(out.stdout) and _clean(out.stderr)
        assert "scripted\\u001b]0;pwned\\u0007" in out.stdout  # shown, escaped
    as_json = json.loads(cli_in_process(["compare", str(theirs), "--json", "-"]).stdout)
    assert as_json["summary"]["run_ids"] == [theirs.name + EVIL]  # the JSON, read back, holds the exact name


def test_verify_prints_no_control_character(packs):
    theirs, _ = packs
    for extra in ([], ["--json"]):
        out = cli_in_process(["verify", str(theirs), *extra])
        assert out.returncode == 1  # the pack was altered: verify says so
        assert _clean(out.stdout) and _clean(out.stderr)
        assert "x\\u001b]0;pwned\\u0007.txt" in out.stdout
    lines = cli_in_process(["verify", str(theirs)]).stdout.splitlines()
    assert lines and all(line.removeprefix("warning ").split(" ", 1)[0] in CODES for line in lines)  # one finding, one line


def test_report_prints_writes_and_draws_no_control_character(packs, tmp_path):
    theirs, _ = packs
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = cli_in_process(
            [
                "report",
                "--packs",
                str(theirs.parent),
                "--conditions",
                "choice.memory",
                "cfg.reader.model",
                "--out",
                str(tmp_path / "rep"),
            ]
        )
    assert out.returncode == 0, out.stderr
    assert _clean(out.stdout) and _clean(out.stderr)
    assert not [w for w in caught if not _clean(str(w.message))]  # matplotlib names a missing glyph raw
    markdown = (tmp_path / "rep" / "report.md").read_text("utf-8")
    assert _clean(markdown) and "scripted\\u001b]0;pwned\\u0007" in markdown
