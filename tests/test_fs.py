"""`memorybench.fs`: every whole-file writer goes through one helper (temp file of its own,
fsync, rename, fsync of the folder), so a crash never leaves a torn file and two writers
never share a temp name, nor write through a link someone left at one."""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path

import pytest

from memorybench import fs
from memorybench.compare.collect import PIN, PIN_SCHEMA, restore_collected
from memorybench.llm.cache import ResponseCache
from memorybench.llm.records import ChatResult
from memorybench.pack.atomic import write_atomic as pack_write_atomic
from memorybench.pack.journal import Journal
from memorybench.storage import LocalStorage

ROOT = Path(__file__).resolve().parents[1]


class Events:
    """os.fsync, os.replace and os.link as they happen, by path."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.log: list[tuple[str, str, str]] = []
        real_fsync, real_replace, real_link = os.fsync, os.replace, os.link

        def fsync(fd: int) -> None:
            self.log.append(("fsync", os.readlink(f"/proc/self/fd/{fd}"), ""))
            real_fsync(fd)

        def replace(src, dst, **kw) -> None:
            self.log.append(("replace", os.fspath(src), os.fspath(dst)))
            real_replace(src, dst, **kw)

        def link(src, dst, **kw) -> None:
            self.log.append(("link", os.fspath(src), os.fspath(dst)))
            real_link(src, dst, **kw)

        monkeypatch.setattr(os, "fsync", fsync)
        monkeypatch.setattr(os, "replace", replace)
        monkeypatch.setattr(os, "link", link)

    def assert_durable(self, target: Path) -> None:
        """`target` was put in place by a rename (or link) of a fsynced temp file of its own,
        and its folder was fsynced after."""
        target = target.resolve()
        placed = [i for i, (op, _, dst) in enumerate(self.log) if op in ("replace", "link") and dst == str(target)]
        assert placed, f"{target} was not renamed into place: {self.log}"
        i = placed[-1]
        tmp = self.log[i][1]
        assert re.fullmatch(re.escape(target.name) + r"\.\d+\.[0-9a-f]{8}\.part", Path(tmp).name), tmp
        assert ("fsync", tmp, "") in self.log[:i], f"{tmp} renamed before its bytes were fsynced: {self.log}"
        assert ("fsync", str(target.parent), "") in self.log[i + 1 :], f"{target.parent} not fsynced after the rename"


def _result() -> ChatResult:
    return ChatResult(text="Paris", model_requested="m", model_answered="m", request_sha256="ab" * 32)


def _collected(root: Path, data: bytes) -> Path:
    sha = hashlib.sha256(data).hexdigest()
    (root / "blobs" / sha[:2]).mkdir(parents=True)
    (root / "blobs" / sha[:2] / sha).write_bytes(data)
    entry = {"blob": sha, "bytes": len(data), "sha256": sha}
    pin = {"schema": PIN_SCHEMA, "packs": [{"path": "exp/runs/r1", "files": {"metrics.json": entry}}]}
    (root / PIN).write_text(json.dumps(pin))
    return root


def _retained(tmp: Path) -> Path:
    journal = Journal(tmp / "j.jsonl")
    journal.append({"i": 1})
    journal.append({"i": 2})
    journal.close()
    journal.retain(lambda row: row["i"] == 2)
    return journal.path


WRITERS = {
    "fs.write_atomic": lambda tmp: fs.write_atomic(tmp / "out" / "a.json", b"{}\n") and tmp / "out" / "a.json",
    "pack.atomic.write_atomic": lambda tmp: pack_write_atomic(tmp / "metrics.json", b"{}\n"),
    "response cache": lambda tmp: (
        ResponseCache(tmp / "cache").put("ab" * 32, _result()),
        tmp / "cache" / "ab" / f"{'ab' * 32}.json",
    )[1],
    "local storage write_bytes": lambda tmp: (LocalStorage(tmp).write_bytes("x/y.json", b"1"), tmp / "x" / "y.json")[1],
    "local storage create_only": lambda tmp: (LocalStorage(tmp).create_only("x/_SUCCESS", b"1"), tmp / "x" / "_SUCCESS")[1],
    "journal retain": _retained,
    "collect --restore": lambda tmp: restore_collected(_collected(tmp / "c", b"{}\n"), tmp / "r")[0] / "metrics.json",
}


@pytest.mark.parametrize("name", list(WRITERS))
def test_every_writer_renames_a_fsynced_temp_file_of_its_own(name, tmp_path, monkeypatch):
    events = Events(monkeypatch)
    target = WRITERS[name](tmp_path)
    events.assert_durable(target)
    assert not list(tmp_path.rglob("*.part"))


@pytest.mark.parametrize("name", ["fs.write_atomic", "pack.atomic.write_atomic", "local storage write_bytes"])
def test_a_link_left_at_a_temp_name_is_never_written_through(name, tmp_path):
    """A received pack (or a hostile neighbour) may hold `metrics.json.part -> ~/.bashrc`:
    the writer makes a temp file of its own and leaves the link's target alone."""
    outside = tmp_path / "host-file"
    outside.write_text("precious\n")
    for folder in (tmp_path / "out", tmp_path, tmp_path / "x"):
        folder.mkdir(exist_ok=True)
        for target in ("a.json", "metrics.json", "y.json"):
            for tmp_name in (f"{target}.part", f"{target}.{os.getpid()}.part"):
                (folder / tmp_name).symlink_to(outside)
    target = WRITERS[name](tmp_path)
    assert outside.read_text() == "precious\n"
    assert target.is_file() and not target.is_symlink()


def test_a_failed_write_leaves_the_old_file_and_no_temp(tmp_path, monkeypatch):
    target = tmp_path / "metrics.json"
    target.write_bytes(b"old\n")

    def full(fd):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(OSError):
        fs.write_atomic(target, b"new\n")
    assert target.read_bytes() == b"old\n" and [p.name for p in tmp_path.iterdir()] == ["metrics.json"]


def test_atomic_path_removes_its_temp_when_the_writer_fails(tmp_path):
    target = tmp_path / "runs.parquet"
    with pytest.raises(RuntimeError), fs.atomic_path(target) as tmp:
        tmp.write_bytes(b"half")
        raise RuntimeError("killed")
    assert not list(tmp_path.iterdir())


def test_create_only_is_whole_once(tmp_path):
    fs.create_only(tmp_path / "_SUCCESS", b"{}")
    with pytest.raises(FileExistsError):
        fs.create_only(tmp_path / "_SUCCESS", b"other")
    assert (tmp_path / "_SUCCESS").read_bytes() == b"{}" and [p.name for p in tmp_path.iterdir()] == ["_SUCCESS"]


def test_a_new_file_gets_the_mode_open_would_give(tmp_path):
    umask = os.umask(0o022)
    try:
        fs.write_atomic(tmp_path / "a", b"x")
    finally:
        os.umask(umask)
    assert (tmp_path / "a").stat().st_mode & 0o777 == 0o644


#: the writers that keep a temp-and-rename of their own, and why (see `memorybench/fs.py`)
OWN_RENAMES = {
    "memorybench/fs.py": "the helper itself",
    "memorybench/llm/local/models.py": "the embedded model's file, checked by sha256 before its rename",
    "memorybench/llm/local/prefill_store.py": "prefill states, no fsync on purpose (a torn one fails its checksum)",
    "memorybench/data/large_pins.py": "a resumable download: a stable .part name, renamed once its size and sha256 are right",
    "memorybench/stages/importers/_pack.py": "an imported pack built in a temp folder, renamed whole (both importers)",
    "memorybench/tracking/sqlite_store.py": "a half-built MLflow store moved aside",
}


def test_no_other_hand_made_temp_and_rename():
    found = []
    for path in sorted([*(ROOT / "memorybench").rglob("*.py"), *(ROOT / "launchers").rglob("*.py")]):
        rel = path.relative_to(ROOT).as_posix()
        if rel in OWN_RENAMES:
            continue
        for number, line in enumerate(path.read_text("utf-8").splitlines(), start=1):
            if re.search(r"os\.replace\(|os\.rename\(|\.rename\(|mkstemp\(|\+ \"\.part\"|with_(name|suffix)\(.*\.part", line):
                found.append(f"{rel}:{number}: {line.strip()}")
    assert not found, "write through memorybench.fs (write_atomic, atomic_path, create_only):\n" + "\n".join(found)
