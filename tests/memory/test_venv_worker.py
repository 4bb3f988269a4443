"""A library in an environment of its own behind a worker (`memorybench.memory.venv_worker`),
with a toy worker script written here: standard library only, run by this Python with `-I`,
speaking through the shared worker side (`_venv_worker_side.py`, loaded by the path the
client passes). Checked: a command answered, with a report and a sync on the way; the
library raising is a `WorkerError`; a connection elsewhere than the allowed address is
refused in the worker and named; a worker that dies, or runs past its deadline, or has no
interpreter, is one line; `close` answers with every connection tried. And the environment
helpers (the interpreter from a variable or the plugin's `.venv`, versions from dist-info,
the pins check), the free-string pattern of `PlainStringsEndpoint`, the store words' filter."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

import pytest

from memorybench.errors import UserError
from memorybench.memory.venv_method import plain_strings
from memorybench.memory.venv_store_words import fixed_words
from memorybench.memory.venv_worker import VenvLibrary, Worker, WorkerError, host_port

TOY_WORKER = """
import importlib.util
import logging
import os
import socket
import sys
import time

spec = importlib.util.spec_from_file_location("side", sys.argv[1])
side = importlib.util.module_from_spec(spec)
spec.loader.exec_module(side)


def op_open(cmd):
    side.audit_connections(*cmd["endpoint"])
    logging.getLogger().addHandler(side.Reports())
    return {"versions": side.versions(("no-such-distribution",))}


def op_echo(cmd):
    logging.getLogger("toy").warning("halfway through %s", cmd["text"])
    side.send("sync")
    sys.stdin.readline()
    print("printed by the library")
    return {"text": cmd["text"].upper()}


def op_fail(cmd):
    raise ValueError("no such\\nthing")


def op_connect(cmd):
    socket.create_connection(("127.0.0.1", cmd["port"]), timeout=1)
    return {}


def op_die(cmd):
    print("the toy library is broken", file=sys.stderr, flush=True)
    os._exit(3)


def op_sleep(cmd):
    time.sleep(cmd["seconds"])
    return {}


OPS = {"open": op_open, "echo": op_echo, "fail": op_fail, "connect": op_connect, "die": op_die, "sleep": op_sleep}
side.serve(OPS, close=lambda: print("toy closed", file=sys.stderr, flush=True))
"""


@pytest.fixture()
def toy(tmp_path, monkeypatch) -> VenvLibrary:
    plugin = tmp_path / "plugins" / "toy"
    plugin.mkdir(parents=True)
    script = plugin / "_worker.py"
    script.write_text(TOY_WORKER, "utf-8")
    monkeypatch.setenv("MB_TOY_PYTHON", sys.executable)
    return VenvLibrary(method="toy", title="Toy", plugin_dir=plugin, python_env="MB_TOY_PYTHON", script=script)


@pytest.fixture()
def log(tmp_path):
    with (tmp_path / "toy.log").open("a", encoding="utf-8") as f:
        yield f


def started(toy: VenvLibrary, log: Any, reports: list[dict[str, Any]] | None = None) -> Worker:
    worker = Worker(toy, log, (reports if reports is not None else []).append)
    opened = worker.request("open", timeout=60, endpoint=["127.0.0.1", 8])
    assert opened["versions"] == {"no-such-distribution": None}
    return worker


def test_a_command_is_answered_with_its_reports_on_the_way(toy, log, tmp_path):
    reports: list[dict[str, Any]] = []
    worker = started(toy, log, reports)
    out = worker.request("echo", timeout=60, text="hello")
    assert out["event"] == "result" and out["op"] == "echo" and out["text"] == "HELLO"
    assert out["connections"] == [] and out["refused"] == []
    (report,) = reports
    assert report["logger"] == "toy" and report["level"] == "WARNING" and report["message"] == "halfway through hello"
    assert worker.close() == {"event": "result", "op": "close", "tried": []}
    assert worker.proc.returncode == 0
    kept = (tmp_path / "toy.log").read_text("utf-8")  # stderr, and what the library printed, is its log
    assert "printed by the library" in kept and "toy closed" in kept


def test_the_library_raising_is_a_worker_error_and_the_worker_goes_on(toy, log):
    worker = started(toy, log)
    with pytest.raises(WorkerError) as raised:
        worker.request("fail", timeout=60)
    e = raised.value
    assert (e.op, e.kind, e.message, e.refused) == ("fail", "ValueError", "no such thing", [])
    assert "Traceback" in e.trace and "op_fail" in e.trace
    assert worker.request("echo", timeout=60, text="again")["text"] == "AGAIN"
    worker.close()


def test_a_connection_elsewhere_is_refused_in_the_worker(toy, log):
    worker = started(toy, log)
    with pytest.raises(WorkerError) as raised:
        worker.request("connect", timeout=60, port=9)
    e = raised.value
    assert (e.op, e.kind, e.message, e.refused) == (
        "connect",
        "ConnectionRefusedError",
        "connection to 127.0.0.1:9 refused",
        [["127.0.0.1", 9]],
    )
    worker.proc.wait(timeout=30)
    assert worker.proc.returncode == 4  # it stopped at once
    assert worker.close() is None


def test_a_worker_that_dies_is_one_line_with_its_last_words(toy, log):
    worker = started(toy, log)
    with pytest.raises(UserError) as died:
        worker.request("die", timeout=60)
    message = str(died.value)
    assert message.startswith("memory=toy: Toy's worker exited (code 3) during 'die': the toy library is broken")
    assert message.endswith("its log is memory/toy/toy.log in the pack") and "\n" not in message
    with pytest.raises(UserError, match=r"exited \(code 3\) during 'echo'"):  # and stays dead
        worker.request("echo", timeout=60, text="x")


def test_a_worker_past_its_deadline_is_stopped_with_one_line(toy, log):
    worker = started(toy, log)
    with pytest.raises(UserError) as late:
        worker.request("sleep", timeout=1, seconds=60)
    assert str(late.value) == "memory=toy: Toy's worker did not finish 'sleep' within 1 s; stopped"
    assert worker.proc.poll() is not None
    worker.close()


def test_no_interpreter_is_one_line(toy, log, tmp_path, monkeypatch):
    monkeypatch.delenv("MB_TOY_PYTHON")
    with pytest.raises(UserError) as missing:
        Worker(toy, log, lambda event: None)
    where = tmp_path / "plugins" / "toy" / ".venv" / "bin" / "python"
    assert str(missing.value) == f"memory=toy: no Toy environment at {where}; install it with `bash plugins/toy/install.sh`"


def test_the_environment_is_found_and_read_without_starting_it(toy, tmp_path, monkeypatch):
    venv = tmp_path / "plugins" / "toy" / ".venv"
    assert toy.python() == Path(sys.executable)  # the variable names it
    monkeypatch.delenv("MB_TOY_PYTHON")
    assert toy.python() == venv / "bin" / "python" and toy.versions(("toy-lib",)) == {"toy-lib": None}
    with pytest.raises(UserError) as missing:
        toy.check_pins({"toy-lib": "1.2.3"}, "its store")
    assert (
        str(missing.value)
        == f"memory=toy: no Toy environment at {venv / 'bin' / 'python'}; install it with `bash plugins/toy/install.sh`"
    )

    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").write_text("", "utf-8")
    site = venv / "lib" / "python3.11" / "site-packages"
    (site / "Toy_Lib-1.2.3.dist-info").mkdir(parents=True)
    assert toy.site_packages() == site
    assert toy.versions(("toy-lib", "other")) == {"toy-lib": "1.2.3", "other": None}
    assert toy.check_pins({"toy-lib": "1.2.3"}, "its store") == venv / "bin" / "python"
    with pytest.raises(UserError) as other:
        toy.check_pins({"toy-lib": "9.9"}, "its store")
    assert str(other.value) == (
        f"memory=toy was written for toy-lib 9.9 (its store), but toy-lib 1.2.3 is installed in {venv}; "
        "reinstall the plugin's pins with `bash plugins/toy/install.sh`"
    )
    with pytest.raises(UserError, match=r"^memory=toy needs other 1 in .*, which has none; install it with"):
        toy.check_pins({"other": "1"}, "its store")
    monkeypatch.setenv("MB_TOY_PYTHON", str(tmp_path / "nowhere"))
    with pytest.raises(UserError, match=r"no Toy environment at .*nowhere \(MB_TOY_PYTHON\); install it"):
        toy.check_pins({"toy-lib": "1.2.3"}, "its store")
    assert host_port("http://127.0.0.1:4567/v1") == ("127.0.0.1", 4567) and host_port("http://localhost/v1") == ("localhost", 80)


def test_plain_strings_bounds_every_free_string():
    schema = {"type": "object", "properties": {"a": {"type": "string", "maxLength": 5}, "b": {"type": "string", "enum": ["x"]}}}
    out = plain_strings(schema)
    assert out["properties"]["a"]["pattern"] == '^[^"\\\\\\x00-\\x1F]{0,5}$' and "pattern" not in out["properties"]["b"]
    pattern = out["properties"]["a"]["pattern"][1:-1]
    assert re.fullmatch(pattern, "ab c") and not re.fullmatch(pattern, "a\nb")
    assert "pattern" not in schema["properties"]["a"]  # a copy


def test_the_store_words_are_those_both_empty_stores_hold():
    stores = [
        ("/tmp/mb-toy-empty-x/store0", {"a.db": "CREATE TABLE notebooks 9f3ab2 deadbeef qa zz", "log": "running store0"}),
        ("/tmp/mb-toy-empty-x/store1", {"b.db": "create table notebooks 77ce01 cafe"}),
    ]
    assert fixed_words(stores) == ["create", "notebooks", "table"]
