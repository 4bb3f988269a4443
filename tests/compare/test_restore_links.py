"""`collect-full --restore` on a collected folder from someone else (issue 29): its pin and
blobs are read through PackReader (never through a link, regular files only), and nothing is
written outside --to or through a link under it; folder copies of storage do the same."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from memorybench.compare.collect import PIN, PIN_SCHEMA, restore_collected
from memorybench.errors import UserError
from memorybench.storage import LocalStorage

HOST = b"HOST-FILE-CONTENT-never-copied\n"


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _collected(root: Path, files: dict[str, bytes], path: str = "exp/runs/r1") -> Path:
    """A collected_full folder holding `files` of one pack, each as a plain blob."""
    listing = {}
    for relpath, data in files.items():
        sha = _sha(data)
        blob = root / "blobs" / sha[:2] / sha
        blob.parent.mkdir(parents=True, exist_ok=True)
        blob.write_bytes(data)
        listing[relpath] = {"blob": sha, "bytes": len(data), "sha256": sha}
    (root / PIN).write_text(json.dumps({"schema": PIN_SCHEMA, "packs": [{"path": path, "files": listing}]}), "utf-8")
    return root


@pytest.fixture
def host(tmp_path) -> Path:
    path = tmp_path / "host.txt"
    path.write_bytes(HOST)
    return path


def test_a_blob_that_is_a_link_is_not_read_through(tmp_path, host):
    # the pin names the host file's own sha256: a restore reading through the link would "verify"
    collected = _collected(tmp_path / "c", {"metrics.json": b"{}\n", "memory/dumps/a.txt": HOST})
    blob = collected / "blobs" / _sha(HOST)[:2] / _sha(HOST)
    blob.unlink()
    blob.symlink_to(host)
    with pytest.raises(
        UserError, match=rf"blobs/{_sha(HOST)[:2]}/{_sha(HOST)} is a link; a collected folder's files are its own"
    ) as e:
        restore_collected(collected, tmp_path / "out")
    assert "\n" not in e.value.message
    assert not any(p.is_file() and p.read_bytes() == HOST for p in (tmp_path / "out").rglob("*"))


def test_a_pin_that_is_a_link_is_not_read_through(tmp_path):
    real = _collected(tmp_path / "real", {"metrics.json": b"{}\n"})
    collected = tmp_path / "c"
    collected.mkdir()
    (collected / PIN).symlink_to(real / PIN)
    (collected / "blobs").symlink_to(real / "blobs", target_is_directory=True)
    with pytest.raises(UserError, match=rf"{PIN} is a link"):
        restore_collected(collected, tmp_path / "out")


@pytest.mark.parametrize(
    "path, relpath",
    [
        ("../../escaped", "x.txt"),
        ("exp/runs/r1", "../../../../escaped.txt"),
        ("/abs", "x.txt"),
        ("exp//r1", "x.txt"),
        ("exp/runs/r1", "a/./b"),
    ],
)
def test_a_pin_path_outside_the_destination_is_refused_before_anything_is_written(tmp_path, path, relpath):
    collected = _collected(tmp_path / "c", {relpath: b"planted\n", "metrics.json": b"{}\n"}, path=path)
    out = tmp_path / "a" / "b" / "out"
    with pytest.raises(UserError, match="outside the --to folder"):
        restore_collected(collected, out)
    assert not [p for p in tmp_path.rglob("*") if p.is_file() and p.read_bytes() == b"planted\n" and "blobs" not in p.parts]
    assert not (tmp_path / "escaped").exists() and not (tmp_path / "a" / "escaped.txt").exists()


def test_a_link_under_the_destination_is_not_written_through(tmp_path):
    collected = _collected(tmp_path / "c", {"metrics.json": b"{}\n"})
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    out = tmp_path / "out"
    out.mkdir()
    (out / "exp").symlink_to(elsewhere, target_is_directory=True)
    with pytest.raises(UserError, match=r"out/exp is a link; a restore writes nothing through a link"):
        restore_collected(collected, out)
    assert not list(elsewhere.iterdir())


def test_a_folder_copy_reads_no_link_and_writes_through_none(tmp_path, host):
    source = tmp_path / "pack"
    (source / "memory").mkdir(parents=True)
    (source / "metrics.json").write_bytes(b"{}\n")
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "a.txt").write_bytes(HOST)
    (source / "memory" / "dumps").symlink_to(tmp_path / "outside", target_is_directory=True)
    (source / "reader.txt").symlink_to(host)
    storage = LocalStorage(tmp_path / "bucket")
    for files in (["metrics.json", "memory/dumps/a.txt"], ["metrics.json", "reader.txt"]):  # as a marker's listing names them
        with pytest.raises(UserError, match=r"is a link; a copied folder holds its own files"):
            storage.upload_dir(source, "p", files=files)
    assert not any(p.is_file() and p.read_bytes() == HOST for p in (tmp_path / "bucket").rglob("*"))
    # a download writes through no link left in its destination
    storage.upload_dir(source, "p", files=["metrics.json"])
    dest = tmp_path / "dest"
    dest.mkdir()
    storage.write_bytes("q/memory/x.txt", b"x")
    (dest / "memory").symlink_to(tmp_path / "outside", target_is_directory=True)
    with pytest.raises(UserError, match=r"dest/memory is a link; a folder copy writes nothing through a link"):
        storage.download_dir("q", dest)
    assert sorted(p.name for p in (tmp_path / "outside").iterdir()) == ["a.txt"]
