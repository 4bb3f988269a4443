"""A disk that fills mid-run: the pack lives on a small tmpfs that the test fills up while
the run is going (the scripted server's responder writes a filler file at a chosen call).

The stage must stop with one line naming the file it could not write and the fix, no
traceback; every row already written stays whole and valid; after space is freed, or the
pack is moved to a bigger folder, the same command resumes and the result equals an
undisturbed run. The same for the autorater stage over a finished pack.
"""

from __future__ import annotations

import errno
import json
import shutil
import subprocess
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import run_cli, scripted_reader
from faultkit import (
    MINI,
    MINI_IDS,
    assert_journals_whole,
    assert_prefix_without_duplicates,
    assert_same_as_undisturbed,
    pack_of,
    rows,
    undisturbed_run,
)

from memorybench.cli import main
from memorybench.errors import UserError
from memorybench.pack.journal import DiskFullError, Journal
from memorybench.testing.scripted_server import Reply, ScriptedOpenAIServer, echo_responder

FILLER = "filler.bin"


@pytest.fixture()
def small_disk(tmp_path) -> Iterator[Path]:
    """A 4 MiB tmpfs (we run as root in CI); skipped with the reason where mounting is not allowed."""
    mount = tmp_path / "small"
    mount.mkdir()
    try:
        done = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mount)], capture_output=True, text=True, timeout=30
        )
    except (FileNotFoundError, PermissionError) as e:
        pytest.skip(f"cannot mount a size-limited tmpfs here ({e}); the disk-full tests need root or CAP_SYS_ADMIN")
    if done.returncode != 0:
        pytest.skip(
            f"cannot mount a size-limited tmpfs here ({done.stderr.strip()}); the disk-full tests need root or CAP_SYS_ADMIN"
        )
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], capture_output=True, timeout=30)


def fill(folder: Path) -> Path:
    """Take every free byte of the file system that holds `folder`."""
    path = folder / FILLER
    with path.open("ab", buffering=0) as f:
        chunk = b"\0" * 65536
        try:
            while True:
                f.write(chunk)
        except OSError as e:
            assert e.errno == errno.ENOSPC, e
    return path


def filling_at(call: int, folder: Path, respond: Callable[[dict[str, Any]], Reply] = echo_responder):
    """A responder that fills the disk just before it answers its `call`-th request (0-based)."""
    seen = {"n": 0}

    def responder(body: dict[str, Any]) -> Reply:
        if seen["n"] == call:
            fill(folder)
        seen["n"] += 1
        return respond(body)

    return responder


def in_process(*argv: str) -> int:
    """The CLI in this process (the failing runs use a subprocess: their stderr is checked)."""
    try:
        return main(list(argv))
    except SystemExit as e:  # Hydra ends a failed qa job with SystemExit
        return int(e.code or 0)


def assert_one_line_disk_full(result: subprocess.CompletedProcess, under: Path | None) -> str:
    """One line, no traceback, naming the file under `under` (None: a file the stage writes itself,
    whose name the OSError does not carry) and the fix."""
    assert result.returncode != 0 and "Traceback" not in result.stderr, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    (line,) = lines
    start = (
        f"memorybench: error: no space left on device writing {under}/"
        if under
        else "memorybench: error: no space left on device;"
    )
    assert line.startswith(start), line
    assert "free space on" in line and "move the pack to a bigger one" in line and "rerun the same command to resume" in line
    return line


@pytest.fixture(scope="module")
def undisturbed(tmp_path_factory) -> Path:
    return undisturbed_run(tmp_path_factory.mktemp("undisturbed"))


# -- the journal itself ----------------------------------------------------------------------------


def test_a_row_cut_by_a_full_disk_is_taken_back_whole(small_disk):
    journal = Journal(small_disk / "j" / "rows.jsonl")
    journal.append({"schema": "row.v1", "n": 0})
    fill(small_disk)
    # rows land in the last page's slack until one crosses into a page the disk does not have
    row = {"schema": "row.v1", "pad": "x" * 700}
    with pytest.raises(DiskFullError) as info:
        for n in range(1, 100):
            journal.append({**row, "n": n})
    assert isinstance(info.value, UserError) and str(journal.path) in info.value.message
    kept = rows(journal.path)  # whole rows only: the part of the failed one was cut back
    assert [r["n"] for r in kept] == list(range(len(kept))) and len(kept) >= 2
    (small_disk / FILLER).unlink()
    journal.append({**row, "n": len(kept)})  # appends go on after the error once there is space
    journal.close()
    assert [r["n"] for r in rows(journal.path)] == list(range(len(kept) + 1))


# -- qa ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("then", ["free space", "move to a bigger folder"])
def test_qa_on_a_disk_that_fills_stops_in_one_line_keeps_its_rows_and_resumes(then, small_disk, tmp_path, undisturbed):
    name = "full_disk"
    with ScriptedOpenAIServer(responder=filling_at(2, small_disk)) as server:
        args = [
            "qa",
            *scripted_reader(server.base_url),
            f"dataset.path={MINI}",
            f"paths.cache={tmp_path / 'cache'}",
            f"name={name}",
        ]
        failed = run_cli(*args, f"paths.packs={small_disk / 'packs'}", cwd=tmp_path, timeout=120)
        assert_one_line_disk_full(failed, small_disk / "packs" / name)
        pack = pack_of(small_disk, name)
        assert not (pack / "_SUCCESS").exists()
        answered = assert_prefix_without_duplicates(pack)
        assert len(answered) >= 2  # the questions answered before the disk filled are kept
        assert_journals_whole(pack)
        if then == "free space":
            (small_disk / FILLER).unlink()
            packs = small_disk / "packs"
        else:
            packs = tmp_path / "bigger" / "packs"
            shutil.copytree(small_disk / "packs", packs)
        before = len(server.requests)
        assert in_process(*args, f"paths.packs={packs}") == 0
        assert len(server.requests) - before == len(MINI_IDS) - len(answered)  # only what was left is asked
    pack = pack_of(packs.parent, name)
    assert_same_as_undisturbed(pack, undisturbed)
    assert json.loads((pack / "run_meta.json").read_text())["resumed"] == 1


# -- autorater ----------------------------------------------------------------------------------------


def judge_reply(body: dict[str, Any]) -> Reply:
    """Plumbing: a label derived from the request, the same for the same request."""
    label = "CORRECT" if len(body["messages"][-1]["content"]) % 2 else "WRONG"
    return Reply(json.dumps({"label": label}), model="judge-x")


def qa_files(pack: Path) -> dict[str, bytes]:
    return {p.relative_to(pack).as_posix(): p.read_bytes() for p in pack.rglob("*") if p.is_file() and "autorater" not in p.parts}


def judge_args(server: ScriptedOpenAIServer, tmp_path: Path) -> list[str]:
    return [
        "judge=openai_compatible",
        f"judge.base_url={server.base_url}",
        "judge.model=judge-x",
        f"paths.cache={tmp_path / 'cache'}",
        "--quiet",
    ]


@pytest.fixture(scope="module")
def judged(tmp_path_factory, undisturbed) -> Path:
    """The undisturbed pack, judged on a disk with room."""
    root = tmp_path_factory.mktemp("judged")
    reference = root / undisturbed.name
    shutil.copytree(undisturbed, reference)
    with ScriptedOpenAIServer(responder=judge_reply) as server:
        assert in_process("autorater", str(reference), *judge_args(server, root)) == 0
    return reference


@pytest.mark.parametrize("fill_at", [2, None], ids=["at the third judge call", "before the stage starts"])
def test_autorater_on_a_disk_that_fills_stops_in_one_line_keeps_its_verdicts_and_resumes(fill_at, small_disk, tmp_path, judged):
    reference = judged
    (judge_id,) = (m.parent.name for m in (reference / "autorater").glob("*/autorater_meta.json"))  # the judge's folder
    pack = small_disk / "packs" / "p" / "runs" / reference.name
    shutil.copytree(reference, pack, ignore=shutil.ignore_patterns("autorater"))
    before = qa_files(pack)
    if fill_at is None:
        fill(small_disk)
    with ScriptedOpenAIServer(responder=filling_at(fill_at if fill_at is not None else -1, small_disk, judge_reply)) as server:
        failed = run_cli("autorater", str(pack), *judge_args(server, tmp_path), cwd=tmp_path, timeout=120)
        # a journal row names its file, and so does the stage's own prompt copy written before any call
        assert_one_line_disk_full(failed, pack)
        assert not list(pack.rglob("*.part"))  # no half-written file left behind
        assert not (pack / "autorater" / judge_id / "_SUCCESS").exists()
        verdicts_path = pack / "autorater" / judge_id / "autorater_verdicts.jsonl"
        verdicts = rows(verdicts_path) if verdicts_path.exists() else []
        expected = rows(reference / "autorater" / judge_id / "autorater_verdicts.jsonl")
        assert verdicts == expected[: len(verdicts)]
        assert len(verdicts) >= (2 if fill_at is not None else 0)
        if (pack / "autorater" / judge_id / "traces.jsonl").exists():
            traced = [(t["question_id"], t["pass"]) for t in rows(pack / "autorater" / judge_id / "traces.jsonl")]
            assert len(set(traced)) == len(traced)
            assert_journals_whole(pack / "autorater" / judge_id)
        assert qa_files(pack) == before  # the stage never touches what qa wrote
        (small_disk / FILLER).unlink()
        assert in_process("autorater", str(pack), *judge_args(server, tmp_path)) == 0
    assert_journals_whole(pack)
    for name in (f"autorater/{judge_id}/autorater_verdicts.jsonl",):
        assert (pack / name).read_bytes() == (reference / name).read_bytes()
    got, want = (json.loads((p / "autorater" / judge_id / "autorater_metrics.json").read_text()) for p in (pack, reference))
    assert got["j"] == want["j"] and got["counts"] == want["counts"]
    assert [t["question_id"] for t in rows(pack / "autorater" / judge_id / "traces.jsonl")] == [
        t["question_id"] for t in rows(reference / "autorater" / judge_id / "traces.jsonl")
    ]
    assert qa_files(pack) == before


def test_a_filler_leaves_the_disk_full(small_disk):
    # the other tests rely on this: after fill() not one more page can be written
    fill(small_disk)
    with pytest.raises(OSError) as info:
        (small_disk / f"{uuid.uuid4().hex}.txt").write_bytes(b"x" * 8192)
    assert info.value.errno == errno.ENOSPC
