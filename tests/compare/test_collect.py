"""`collect-full`: one collected pack with repeats stored once; restoring gives the originals byte for byte."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from tracking.pack_factory import add_autorater, make_packs, unfinished_copy

from memorybench.compare.collect import collect_full, collect_main, restore_collected
from memorybench.errors import UserError


@pytest.fixture(scope="module")
def packs_root(tmp_path_factory):
    root = tmp_path_factory.mktemp("collect")
    full, summaries = make_packs(root)
    add_autorater(full)
    # a second run of the same memory (another run id): identical memory dumps and prompts
    twin = full.parent / "full_context-reader-scripted-000000000001"
    shutil.copytree(full, twin)
    meta = json.loads((twin / "run_meta.json").read_text())
    meta["run_id"] = twin.name
    (twin / "run_meta.json").write_text(json.dumps(meta, indent=2) + "\n")
    unfinished_copy(summaries)
    # long strings inline in JSONL, sharing a long prefix, with escapes a byte-exact copy must keep
    prefix = "".join(f"Instruction line {i}: answer from the memory only, cite the session.\n" for i in range(60))
    lines = []
    for i in range(12):
        task = prefix + f'Question {i}: what did "Ana" start? \u00e9\u4e2d \\n not a newline\n' + "tail " * (i * 40)
        lines.append(json.dumps({"schema": "agent_event.v1", "i": i, "task": task}, ensure_ascii=i % 2 == 0))
    lines.append('{"broken": "not closed, \\" still string')
    (full / "agent").mkdir(exist_ok=True)
    (full / "agent" / "events.jsonl").write_text("\n".join(lines) + "\n", "utf-8")
    return root / "packs"


def _files(pack: Path) -> dict[str, bytes]:
    return {p.relative_to(pack).as_posix(): p.read_bytes() for p in sorted(pack.rglob("*")) if p.is_file()}


def test_restoring_gives_every_original_byte_for_byte(packs_root, tmp_path):
    result = collect_full([packs_root], tmp_path)
    assert len(result.packs) == 3 and len(result.unfinished) == 1
    restored = restore_collected(result.out_dir, tmp_path / "restored")
    assert len(restored) == 3
    for pack in result.packs:
        target = tmp_path / "restored" / pack.relative_to(packs_root)
        assert target in restored
        assert _files(target) == _files(pack), pack.name


def test_repeats_are_stored_once(packs_root, tmp_path):
    result = collect_full([packs_root], tmp_path)
    pin = json.loads(result.pin.read_text())
    assert pin["schema"] == "collected_pin.v1" and "how_to_restore" in pin
    blobs = [p for p in (result.out_dir / "blobs").rglob("*") if p.is_file()]
    assert len(blobs) == result.blobs
    full = next(p for p in pin["packs"] if "agent/events.jsonl" in p["files"])
    twin = next(p for p in pin["packs"] if p["path"].endswith("000000000001"))
    # identical files across packs share one blob (memory dumps, prompts, traces)
    for relpath in ("memory/dumps/mini-1.txt", "prompts/readers/qa_v1.txt", "reader/traces.jsonl"):
        assert full["files"][relpath]["blob"] == twin["files"][relpath]["blob"]
    assert full["files"]["run_meta.json"] != twin["files"]["run_meta.json"]
    # the long task strings: a recipe, and their shared prefix stored once
    events = (packs_root / full["path"] / "agent" / "events.jsonl").stat().st_size
    recipe = full["files"]["agent/events.jsonl"]["recipe"]
    stored = json.loads((result.out_dir / "blobs" / recipe[:2] / recipe).read_text())
    chunk_shas = [sha for _, chunks in stored["holes"] for sha in chunks]
    assert len(stored["holes"]) == 12 and len(set(chunk_shas)) < len(chunk_shas)
    chunk_bytes = sum((result.out_dir / "blobs" / s[:2] / s).stat().st_size for s in set(chunk_shas))
    prefix = 60 * len("Instruction line 00: answer from the memory only, cite the session.\\n")
    assert chunk_bytes < events - 8 * prefix  # 12 copies of the prefix, at most about 4 stored
    assert result.stored_bytes < result.original_bytes * 0.75


def test_an_altered_blob_is_caught(packs_root, tmp_path):
    result = collect_full([packs_root], tmp_path)
    pin = json.loads(result.pin.read_text())
    sha = pin["packs"][0]["files"]["predictions.jsonl"]["blob"]
    blob = result.out_dir / "blobs" / sha[:2] / sha
    blob.write_bytes(blob.read_bytes().replace(b"mini", b"MINI", 1))
    with pytest.raises(UserError, match="altered"):
        restore_collected(result.out_dir, tmp_path / "restored")


def test_collect_main_round_trip(packs_root, tmp_path, capsys):
    assert collect_main([str(packs_root), "--out", str(tmp_path)]) == 0
    assert "3 pack(s)" in capsys.readouterr().out
    assert collect_main(["--restore", str(tmp_path / "collected_full"), "--to", str(tmp_path / "back")]) == 0
    assert "restored 3 pack(s)" in capsys.readouterr().out
    with pytest.raises(UserError, match="--to"):
        collect_main(["--restore", str(tmp_path / "collected_full")])
    with pytest.raises(UserError, match="has no REFERENCE_PIN.json"):
        restore_collected(tmp_path / "back", tmp_path / "x")
