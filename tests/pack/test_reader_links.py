"""A pack received from someone else may hold a link (or a FIFO) where a file should be: every
reader of a pack goes through PackReader, which reads neither through a link nor from anything
but a regular file, with one line naming the file and the fix (issue 29)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from conftest import FIXTURES, scripted_reader
from tracking.pack_factory import lookup_responder

from memorybench.cli import main
from memorybench.pack.reader import PackError, PackReader
from memorybench.testing.scripted_server import ScriptedOpenAIServer

GOLDEN = Path(__file__).resolve().parent / "golden_mini_pack"
HOST = "HOST-FILE-CONTENT-never-shown"


@pytest.fixture
def linked(tmp_path) -> Path:
    host = tmp_path / "host.txt"
    host.write_text(HOST + "\n", "utf-8")
    pack = tmp_path / "packs" / "mini" / "runs" / "golden"
    shutil.copytree(GOLDEN, pack)
    dump = pack / "memory" / "dumps" / "mini-1.txt"
    dump.unlink()
    dump.symlink_to(host)
    return pack


def test_the_reader_refuses_a_link_to_a_file(linked):
    reader = PackReader.open(linked)
    with pytest.raises(PackError, match=r"memory/dumps/mini-1.txt is a link; .* remove the link") as error:
        reader.read_text("memory/dumps/mini-1.txt")
    assert HOST not in error.value.message and "\n" not in error.value.message
    assert reader.read_text("memory/dumps/mini-2.txt")  # the pack's own files read as before


def test_the_reader_refuses_a_linked_folder_and_a_fifo(linked, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "manifest.jsonl").write_text(HOST, "utf-8")
    shutil.rmtree(linked / "reader")
    (linked / "reader").symlink_to(outside, target_is_directory=True)
    (outside / "traces.jsonl").write_text(HOST, "utf-8")
    reader = PackReader.open(linked)
    with pytest.raises(PackError, match=r"reader is a link"):
        reader.read_text("reader/traces.jsonl")
    fifo = linked / "estimate.json"
    fifo.unlink()
    os.mkfifo(fifo)
    with pytest.raises(PackError, match="not a regular file"):
        reader.read_bytes("estimate.json")  # refused at once, never waiting for a writer


@pytest.fixture
def run_pack(tmp_path) -> Path:
    """A finished qa pack (the golden pack's files are normalised, not readable as records)."""
    with ScriptedOpenAIServer(responder=lookup_responder) as reader:
        assert (
            main(
                [
                    "qa",
                    *scripted_reader(reader.base_url),
                    f"dataset.path={FIXTURES / 'mini_locomo.json'}",
                    f"paths.packs={tmp_path / 'packs'}",
                    f"paths.cache={tmp_path / 'cache'}",
                    "name=links",
                    "max_questions=2",
                ]
            )
            == 0
        )
    (pack,) = (tmp_path / "packs" / "links" / "runs").iterdir()
    return pack


def test_show_and_view_do_not_print_or_inline_a_linked_file(run_pack, tmp_path, capsys):
    host = tmp_path / "host.txt"
    host.write_text(HOST + "\n", "utf-8")
    (dump,) = sorted((run_pack / "memory" / "dumps").iterdir())[:1]
    dump.unlink()
    dump.symlink_to(host)
    linked = run_pack
    question = (run_pack / "predictions.jsonl").read_text("utf-8").split('"question_id":"', 1)[1].split('"', 1)[0]
    capsys.readouterr()
    code = main(["show", str(linked), question])
    out, err = capsys.readouterr()
    assert HOST not in out + err
    assert code != 0 and "is a link" in err and "Traceback" not in err
    html = tmp_path / "view.html"
    code = main(["view", str(linked), "--out", str(html)])
    out, err = capsys.readouterr()
    assert HOST not in out + err
    assert not html.exists() or HOST not in html.read_text("utf-8")
    assert code != 0 and "is a link" in err
