"""A dataset that is a folder (memorybench.data.folders): hashed as `sha256sum` lists it, its pin
verified as a whole, fetched with the other pins, and a local copy read and recorded like a file's."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from memorybench.data import pins
from memorybench.data.folders import FolderPin, folder_files, folder_manifest, folder_sha256
from memorybench.data.pins import Pin
from memorybench.errors import DataError, UserError
from memorybench.hashing import sha256_bytes, sha256_text

FILES = {"1/chat.json": b'[{"a": 1}]', "1/q/questions.json": b"{}", "10/chat.json": b"[]", "2/chat.json": b"[2]"}


def make(folder, files=FILES):
    for rel, data in files.items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_bytes(data)
    return folder


def pin_of(files=FILES) -> FolderPin:
    members = tuple(
        Pin(
            relpath=f"bench/tier/{rel}",
            sha256=sha256_bytes(data),
            repository="o/r",
            commit="c" * 40,
            source_path=f"data/tier/{rel}",
            licence="MIT",
        )
        for rel, data in files.items()
    )
    return FolderPin(
        relpath="bench/tier", repository="o/r", commit="c" * 40, source_path="data/tier", licence="MIT", members=members
    )


def test_a_folder_hashes_as_sha256sum_lists_it(tmp_path):
    folder = make(tmp_path / "tier")
    manifest = folder_manifest(folder)
    assert manifest == "".join(f"{sha256_bytes(FILES[rel])}  {rel}\n" for rel in sorted(FILES))
    assert folder_sha256(folder) == sha256_text(manifest) == pin_of().sha256  # a copy hashes to its pin's number
    # what the module's docstring says to type in a shell gives the same lines
    shell = subprocess.run(
        "find -L . -type f -printf '%P\\n' | LC_ALL=C sort | xargs -d '\\n' sha256sum",
        shell=True,
        cwd=folder,
        capture_output=True,
        text=True,
        check=True,
    )
    assert shell.stdout == manifest
    (folder / "2" / "chat.json").write_bytes(b"[3]")  # a changed file changes it
    assert folder_sha256(folder) != pin_of().sha256
    (folder / "2" / "chat.json").write_bytes(b"[2]")
    (folder / "notes.txt").write_text("mine")  # so does a file no loader reads: every file counts
    assert folder_sha256(folder) != pin_of().sha256


def test_a_folder_that_is_not_one_is_one_line(tmp_path):
    with pytest.raises(DataError, match="does not exist; run `memorybench fetch` or point it at the tier"):
        folder_files(tmp_path / "none", expected="the tier")
    (tmp_path / "file.json").write_text("[]")
    with pytest.raises(DataError, match="is a file, not a folder; this dataset is a folder: point it at the tier"):
        folder_files(tmp_path / "file.json", expected="the tier")
    folder = make(tmp_path / "tier")
    os.mkfifo(folder / "1" / "pipe")  # read, it would block forever
    with pytest.raises(DataError, match=r"1/pipe inside dataset.path is a FIFO, not a regular file"):
        folder_files(folder)
    (folder / "1" / "pipe").unlink()
    with pytest.raises(DataError, match="holds more than 10 bytes"):
        folder_files(folder, max_bytes=10)
    os.symlink(folder, folder / "1" / "loop")  # a link back up is walked once
    assert sorted(folder_files(folder)) == sorted(FILES)


def test_a_pinned_folder_is_verified_as_a_whole(tmp_path):
    pin = pin_of()
    root = tmp_path / "pins"
    with pytest.raises(UserError, match="pinned folder .*bench/tier is missing; run `memorybench fetch`"):
        pin.verify(root)
    make(root / "bench" / "tier")
    assert pin.verify(root) == root / "bench" / "tier"
    (root / "bench" / "tier" / "3").mkdir()
    (root / "bench" / "tier" / "3" / "chat.json").write_text("[]")  # a file the pin does not list would be read as data
    with pytest.raises(UserError, match=r"holds 3/chat.json, which its pin does not list; remove it"):
        pin.verify(root)
    shutil.rmtree(root / "bench" / "tier" / "3")
    (root / "bench" / "tier" / "10" / "chat.json").write_bytes(b"[0]")
    with pytest.raises(UserError) as altered:
        pin.verify(root)
    assert sha256_bytes(b"[]") in str(altered.value) and sha256_bytes(b"[0]") in str(altered.value)
    (root / "bench" / "tier" / "10" / "chat.json").unlink()
    with pytest.raises(UserError, match="10/chat.json is missing; run `memorybench fetch`"):
        pin.verify(root)


def test_a_member_outside_its_folder_is_refused():
    member = Pin(
        relpath="elsewhere/x.json", sha256="0" * 64, repository="o/r", commit="c", source_path="data/tier/x.json", licence="MIT"
    )
    with pytest.raises(ValueError, match="not inside the pinned folder"):
        FolderPin(relpath="bench/tier", repository="o/r", commit="c", source_path="data/tier", licence="MIT", members=(member,))


def test_fetch_downloads_a_folders_members_and_verifies_it_whole(tmp_path, monkeypatch):
    pin = pin_of()
    by_url = {m.url: FILES[m.relpath.removeprefix("bench/tier/")] for m in pin.members}
    fetched: list[str] = []
    monkeypatch.setattr(pins, "ALL_PINS", ())
    monkeypatch.setattr(pins, "_download", lambda url: fetched.append(url) or by_url[url])
    lines: list[str] = []
    root = pins.fetch_pins(tmp_path / "pins", log=lines.append, folders=(pin,))
    assert sorted(fetched) == sorted(by_url) and folder_sha256(root / "bench" / "tier") == pin.sha256
    assert lines[-1].startswith("ok       bench/tier/ (4 files, verified as a whole")
    (root / "bench" / "tier" / "stray.json").write_text("{}")
    with pytest.raises(UserError, match="holds stray.json, which its pin does not list"):
        pins.fetch_pins(tmp_path / "pins", log=lines.append, folders=(pin,))
