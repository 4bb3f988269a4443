"""The progress reporter (memorybench/progress.py): its line, rate and eta, when it speaks;
and a real `qa` run with stderr to a file prints progress lines while it runs."""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
import time

import pytest
from conftest import FIXTURES, scripted_reader

from memorybench.errors import UserError
from memorybench.progress import Progress, Spend, format_eta, progress_enabled, progress_every_s

MINI = FIXTURES / "mini_locomo.json"


@pytest.fixture(autouse=True)
def progress_on(monkeypatch):
    monkeypatch.setenv("MEMORYBENCH_PROGRESS", "on")  # tests/conftest.py turns it off for every other test


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def reporter(stream: io.StringIO, clock: Clock, spend: Spend | None, **kwargs) -> Progress:
    return Progress("qa", 1986, initial=400, label="conv-30", stream=stream, every_s=0, spend=spend, clock=clock, **kwargs)


def test_line_has_count_rate_eta_and_cost():
    stream, clock, spend = io.StringIO(), Clock(), Spend()
    bar = reporter(stream, clock, spend)
    assert stream.getvalue() == "qa conv-30 400/1986 questions\n"  # the first line at once: no rate yet, no call yet
    spend.record(0.30)
    spend.record(0.01)
    clock.now += 5.7
    bar.update(12)  # 12 questions in 5.7 s: 2.1 q/s; 1574 left: 747 s
    assert stream.getvalue().splitlines()[-1] == "qa conv-30 412/1986 questions, 2.1 q/s, eta 12m, $0.31 so far"
    assert bar.rate() == pytest.approx(12 / 5.7)
    bar.set_label("conv-41")
    clock.now += 100
    bar.update(1574)
    clock.now += 1
    bar.close()  # the count and label were said by the last update: no second last line
    assert len(stream.getvalue().splitlines()) == 3
    last = stream.getvalue().splitlines()[-1]
    assert last.startswith("qa conv-41 1986/1986 questions, ") and "eta" not in last  # nothing left: no eta


def test_cost_only_when_every_call_was_priced():
    stream, clock, spend = io.StringIO(), Clock(), Spend()
    spend.record(None)  # before the reporter: not its business
    bar = reporter(stream, clock, spend)
    clock.now += 1
    bar.update()
    assert "$" not in stream.getvalue()  # no call since it started: no cost shown
    spend.record(0.5)
    bar.update()
    assert stream.getvalue().splitlines()[-1].endswith("$0.50 so far")
    spend.record(None)  # a model without a price: the total is not known
    bar.update()
    assert "$" not in stream.getvalue().splitlines()[-1]
    small = Spend()
    cheap = reporter(io.StringIO(), clock, small)
    small.record(0.00042)
    assert cheap.line().endswith("$0.0004 so far")
    unmetered = reporter(io.StringIO(), clock, None)
    assert unmetered.cost_usd() is None


def test_a_resume_counts_in_the_total_not_in_the_rate():
    clock = Clock()
    bar = reporter(io.StringIO(), clock, None)
    assert bar.rate() is None
    clock.now += 10
    bar.update(5)
    assert bar.rate() == pytest.approx(0.5) and bar.done == 405


@pytest.mark.parametrize(
    "seconds, text",
    [(0, "0s"), (44.6, "45s"), (59.4, "59s"), (747, "12m"), (3599, "60m"), (3600, "1h00m"), (3 * 3600 + 65, "3h01m")],
)
def test_eta_format(seconds, text):
    assert format_eta(seconds) == text


def test_lines_every_n_seconds_and_a_last_one():
    stream, clock = io.StringIO(), Clock()
    bar = Progress("autorater", 10, unit="verdicts", rate_unit="verdict", stream=stream, every_s=3600, spend=None, clock=clock)
    for _ in range(10):
        clock.now += 1
        bar.update()
    assert stream.getvalue() == "autorater 0/10 verdicts\n"  # the next line is an hour away
    bar.close()
    bar.close()  # once only
    assert stream.getvalue().splitlines()[1:] == ["autorater 10/10 verdicts, 1.0 verdict/s"]


def test_iterate_counts_each_item_after_its_body_and_closes():
    stream = io.StringIO()
    seen = []
    bar = Progress("import", 3, unit="rows", rate_unit="row", stream=stream, every_s=0, spend=None)
    for item in bar.iterate("abc"):
        seen.append((item, bar.done))
    assert seen == [("a", 0), ("b", 1), ("c", 2)] and bar.done == 3
    assert stream.getvalue().splitlines()[-1].startswith("import 3/3 rows")


def test_quiet_and_terminal():
    quiet = io.StringIO()
    bar = Progress("qa", 5, stream=quiet, every_s=0, enabled=False)
    bar.update(5)
    bar.close()
    assert quiet.getvalue() == ""
    term = io.StringIO()
    bar = Progress("qa", 5, label="conv-26", stream=term, every_s=0, tty=True, spend=None)
    bar.update(2)
    bar.close()
    assert "qa conv-26" in term.getvalue() and "2/5" in term.getvalue() and "\r" in term.getvalue()  # tqdm's bar


def test_lines_through_say():
    said: list[str] = []
    bar = Progress("wave", 2, unit="tasks", rate_unit="task", every_s=0, spend=None, say=said.append, tty=True)
    bar.update()
    bar.close()
    assert said[0] == "wave 0/2 tasks" and said[1].startswith("wave 1/2 tasks, ")  # say wins over a terminal


@pytest.mark.parametrize("value, seconds", [(None, 30.0), ("", 30.0), ("0", 0.0), ("2.5", 2.5)])
def test_every_s_from_the_environment(value, seconds):
    assert progress_every_s({} if value is None else {"MEMORYBENCH_PROGRESS_EVERY_S": value}) == seconds


@pytest.mark.parametrize("value, on", [(None, True), ("on", True), ("1", True), ("OFF", False), ("0", False), ("no", False)])
def test_progress_switch(value, on, monkeypatch):
    assert progress_enabled({} if value is None else {"MEMORYBENCH_PROGRESS": value}) is on
    if not on:
        monkeypatch.setenv("MEMORYBENCH_PROGRESS", value)
        stream = io.StringIO()
        bar = Progress("qa", 3, stream=stream, every_s=0)
        bar.update()
        bar.close()
        assert stream.getvalue() == ""
    with pytest.raises(UserError, match="MEMORYBENCH_PROGRESS='maybe'"):
        progress_enabled({"MEMORYBENCH_PROGRESS": "maybe"})


@pytest.mark.parametrize("value", ["soon", "-1", "nan"])
def test_bad_every_s_is_one_line(value):
    with pytest.raises(UserError, match="MEMORYBENCH_PROGRESS_EVERY_S"):
        progress_every_s({"MEMORYBENCH_PROGRESS_EVERY_S": value})


LINE = re.compile(r"^qa (?:(\S+) )?(?:\(building memory\) )?(\d+)/(\d+) questions")


def test_qa_with_stderr_to_a_file_prints_progress_while_it_runs(tmp_path):
    from memorybench.testing.scripted_server import ScriptedOpenAIServer, echo_responder

    def slow(body):
        time.sleep(0.25)
        return echo_responder(body)

    log = tmp_path / "stderr.log"
    env = {**os.environ, "MEMORYBENCH_PROGRESS": "on", "MEMORYBENCH_PROGRESS_EVERY_S": "0", "PYTHONUNBUFFERED": "1"}
    with ScriptedOpenAIServer(responder=slow) as server, log.open("w") as err:
        args = [
            "qa",
            *scripted_reader(server.base_url, model="gpt-4o-mini"),
            f"dataset.path={MINI}",
            f"paths.packs={tmp_path / 'packs'}",
            f"paths.cache={tmp_path / 'cache'}",
        ]
        proc = subprocess.Popen(
            [sys.executable, "-m", "memorybench.cli", *args], cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=err
        )
        seen_running: list[str] = []
        deadline = time.time() + 120
        while proc.poll() is None and time.time() < deadline:
            seen_running = [x for x in log.read_text().splitlines() if LINE.match(x)]
            if len(seen_running) >= 3:
                break
            time.sleep(0.05)
        assert proc.poll() is None and len(seen_running) >= 3, "no progress line while qa ran:\n" + log.read_text()
        assert proc.wait(timeout=120) == 0, log.read_text()
    lines = [x for x in log.read_text().splitlines() if LINE.match(x)]
    counts = [int(LINE.match(x).group(2)) for x in lines]
    assert counts == sorted(counts) and counts[0] == 0 and counts[-1] == 10 and len(set(counts)) == 11
    assert {LINE.match(x).group(1) for x in lines} >= {"mini-1", "mini-2"}
    assert " q/s" in lines[-1] and lines[-1].endswith(" so far")  # gpt-4o-mini has a price
    pack = next((tmp_path / "packs").glob("*/runs/*"))
    assert not any("questions, " in p.read_text("utf-8", errors="replace") for p in pack.rglob("*") if p.is_file())


def test_executor_printer_says_each_task_state_and_a_summary():
    from memorybench.cloudrun.executors import ExecutionReport, TaskOutcome, progress_printer

    said: list[str] = []
    printer = progress_printer(said.append)
    report = ExecutionReport(
        execution="projects/p/locations/r/jobs/j/executions/j-x1", task_count=2, tasks=[TaskOutcome(0), TaskOutcome(1)]
    )
    printer(report)  # every task pending: nothing to say of them yet
    report.tasks[0].state, report.tasks[0].attempts = "running", 1
    printer(report)
    report.tasks[0].state, report.tasks[0].exit_code = "pending", 1
    report.retried = 1
    printer(report)
    report.tasks[0].state, report.tasks[0].attempts, report.tasks[1].state, report.tasks[1].attempts = "running", 2, "running", 1
    printer(report)
    report.tasks[0].state, report.tasks[0].exit_code, report.tasks[1].state, report.tasks[1].exit_code = (
        "succeeded",
        0,
        "succeeded",
        0,
    )
    report.succeeded, report.done = 2, True
    printer(report)
    tasks = [x for x in said if x.startswith("task ")]
    assert tasks == [
        "task 0: running",
        "task 0: pending, exit 1; to be retried",
        "task 0: running (attempt 2)",
        "task 1: running",
        "task 0: succeeded (attempt 2)",
        "task 1: succeeded",
    ]
    assert said[-2].startswith("j-x1 2/2 tasks") and said[-1] == (
        "execution projects/p/locations/r/jobs/j/executions/j-x1 done: 2 task(s), 2 succeeded, 0 failed, 0 cancelled, 1 retried"
    )
    assert "j-x1 0/2 tasks" in said  # the progress line's first one


def test_submitit_watcher_says_each_job_state_and_a_summary(tmp_path):
    import pickle

    from hydra.core.utils import JobReturn, JobStatus

    from memorybench.cloudrun.submitit_progress import SubmititWatcher

    said: list[str] = []
    watcher = SubmititWatcher(tmp_path / ".submitit", say=said.append)
    watcher.poll()  # no folder yet
    for job in ("101", "102"):
        (tmp_path / ".submitit" / job).mkdir(parents=True)
        (tmp_path / ".submitit" / job / f"{job}_submitted.pkl").write_bytes(b"")
    watcher.poll()
    (tmp_path / ".submitit" / "101" / "101_0_log.out").write_text("")
    watcher.poll()
    for job, status in (("101", JobStatus.COMPLETED), ("102", JobStatus.FAILED)):
        ret = JobReturn(overrides=[f"memory={job}"], status=status)
        (tmp_path / ".submitit" / job / f"{job}_0_result.pkl").write_bytes(pickle.dumps(("success", ret)))
    watcher.poll()
    watcher.stop()
    assert [x for x in said if x.startswith("job ")] == [
        "job 101: submitted",
        "job 102: submitted",
        "job 101: running",
        "job 101 (memory=101): succeeded",
        "job 102 (memory=102): failed",
    ]
    assert said[-1] == f"2 job(s): 1 succeeded, 1 failed; logs in {tmp_path / '.submitit'}"
    assert any(x.startswith("sweep 2/2 jobs") for x in said)


def test_a_submitit_sweep_driver_says_each_job_state_and_a_summary(scripted_server, tmp_path, capfd):
    pytest.importorskip("hydra_plugins.hydra_submitit_launcher", reason="pip install hydra-submitit-launcher (the cloud extra)")
    from memorybench.cli import main

    args = [
        "qa",
        "-m",
        *scripted_reader(scripted_server.base_url),
        f"dataset.path={MINI}",
        f"paths.packs={tmp_path / 'packs'}",
        f"paths.cache={tmp_path / 'cache'}",
        "reader.max_tokens=8,16",
        f"hydra.sweep.dir={tmp_path / 'multirun'}",
        "hydra/launcher=submitit_local",
        "hydra.launcher.timeout_min=10",
    ]
    assert main(args) == 0
    err = [x for x in capfd.readouterr().err.splitlines() if x.startswith("[submitit] ")]
    jobs = [x for x in err if x.startswith("[submitit] job ")]
    # a job may be seen running at once (the watcher polls every second)
    assert sum(x.endswith((": submitted", ": running")) for x in jobs) >= 2, err
    assert sum(x.endswith(": succeeded") for x in jobs) == 2, err
    assert any("reader.max_tokens=16" in x for x in jobs), err
    assert err[-1].startswith("[submitit] 2 job(s): 2 succeeded, 0 failed; logs in ")


# -- the phases that looked hung: loading the model, prefilling a memory, resuming -------------


def test_say_prints_a_phase_at_once_unless_progress_is_off(monkeypatch):
    from memorybench.progress import say

    stream = io.StringIO()
    say("loading the model gemma-3-270m for the reader (n_ctx 8192)", stream=stream)
    say("not this one", stream=stream, enabled=False)  # a caller's --quiet
    monkeypatch.setenv("MEMORYBENCH_PROGRESS", "off")
    say("nor this one", stream=stream)
    assert stream.getvalue() == "loading the model gemma-3-270m for the reader (n_ctx 8192)\n"


def test_a_note_goes_above_a_terminal_bar_and_between_plain_lines():
    term = io.StringIO()
    bar = Progress("qa", 5, stream=term, every_s=0, tty=True, spend=None)
    bar.note("conv-26: prefilling about 4000 tokens of memory")
    bar.close()
    assert "conv-26: prefilling about 4000 tokens of memory\n" in term.getvalue()
    plain = io.StringIO()
    bar = Progress("qa", 5, stream=plain, every_s=0, spend=None)
    bar.note("conv-26: prefilling about 4000 tokens of memory")
    bar.update()
    assert plain.getvalue().splitlines()[:2] == ["qa 0/5 questions", "conv-26: prefilling about 4000 tokens of memory"]
    quiet = io.StringIO()
    Progress("qa", 5, stream=quiet, every_s=0, enabled=False).note("nothing")
    assert quiet.getvalue() == ""


def test_prefill_notes_say_the_tokens_the_expected_time_and_a_restore_from_disk():
    from memorybench.progress import CALLS
    from memorybench.stages.qa import PrefillNotes

    said: list[str] = []
    notes = PrefillNotes(said.append, "phase-test-model", question_dependent=False)
    memory = "x" * 2800  # about 1002 tokens (memorybench.llm.sizing.estimate_tokens)
    notes.before("conv-26", memory)
    CALLS.record("phase-test-model", 1100, None, 20.0)  # the first question: 1100 tokens evaluated in 20 s
    notes.after("conv-26")
    notes.after("conv-26")  # the second question: nothing more to say
    notes.before("conv-30", memory)  # the speed is known now: 55 tokens/s
    CALLS.record("phase-test-model", 1100, 1024, 1.5)  # the next server process restored 1024 of them
    notes.after("conv-30")
    notes.before("conv-41", memory)  # answered from the response cache: no call, nothing prefilled
    notes.after("conv-41")
    assert said == [
        "conv-26: prefilling about 1002 tokens of memory",
        "conv-26: memory prefilled and first question answered in 20s",
        "conv-30: prefilling about 1002 tokens of memory, expected 18s",
        "conv-30: prefill of 1024 tokens restored from disk; first answer in 2s",
        "conv-41: prefilling about 1002 tokens of memory, expected 18s",
    ]
    quiet: list[str] = []
    for model, dependent in ((None, False), ("phase-test-model", True)):  # a remote reader; memory per question
        other = PrefillNotes(quiet.append, model, question_dependent=dependent)
        other.before("conv-26", memory)
        other.after("conv-26")
    assert quiet == []


def test_a_resumed_qa_says_how_many_questions_were_answered_already(scripted_server, tmp_path, capfd):
    from memorybench.cli import main
    from memorybench.pack import layout
    from memorybench.progress import CALLS

    args = [
        "qa",
        *scripted_reader(scripted_server.base_url),
        f"dataset.path={MINI}",
        f"paths.packs={tmp_path / 'packs'}",
        f"paths.cache={tmp_path / 'cache'}",
    ]
    assert main(args) == 0
    assert "resuming" not in capfd.readouterr().err
    assert CALLS.last("scripted") is not None  # the chat client records each call it made
    pack = next((tmp_path / "packs").glob("*/runs/*"))
    (pack / layout.SUCCESS).unlink()  # as if stopped after its fourth answer
    predictions = pack / layout.PREDICTIONS
    predictions.write_text("".join(predictions.read_text().splitlines(keepends=True)[:4]))
    assert main(args) == 0
    err = capfd.readouterr().err.splitlines()
    assert "resuming: 4 of 10 already answered" in err
    assert err.index("resuming: 4 of 10 already answered") < min(i for i, x in enumerate(err) if LINE.match(x))


def test_the_embedded_model_says_it_is_loading_and_when_it_is_loaded(monkeypatch, tmp_path, capfd):
    from pathlib import Path
    from types import SimpleNamespace

    from omegaconf import OmegaConf

    import memorybench.llm.local as local
    from memorybench.llm.endpoints import ClientSettings, LocalProvider

    spec = SimpleNamespace(name="gemma-3-270m", package="pkg", sha256="0" * 64, stop=(), path=lambda: Path("m.gguf"))

    class FakeServer:
        def __init__(self, spec, n_ctx, **_):
            self.model_id, self.base_url, self.startup_s = spec.name, "http://127.0.0.1:9/v1", 42.0

        def __enter__(self):
            print("(started)", file=sys.stderr)
            return self

        def __exit__(self, *exc):
            return None

    monkeypatch.setattr(local, "choose_local_model", lambda tokens, model, role="reader": (spec, 8192, "fits"))
    monkeypatch.setattr(local, "LocalServer", FakeServer)
    node = OmegaConf.create({"model": "auto", "max_tokens": 32})
    settings = ClientSettings(timeout_s=5, max_retries=0, retry_max_wait_s=0, min_request_interval_s=0, cache=None, prices={})
    with LocalProvider.open(node, "reader", settings, cache_dir=tmp_path):
        pass
    assert capfd.readouterr().err.splitlines() == [
        "loading the model gemma-3-270m for the reader (n_ctx 8192)",
        "(started)",
        "model gemma-3-270m loaded in 42s",
    ]


def test_a_memory_build_shows_its_writer_calls_failures_and_time_a_call(tmp_path, capfd, monkeypatch):
    """Issue 40, item 4: a build that makes many writer calls before the next question said the
    same `qa conv-26 (building memory) 0/3 questions` for ten minutes; the line now counts the
    build's writer calls, how many failed and the mean seconds a call, as they happen."""
    from memorybench.cli import main
    from memorybench.testing.scripted_server import Reply, ScriptedOpenAIServer

    def slow_prose(body) -> Reply:
        time.sleep(0.25)
        return Reply(text="Sure! Here are the entities and relations you asked for.")

    monkeypatch.setenv("MEMORYBENCH_PROGRESS_EVERY_S", "0.1")
    with ScriptedOpenAIServer() as reader, ScriptedOpenAIServer(responder=slow_prose) as writer:
        args = [
            "qa",
            *scripted_reader(reader.base_url),
            "memory=graph",
            "writer=openai_compatible",
            f"writer.base_url={writer.base_url}",
            "writer.model=scripted-writer",
            "writer.max_retries=0",
            "memory.max_failed_share=1.0",
            "max_questions=2",
            f"dataset.path={MINI}",
            f"paths.packs={tmp_path / 'packs'}",
            f"paths.cache={tmp_path / 'cache'}",
        ]
        assert main(args) == 0
    building = [line for line in capfd.readouterr().err.splitlines() if "building memory" in line]
    counted = [re.search(r"building memory: (\d+) writer calls?, (\d+) failed, (\d+\.\d) s a call\)", line) for line in building]
    seen = [(int(m.group(1)), int(m.group(2)), float(m.group(3))) for m in counted if m]
    assert seen, building
    assert max(calls for calls, _, _ in seen) >= 2 and all(failed <= calls for calls, failed, _ in seen)
    assert any(failed >= 1 for _, failed, _ in seen) and all(s >= 0.2 for _, _, s in seen)


def test_a_haystack_of_one_question_says_its_question_not_the_first(monkeypatch):
    """Issue 40, item 9: a LongMemEval run said "first question answered" for every question."""
    from memorybench.progress import CALLS
    from memorybench.stages.qa import PrefillNotes

    said: list[str] = []
    notes = PrefillNotes(said.append, "phase-test-one", question_dependent=False)
    notes.before("lme000", "x" * 2800, 1)
    CALLS.record("phase-test-one", 1100, None, 20.0)
    notes.after("lme000")
    notes.before("lme001", "x" * 2800, 1)
    CALLS.record("phase-test-one", 1100, 1024, 1.5)
    notes.after("lme001")
    assert said[1] == "lme000: memory prefilled and its question answered in 20s"
    assert said[3] == "lme001: prefill of 1024 tokens restored from disk; its answer in 2s"
