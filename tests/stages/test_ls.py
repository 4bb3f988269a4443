"""`memorybench ls`, and packs found from an experiment folder or `latest` (issue 30, item 8)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest

from memorybench.cli import main
from memorybench.errors import UserError
from memorybench.pack.reader import PackReader
from memorybench.pack.run_pack import require_pack_folder
from memorybench.pack.verify.context import pack_root

GOLDEN = Path(__file__).resolve().parents[1] / "pack" / "golden_mini_pack"


def _pack(root: Path, run_id: str, started: str, finished: bool = True) -> Path:
    pack = root / "runs" / run_id
    shutil.copytree(GOLDEN, pack)
    meta = json.loads((pack / "run_meta.json").read_text("utf-8"))
    meta.update(
        run_id=run_id, started_at=started, ended_at=started, git_commit="0" * 40, git_dirty=False, package_versions={}
    )  # the golden pack's placeholders, as a run writes them
    (pack / "run_meta.json").write_text(json.dumps(meta), "utf-8")
    if not finished:
        (pack / "_SUCCESS").unlink()
        (pack / "metrics.json").unlink()
    return pack


def test_ls_lists_each_run_with_its_scores_judges_cost_and_status(tmp_path, capsys, monkeypatch):
    older = _pack(tmp_path / "packs" / "golden", "full_context-a", "2026-01-01T10:00:00Z")
    newer = _pack(tmp_path / "packs" / "golden", "full_context-b", "2026-01-02T10:00:00Z", finished=False)
    monkeypatch.setattr(PackReader, "judges", lambda self: ["mem0-x"] if self.local_root == older else [])
    monkeypatch.setattr(PackReader, "autorater_metrics", lambda self, judge: SimpleNamespace(j=SimpleNamespace(overall=0.625)))
    assert main(["ls", str(tmp_path / "packs")]) == 0
    out = capsys.readouterr().out.splitlines()
    header = out[0].split()
    assert header == ["run_id", "experiment", "memory", "reader", "questions", "F1", "1-4", "F1", "1-5", "J", "cost", "status"]
    first, second = out[1], out[2]
    assert first.startswith("full_context-a") and second.startswith("full_context-b")  # oldest first
    assert "full_context" in first and "openai_compatible (scripted)" in first and "10/10" in first
    assert "0.0000" in first and "mem0-x=0.6250" in first and "unknown" in first and first.rstrip().endswith("done")
    assert "unfinished (10/10)" in second
    assert out[-1].startswith("newest: full_context-b; `latest` names it")
    assert newer.name in out[-1]


def test_an_experiment_folder_with_one_pack_is_that_pack_and_latest_names_the_newest(tmp_path):
    one = _pack(tmp_path / "one", "run-1", "2026-01-01T10:00:00Z")
    assert require_pack_folder(tmp_path / "one") == one.resolve()
    assert pack_root(tmp_path / "one") == one.resolve()
    assert PackReader.open(tmp_path / "one").meta().run_id == "run-1"
    _pack(tmp_path / "two", "run-old", "2026-01-01T10:00:00Z")
    new = _pack(tmp_path / "two", "run-new", "2026-02-01T10:00:00Z")
    assert PackReader.open(tmp_path / "two" / "latest").meta().run_id == "run-new"
    assert require_pack_folder(tmp_path / "two" / "latest") == new.resolve()
    with pytest.raises(UserError, match=r"holds 2 packs \(run-new, run-old\): pass one, or .*/latest"):
        require_pack_folder(tmp_path / "two")


def test_latest_alone_is_the_newest_under_the_default_packs_root(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["ls"]) == 2
    assert capsys.readouterr().err.strip() == (
        "memorybench: error: no pack under outputs/packs; run `memorybench qa ...` first, or pass a packs folder"
    )
    _pack(tmp_path / "outputs" / "packs" / "default", "run-1", "2026-01-01T10:00:00Z")
    newest = _pack(tmp_path / "outputs" / "packs" / "other", "run-2", "2026-03-01T10:00:00Z")
    assert require_pack_folder("latest") == newest.resolve()
    assert main(["ls", "latest"]) == 0
    assert "run-2" in capsys.readouterr().out


def test_a_hostile_name_in_a_pack_reaches_no_terminal_raw(tmp_path, capsys):
    pack = _pack(tmp_path / "packs" / "golden", "full_context-a", "2026-01-01T10:00:00Z")
    meta = json.loads((pack / "run_meta.json").read_text("utf-8"))
    meta["name"] = "evil\x1b]0;pwned\x07"
    (pack / "run_meta.json").write_text(json.dumps(meta), "utf-8")
    assert main(["ls", str(pack)]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out and "pwned" in out
