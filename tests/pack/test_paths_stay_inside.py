"""Names that become path components never put a byte outside the packs root.

An experiment name, a run id and a dataset's sample ids are folder and file names of a
pack; each is checked before anything is written, and a pack write whose path resolves
outside the pack is refused (issue: reliability under hostile input).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import FIXTURES, scripted_reader

from memorybench.cli import main
from memorybench.errors import UserError
from memorybench.names import path_component, unsafe_reason
from memorybench.pack.run_pack import RunPack

HOSTILE = ["..", ".", "", "../escape", "../../escape", "a/b", "a\\b", "/abs", "nul\x00byte", "new\nline", ".hidden", "x" * 129]


@pytest.mark.parametrize("value", HOSTILE)
def test_a_hostile_name_is_refused_in_one_line(value):
    assert unsafe_reason(value) is not None
    with pytest.raises(UserError) as info:
        path_component(value, "experiment name", "set name=NAME")
    assert "\n" not in info.value.message and "experiment name" in info.value.message


@pytest.mark.parametrize("value", ["default", "conv-26", "full_context-reader-gpt-4o-mini-0123456789ab", "a.b_c-1", "x" * 128])
def test_ordinary_names_pass(value):
    assert path_component(value, "name", "fix") == value


def qa(server, *overrides: str) -> int:
    """`memorybench qa` in this process; its exit code (a single run exits with its error's code)."""
    try:
        return main(["qa", *scripted_reader(server.base_url), "max_questions=1", *overrides])
    except SystemExit as e:
        return int(e.code or 0)


def files_under(folder: Path) -> set[Path]:
    return {p for p in folder.rglob("*")}


@pytest.mark.parametrize("name", ["../../escape", "/tmp/absolute-escape", "a/b", ".."])
def test_qa_refuses_an_experiment_name_that_leaves_the_packs_root(tmp_path, scripted_server, capsys, name):
    root = tmp_path / "deep" / "packs"
    root.mkdir(parents=True)
    before = files_under(tmp_path)
    assert (
        qa(
            scripted_server,
            f"dataset.path={FIXTURES / 'mini_locomo.json'}",
            f"paths.packs={root}",
            f"paths.cache={root / 'cache'}",
            f"name={name}",
        )
        != 0
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert any("experiment name" in line and "cannot be a folder or file name" in line for line in err), err
    assert "Traceback" not in "\n".join(err)
    assert files_under(tmp_path) == before
    assert not Path("/tmp/absolute-escape").exists()
    assert scripted_server.requests == []


def test_a_sample_id_that_is_a_path_is_a_data_error(tmp_path, scripted_server, capsys):
    data = json.loads((FIXTURES / "mini_locomo.json").read_text())
    data[0]["sample_id"] = "../../../../escaped_by_sample_id"
    hostile = tmp_path / "hostile_locomo.json"
    hostile.write_text(json.dumps(data))
    root = tmp_path / "deep" / "er" / "packs"
    assert qa(scripted_server, f"dataset.path={hostile}", f"paths.packs={root}", f"paths.cache={root / 'cache'}") != 0
    err = capsys.readouterr().err
    assert "sample_id '../../../../escaped_by_sample_id'" in err and "Traceback" not in err
    assert not list(tmp_path.rglob("escaped_by_sample_id*"))
    assert scripted_server.requests == []


def test_a_pack_write_outside_the_pack_is_refused(tmp_path):
    pack = RunPack(tmp_path / "packs" / "x" / "runs" / "r")
    pack.open()
    for relpath in ("../outside.txt", "memory/dumps/../../../../outside.txt", "/tmp/outside-absolute.txt"):
        with pytest.raises(UserError, match="outside the pack"):
            pack.write_text(relpath, "no")
    with pytest.raises(UserError, match="outside the pack"):
        pack.store_text("text", "../blob.txt")
    assert sorted(p.name for p in tmp_path.rglob("*") if p.is_file()) == []
    assert not Path("/tmp/outside-absolute.txt").exists()
    pack.write_text("memory/dumps/ok.txt", "yes")
    assert (pack.root / "memory" / "dumps" / "ok.txt").read_text() == "yes"
