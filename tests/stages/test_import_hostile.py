"""Hostile released files: `memorybench import` refuses or bounds them with one line, never a traceback or a hang."""

from __future__ import annotations

import json
import math
import os
import threading
from pathlib import Path

import pytest
from conftest import PINS

from memorybench.answer.imported import REPRODUCTION, ROWS
from memorybench.errors import UserError
from memorybench.pack.verify import failures, verify_pack
from memorybench.stages.import_results import import_results
from memorybench.stages.importers import _base

MEMOBASE = PINS / "peers" / "memobase_eval_0710_3000.json"


def _edited(tmp_path: Path, edit) -> Path:
    data = json.loads(MEMOBASE.read_text("utf-8"))
    edit(data)
    path = tmp_path / "edited.json"
    path.write_text(json.dumps(data), "utf-8")  # json.dumps writes NaN and Infinity as the released files would
    return path


def _refused(path: Path, match: str) -> str:
    with pytest.raises(UserError, match=match) as error:
        import_results([path], "mem0_evals", packs=path.parent / "packs")
    assert "\n" not in error.value.message
    return error.value.message


def test_deep_nesting_is_one_line(tmp_path):
    path = tmp_path / "deep.json"
    path.write_text("[" * 200_000 + "]" * 200_000, "utf-8")
    _refused(path, "nests arrays and objects more than")
    path.write_text('{"0": ' + "[" * 100 + "]" * 100 + "}", "utf-8")  # under the parser's limit, over ours
    _refused(path, "nests arrays and objects more than")


def test_a_link_to_a_device_is_refused_unread(tmp_path):
    link = tmp_path / "zero.json"
    link.symlink_to("/dev/zero")
    _refused(link, r"zero.json is a symbolic link \(to /dev/zero\)")


def test_a_link_as_the_file_is_refused_naming_it_and_the_fix(tmp_path):
    """A downloaded release may hold `results.json -> ~/.config/.../credentials.json`: its content
    would land in a pack meant to be shared. The file itself must not be a link; the folders
    above it may be (they are the user's own layout)."""
    real = tmp_path / "real" / "memobase.json"
    real.parent.mkdir()
    real.write_bytes(MEMOBASE.read_bytes())
    link = tmp_path / "release" / "results.json"
    link.parent.mkdir()
    link.symlink_to(real)
    message = _refused(
        link, r"released file .*release/results.json is a symbolic link \(to .*real/memobase.json\); .* pass the real file's path"
    )
    assert MEMOBASE.read_text("utf-8")[:40] not in message
    assert not (tmp_path / "release" / "packs").exists()  # nothing was written
    linked_folder = tmp_path / "linked"
    linked_folder.symlink_to(real.parent, target_is_directory=True)
    assert import_results([linked_folder / "memobase.json"], "mem0_evals", packs=tmp_path / "packs").created


def test_a_fifo_is_refused_without_waiting(tmp_path):
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    out: list[BaseException] = []

    def run():
        try:
            import_results([fifo], "mem0_evals", packs=tmp_path / "packs")
        except BaseException as e:  # noqa: BLE001 - handed to the test's thread
            out.append(e)

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(10)
    if worker.is_alive():  # unblock the reader so the thread ends, then fail
        with open(fifo, "wb", buffering=0) as w:
            w.write(b"[]")
        pytest.fail("import waited on a FIFO")
    assert isinstance(out[0], UserError) and "not a regular file" in out[0].message


def test_a_file_over_the_bound_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(_base, "MAX_RELEASED_BYTES", 1024)
    _refused(MEMOBASE, "is larger than")


@pytest.mark.parametrize("value", [math.inf, -math.inf, math.nan, 1e400])
def test_a_category_of_infinity_or_nan_is_one_line(tmp_path, value):
    def edit(data):
        data["0"][0]["category"] = value

    _refused(_edited(tmp_path, edit), "has category")


def test_nan_scores_and_huge_answers_make_a_strict_bounded_pack(tmp_path, capsys):
    def edit(data):
        data["0"][0]["f1_score"] = math.nan
        data["0"][1]["bleu_score"] = math.inf
        data["0"][2]["response"] = "=" * 50_000

    result = import_results([_edited(tmp_path, edit)], "mem0_evals", packs=tmp_path / "packs")

    def strict(name):
        raise ValueError(f"{name} in a pack file")

    for name in (REPRODUCTION, ROWS):
        for line in (
            (result.pack_root / name).read_text("utf-8").splitlines()
            if name == ROWS
            else [(result.pack_root / name).read_text("utf-8")]
        ):
            json.loads(line, parse_constant=strict)
    notes = " ".join(result.reproduction.notes)
    assert "2 rows hold NaN or Infinity, kept as null" in notes and "0[0] (mem0_f1)" in notes and "0[1] (mem0_bleu1)" in notes
    assert "1 answers longer than 10,000 characters" in notes and "0[2] of 50,000 characters" in notes
    predictions = (result.pack_root / "predictions.jsonl").read_text("utf-8")
    assert "=" * 10_000 in predictions and "=" * 10_001 not in predictions
    assert failures(verify_pack(result.pack_root)) == []
