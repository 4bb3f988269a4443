"""One writer per pack (issue 19, item 1): two real processes on one pack, judge folder or
MLflow store at once, a kill -9 of the holder, and packs whose journals hold a row twice.

Each race is made deterministic with a gated scripted server: the model calls of whichever
process took the lock wait until the other process has exited, so the loser always meets a
held lock, never a finished pack.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from conftest import FIXTURES, run_cli, scripted_reader

from memorybench.cli import main
from memorybench.errors import UserError
from memorybench.pack import layout
from memorybench.pack.lock import LOCK_FILE, LockBusy, WriterLock, folder_lock
from memorybench.pack.success import reclose
from memorybench.pack.verify import verify_pack
from memorybench.storage import _base as storage_base
from memorybench.storage import local_files
from memorybench.testing.scripted_server import Reply, ScriptedOpenAIServer, echo_responder
from memorybench.tracking.sqlite_store import prepare_sqlite_store

MINI = FIXTURES / "mini_locomo.json"
HOST = socket.gethostname()
ENV = {**os.environ, "PYTHONUNBUFFERED": "1"}
BUSY = re.compile(r"is being written by pid (\d+) on host (\S+) \(since [^)]+\); wait for it or stop it")


def qa_args(root: Path, server: ScriptedOpenAIServer, *extra: str) -> list[str]:
    return [
        "qa",
        *scripted_reader(server.base_url),
        f"dataset.path={MINI}",
        f"paths.packs={root / 'packs'}",
        f"paths.cache={root / 'cache'}",
        "name=mini",
        *extra,
    ]


def judge_args(server: ScriptedOpenAIServer) -> list[str]:
    return ["judge=openai_compatible", f"judge.base_url={server.base_url}", "judge.model=judge-x", "--quiet"]


def the_pack(root: Path) -> Path:
    (pack,) = sorted((root / "packs" / "mini" / "runs").iterdir())
    return pack


def judge_folder(pack: Path) -> Path:
    (folder,) = [p for p in (pack / "autorater").iterdir() if p.is_dir() and p.name not in layout.AUTORATER_SHARED]
    return folder


def label(body: dict) -> Reply:
    return Reply(json.dumps({"label": "CORRECT"}), model="judge-x")


class Gate:
    """A responder that holds every call until `open()` (or 60 s): the lock's holder then
    cannot finish before its rival has met the lock."""

    def __init__(self, respond: Callable[[dict], Reply]) -> None:
        self.respond = respond
        self.event = threading.Event()

    def __call__(self, body: dict) -> Reply:
        self.event.wait(60)
        return self.respond(body)

    def open(self) -> None:
        self.event.set()


def race(commands: list[list[str]], cwd: Path, gate: Gate, timeout: float = 240) -> list[subprocess.CompletedProcess]:
    """Start every command at once; open the gate once one of them has exited; wait for all."""
    procs = [subprocess.Popen(c, cwd=cwd, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for c in commands]
    try:
        deadline = time.time() + timeout
        while time.time() < deadline and all(p.poll() is None for p in procs):
            time.sleep(0.02)
        gate.open()
        outs = [p.communicate(timeout=max(1.0, deadline - time.time())) for p in procs]
    finally:
        gate.open()
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    return [subprocess.CompletedProcess(p.args, p.returncode, out, err) for p, (out, err) in zip(procs, outs)]


def one_winner(results: list[subprocess.CompletedProcess]) -> tuple[subprocess.CompletedProcess, subprocess.CompletedProcess]:
    codes = sorted(r.returncode for r in results)
    assert codes[0] == 0 and codes[1] != 0, [(r.returncode, r.stderr[-2000:]) for r in results]
    winner = next(r for r in results if r.returncode == 0)
    loser = next(r for r in results if r.returncode != 0)
    lines = loser.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in loser.stderr, loser.stderr
    match = BUSY.search(lines[0])
    assert match is not None, lines[0]
    assert match.group(2) == HOST
    return winner, loser


def cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "memorybench.cli", *args]


def snapshot(folder: Path) -> dict[str, tuple[bytes, int]]:
    return {p.relative_to(folder).as_posix(): (p.read_bytes(), p.stat().st_mtime_ns) for p in folder.rglob("*") if p.is_file()}


@pytest.fixture(scope="module")
def reader() -> Iterator[ScriptedOpenAIServer]:
    """One reader for the module: its URL is part of the run id, so a rerun against it finds the pack."""
    with ScriptedOpenAIServer() as server:
        yield server


@pytest.fixture(scope="module")
def undisturbed(tmp_path_factory, reader) -> Path:
    """The mini pack of a run nobody disturbed, judged once."""
    root = tmp_path_factory.mktemp("undisturbed")
    assert main(qa_args(root, reader)) == 0
    pack = the_pack(root)
    with ScriptedOpenAIServer(responder=label) as judge:
        assert main(["autorater", str(pack), *judge_args(judge)]) == 0
    return pack


# -- the lock ------------------------------------------------------------------------------
def test_a_second_writer_gets_one_line_naming_the_holder_and_the_lock_file_is_no_pack_file(tmp_path):
    folder = tmp_path / "pack"
    with folder_lock(folder, "pack"):
        holder = json.loads((folder / LOCK_FILE).read_text())
        assert holder["pid"] == os.getpid() and holder["host"] == HOST and holder["since"]
        with pytest.raises(LockBusy) as busy:
            folder_lock(folder, "pack").acquire()
        assert BUSY.search(busy.value.message) and f"pid {os.getpid()}" in busy.value.message
        assert busy.value.message.startswith(f"pack {folder} is being written by")
        # a lock file is never one of the pack's files: not closed, not uploaded
        (folder / "a.txt").write_text("a")
        assert local_files(folder) == ["a.txt"]
        assert LOCK_FILE == storage_base.LOCK_FILE  # the two layers name the same file
    assert not (folder / LOCK_FILE).exists()  # the holder leaves no lock file behind
    folder_lock(folder, "pack").acquire().release()  # and the next writer takes it


def test_a_lock_file_left_by_a_dead_writer_is_taken_and_its_text_overwritten(tmp_path):
    folder = tmp_path / "pack"
    folder.mkdir()
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    (folder / LOCK_FILE).write_text(json.dumps({"pid": int(dead.stdout), "host": HOST, "since": "2026-01-01T00:00:00+00:00"}))
    with folder_lock(folder, "pack"):
        assert json.loads((folder / LOCK_FILE).read_text())["pid"] == os.getpid()


def test_a_link_at_the_lock_files_name_is_refused(tmp_path):
    folder = tmp_path / "pack"
    folder.mkdir()
    (folder / LOCK_FILE).symlink_to(tmp_path / "elsewhere")
    with pytest.raises(UserError, match="symbolic link"):
        folder_lock(folder, "pack").acquire()
    assert not (tmp_path / "elsewhere").exists()


def test_a_waiting_lock_waits_for_the_holder(tmp_path, capsys):
    path = tmp_path / "store.db.lock"
    first = WriterLock(path, "MLflow store", folder=tmp_path / "store.db", wait=True).acquire()
    order: list[str] = []

    def second() -> None:
        with WriterLock(path, "MLflow store", folder=tmp_path / "store.db", wait=True):
            order.append("second")

    thread = threading.Thread(target=second)
    thread.start()
    time.sleep(1.5)
    order.append("first done")
    first.release()
    thread.join(10)
    assert order == ["first done", "second"]
    assert f"waiting for MLflow store {tmp_path / 'store.db'}: pid {os.getpid()}" in capsys.readouterr().err


# -- qa ----------------------------------------------------------------------------------
def test_two_qa_processes_on_one_run_id_one_proceeds_and_the_pack_equals_an_undisturbed_run(tmp_path, undisturbed):
    gate = Gate(echo_responder)
    with ScriptedOpenAIServer(responder=gate) as server:
        args = cli(*qa_args(tmp_path, server))
        results = race([args, args], tmp_path, gate)
        winner, _ = one_winner(results)
        assert len(server.requests) == 10  # the loser asked nothing
    pack = the_pack(tmp_path)
    assert verify_pack(pack) == []
    assert not (pack / LOCK_FILE).exists()
    for name in (layout.PREDICTIONS, layout.LINEAGE, layout.MEMORY_MANIFEST, layout.PREDICTIONS_CSV):
        assert (pack / name).read_bytes() == (undisturbed / name).read_bytes(), name
    assert f"pack: {pack}" in winner.stdout


def test_a_qa_that_meets_a_held_lock_touches_nothing(tmp_path):
    with ScriptedOpenAIServer() as server:
        assert main(qa_args(tmp_path, server, "max_questions=4")) == 0
        pack = the_pack(tmp_path)
        (pack / layout.SUCCESS).unlink()  # unfinished: a rerun would write
        before = snapshot(pack)
        with folder_lock(pack, "pack"):
            done = run_cli(*qa_args(tmp_path, server, "max_questions=4"), cwd=tmp_path)
            holder = (pack / LOCK_FILE).read_bytes()
        assert len(server.requests) == 4
    assert done.returncode != 0 and done.stderr.count("\n") == 1, done.stderr
    assert f"pack {pack} is being written by pid {os.getpid()} on host {HOST}" in done.stderr
    assert {k: v for k, v in snapshot(pack).items()} == before
    assert json.loads(holder)["pid"] == os.getpid()


def test_kill_minus_nine_of_the_holder_then_a_new_qa_resumes_and_finishes(tmp_path, undisturbed):
    def slow(body: dict) -> Reply:
        time.sleep(0.4)
        return echo_responder(body)

    with ScriptedOpenAIServer(responder=slow) as server:
        args = qa_args(tmp_path, server)
        proc = subprocess.Popen(cli(*args), cwd=tmp_path, env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        predictions = tmp_path / "packs" / "mini" / "runs"
        deadline = time.time() + 120
        pack = None
        while time.time() < deadline and proc.poll() is None:
            found = list(predictions.glob(f"*/{layout.PREDICTIONS}"))
            if found and found[0].read_bytes().count(b"\n") >= 3:
                pack = found[0].parent
                break
            time.sleep(0.02)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        assert pack is not None, proc.stderr.read().decode()[-2000:]
        # the dead holder's lock file is still there, naming it: the kernel dropped its flock
        assert json.loads((pack / LOCK_FILE).read_text())["pid"] == proc.pid
        assert not (pack / layout.SUCCESS).exists()
        resumed = run_cli(*args, cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    assert verify_pack(pack) == []
    assert not (pack / LOCK_FILE).exists()
    for name in (layout.PREDICTIONS, layout.LINEAGE, layout.MEMORY_MANIFEST, layout.PREDICTIONS_CSV):
        assert (pack / name).read_bytes() == (undisturbed / name).read_bytes(), name


# -- autorater -----------------------------------------------------------------------------
def test_two_autoraters_on_one_pack_one_proceeds_and_the_verdicts_equal_an_undisturbed_run(tmp_path, undisturbed):
    target = tmp_path / "packs" / "mini" / "runs" / undisturbed.name
    shutil.copytree(undisturbed, target, ignore=shutil.ignore_patterns("autorater"))
    gate = Gate(label)
    with ScriptedOpenAIServer(responder=gate) as server:
        args = cli("autorater", str(target), *judge_args(server))
        results = race([args, args], tmp_path, gate)
        one_winner(results)
        assert len(server.requests) == 8  # categories 1-4 once; the loser asked nothing
    folder = judge_folder(target)
    assert verify_pack(target) == []
    assert not (folder / LOCK_FILE).exists()
    expected = judge_folder(undisturbed)
    for name in (layout.JUDGE_VERDICTS, layout.JUDGE_META.replace("meta", "metrics")):
        assert (folder / name).is_file()
    assert (folder / layout.JUDGE_VERDICTS).read_bytes() == (expected / layout.JUDGE_VERDICTS).read_bytes()
    keys = [(r["question_id"], r["pass"]) for r in map(json.loads, (folder / layout.JUDGE_TRACES).read_text().splitlines())]
    assert len(keys) == len(set(keys)) == 8


# -- aggregate and rescore -----------------------------------------------------------------
def test_aggregate_and_rescore_refuse_a_folder_another_process_writes(tmp_path, undisturbed):
    pack = tmp_path / "packs" / "mini" / "runs" / undisturbed.name
    shutil.copytree(undisturbed, pack)
    out = tmp_path / "design"
    with folder_lock(out / "collected", "aggregate output"):
        done = run_cli("aggregate", str(tmp_path / "packs"), "--out", str(out), cwd=tmp_path)
    assert done.returncode != 0 and done.stderr.count("\n") == 1, done.stderr
    assert f"aggregate output {out / 'collected'} is being written by pid {os.getpid()}" in done.stderr
    assert sorted(p.name for p in (out / "collected").iterdir()) == []
    before = snapshot(pack)
    with folder_lock(pack, "pack"):
        done = run_cli("rescore", str(pack), cwd=tmp_path)
    assert done.returncode != 0 and f"pack {pack} is being written by pid {os.getpid()}" in done.stderr, done.stderr
    assert snapshot(pack) == before
    assert run_cli("aggregate", str(tmp_path / "packs"), "--out", str(out), cwd=tmp_path).returncode == 0
    assert not (out / "collected" / LOCK_FILE).exists()


# -- journals that hold a row twice ----------------------------------------------------------
def _double(path: Path, line: int) -> None:
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:line] + [lines[line - 1]] + lines[line:]))


JOURNALS = {
    # journal: (relative path, line to repeat, whether qa reads it before saying "complete")
    "predictions": (layout.PREDICTIONS, 3, True),
    "reader traces": (layout.READER_TRACES, 2, True),
    "memory lineage": (layout.LINEAGE, 1, True),
    "memory manifest": (layout.MEMORY_MANIFEST, 1, True),
    "judge verdicts": ("JUDGE/" + layout.JUDGE_VERDICTS, 2, False),
    "judge traces": ("JUDGE/" + layout.JUDGE_TRACES, 2, False),
}


@pytest.mark.parametrize("journal", list(JOURNALS))
def test_a_pack_with_a_journal_row_twice_is_not_complete_and_fails_verify(journal, tmp_path, undisturbed, reader):
    pack = tmp_path / "packs" / "mini" / "runs" / undisturbed.name
    shutil.copytree(undisturbed, pack)
    relpath, line, read_by_qa = JOURNALS[journal]
    relpath = relpath.replace("JUDGE", judge_folder(pack).relative_to(pack).as_posix())
    _double(pack / relpath, line)
    reclose(pack, [relpath])  # recorded in its _SUCCESS: the repeated row is the only fault
    findings = verify_pack(pack)
    assert any(f.code == "duplicate.row" and f.path.startswith(relpath + ":") for f in findings), findings
    if read_by_qa:
        asked = len(reader.requests)
        done = run_cli(*qa_args(tmp_path, reader), cwd=tmp_path)
        assert len(reader.requests) == asked
        assert done.returncode != 0 and done.stderr.count("\n") == 1, done.stderr
        assert "is complete" not in done.stderr
        assert "inconsistent" in done.stderr and "memorybench verify" in done.stderr and relpath in done.stderr
    else:
        with ScriptedOpenAIServer(responder=label) as server:
            done = run_cli("autorater", str(pack), *judge_args(server), cwd=tmp_path)
            assert not server.requests
        assert done.returncode != 0 and "memorybench verify" in done.stderr and "complete" not in done.stderr, done.stderr


def test_agent_rows_twice_are_a_finding(tmp_path, undisturbed):
    pack = tmp_path / "packs" / "mini" / "runs" / undisturbed.name
    shutil.copytree(undisturbed, pack)
    row = {
        "schema": "agent_recall.v1",
        "question_id": "mini-1-q-0",
        "sample_id": "mini-1",
        "evidence": ["D1:1"],
        "found": [],
        "memory_recall": 0.0,
        "hop_to_evidence": None,
        "steps": 0,
    }
    (pack / layout.AGENT_RECALL).parent.mkdir(parents=True, exist_ok=True)
    (pack / layout.AGENT_RECALL).write_text(json.dumps(row) + "\n" + json.dumps(row) + "\n")
    reclose(pack, [layout.AGENT_RECALL])
    findings = [f for f in verify_pack(pack) if f.code == "duplicate.row"]
    assert [f.path for f in findings] == [f"{layout.AGENT_RECALL}:2"], findings


# -- MLflow ----------------------------------------------------------------------------------
def _runs(uri: str) -> list:
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=uri)
    (experiment,) = [e for e in client.search_experiments() if e.name == "mini"]
    return list(client.search_runs([experiment.experiment_id], max_results=1000))


@pytest.fixture()
def two_packs(tmp_path) -> Path:
    from tracking.pack_factory import make_packs

    make_packs(tmp_path)
    return tmp_path / "packs"


def test_two_tracks_on_one_fresh_store_both_succeed_and_log_each_pack_once(tmp_path, two_packs):
    db = tmp_path / "store" / "mlflow.db"
    uri = f"sqlite:///{db}"
    args = cli("track", str(two_packs), "--uri", uri, "--experiment", "mini", "--parent", "mini sweep", "--no-artifacts")
    procs = [
        subprocess.Popen(args, cwd=tmp_path, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)
    ]
    outs = [p.communicate(timeout=300) for p in procs]
    for proc, (_, err) in zip(procs, outs):
        assert proc.returncode == 0 and "Traceback" not in err, err[-3000:]
    runs = _runs(uri)
    nested = [r for r in runs if r.data.tags.get("memorybench.kind") == "run"]
    keys = [r.data.tags["memorybench.pack_key"] for r in nested]
    assert len(keys) == len(set(keys)) == 2
    assert len([r for r in runs if r.data.tags.get("memorybench.kind") == "sweep"]) == 1
    assert "logged" in "".join(out for out, _ in outs) and not (db.parent / "mlflow.db.lock").exists()


def _half_initialized(db: Path) -> None:
    """The store a `track` killed inside MLflow's first migration run leaves: the tables of
    every migration before `add secrets tables`, the secrets table that migration had just
    created, and alembic's revision still the one before it (sqlite commits each DDL)."""
    import sqlalchemy
    from alembic import command
    from mlflow.store.db.utils import _get_alembic_config
    from mlflow.store.tracking.dbmodels.initial_models import Base as InitialBase

    engine = sqlalchemy.create_engine(f"sqlite:///{db}")
    InitialBase.metadata.create_all(engine)
    config = _get_alembic_config(str(engine.url))
    with engine.begin() as connection:
        config.attributes["connection"] = connection
        command.upgrade(config, "bf29a5ff90ea")
    with engine.begin() as connection:
        connection.execute(sqlalchemy.text("CREATE TABLE secrets (secret_id VARCHAR(36) PRIMARY KEY)"))
    engine.dispose()


def test_a_store_left_half_initialized_by_a_kill_recovers_on_the_next_track(tmp_path, two_packs):
    db = tmp_path / "store" / "mlflow.db"
    db.parent.mkdir()
    _half_initialized(db)
    # what MLflow alone makes of it: every later open fails
    probe = tmp_path / "probe.db"
    shutil.copy(db, probe)
    failed = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from mlflow.tracking import MlflowClient; MlflowClient(tracking_uri=sys.argv[1]).search_experiments()",
            f"sqlite:///{probe}",
        ],
        capture_output=True,
        text=True,
        env=ENV,
    )
    assert failed.returncode != 0 and "already exists" in failed.stderr, failed.stderr[-2000:]
    done = run_cli("track", str(two_packs), "--uri", f"sqlite:///{db}", "--experiment", "mini", "--no-artifacts", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "half-initialized" in done.stderr
    (aside,) = db.parent.glob("mlflow.db.broken-*")
    assert len([r for r in _runs(f"sqlite:///{db}") if r.data.tags.get("memorybench.kind") == "run"]) == 2
    # the next track finds the store whole: nothing moved aside again, nothing logged twice
    again = run_cli("track", str(two_packs), "--uri", f"sqlite:///{db}", "--experiment", "mini", "--no-artifacts", cwd=tmp_path)
    assert again.returncode == 0 and "half-initialized" not in again.stderr, again.stderr
    assert list(db.parent.glob("mlflow.db.broken-*")) == [aside]
    assert len([r for r in _runs(f"sqlite:///{db}") if r.data.tags.get("memorybench.kind") == "run"]) == 2


def test_a_half_built_store_that_holds_runs_is_left_alone_with_one_line(tmp_path):
    db = tmp_path / "mlflow.db"
    _half_initialized(db)
    with sqlite3.connect(db) as conn:
        conn.execute("INSERT INTO experiments (experiment_id, name, lifecycle_stage) VALUES (7, 'kept', 'active')")
        conn.execute("INSERT INTO runs (run_uuid, experiment_id, lifecycle_stage, status) VALUES ('r1', 7, 'active', 'FINISHED')")
    before = db.read_bytes()
    with pytest.raises(UserError, match="mlflow db upgrade"):
        prepare_sqlite_store(db, None)
    assert db.read_bytes() == before
