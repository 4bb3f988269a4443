"""memorybench's side of the process boundary: the Hindsight worker (`_worker.py`) in the plugin's own venv.

`Worker` starts `<venv>/bin/python _worker.py endpoint=... timeout=...` in a process group
of its own, sends one JSON request per line and reads the reply; `{"report": ...}` lines
that come before a reply (Hindsight's log records at WARNING and above) are handed to
`on_report` as they arrive, so the recording endpoint journals them with the call they
followed. The worker's stderr (Hindsight's logs, PostgreSQL's start-up lines) goes to a log
file the caller names. Which venv: `MEMORYBENCH_HINDSIGHT_PYTHON` if set, else the plugin's
`plugins/hindsight/.venv` (made by `plugins/hindsight/install.sh`).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from memorybench.errors import UserError

PLUGIN_DIR = Path(__file__).resolve().parents[1]
WORKER = Path(__file__).resolve().parent / "_worker.py"
INSTALL = "bash plugins/hindsight/install.sh"
PYTHON_ENV = "MEMORYBENCH_HINDSIGHT_PYTHON"
#: what the worker's environment keeps of ours (no key of any provider, no proxy setting)
KEPT_ENV = ("PATH", "LANG", "LC_ALL", "TZ", "TMPDIR", "HOME", "SYSTEMROOT")


def worker_python() -> Path:
    """The Python of Hindsight's venv; one line when there is none."""
    named = os.environ.get(PYTHON_ENV)
    python = Path(named) if named else PLUGIN_DIR / ".venv" / "bin" / "python"
    if not python.is_file():
        where = f"{PYTHON_ENV}={named}" if named else str(python)
        raise UserError(
            f"memory=hindsight runs Hindsight in a venv of its own, and {where} is not there; make it with `{INSTALL}`"
        )
    return python


class WorkerError(Exception):
    """A request the worker answered with a failure: `op` and Hindsight's own message."""

    def __init__(self, op: str, message: str) -> None:
        super().__init__(message)
        self.op = op


class Worker:
    """One Hindsight worker process (a context manager)."""

    def __init__(
        self,
        *,
        endpoint: str = "http://127.0.0.1:9/v1",
        api_key: str = "none",
        timeout_s: float = 900.0,
        log: Path | None = None,
        on_report: Callable[[dict[str, Any]], None] | None = None,
    ) -> None:
        self.python = worker_python()
        self.endpoint, self.api_key, self.timeout_s = endpoint, api_key, timeout_s
        self.log_path = log
        self.on_report = on_report
        self.proc: subprocess.Popen[str] | None = None
        self._log: IO[str] | None = None
        #: every connection the worker made (its audit hook), and any it refused
        self.connects: list[str] = []
        self.refused: list[str] = []

    def __enter__(self) -> Worker:
        env = {k: os.environ[k] for k in KEPT_ENV if k in os.environ}
        env["MB_HINDSIGHT_KEY"] = self.api_key  # the endpoint's own per-run key, not a provider's
        env["PYTHONUNBUFFERED"] = "1"
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        if self.log_path is not None:
            self.log_path.parent.mkdir(parents=True, exist_ok=True)
            self._log = open(self.log_path, "a", encoding="utf-8")  # noqa: SIM115 - closed in __exit__
        self.proc = subprocess.Popen(
            [str(self.python), str(WORKER), f"endpoint={self.endpoint}", f"timeout={self.timeout_s}"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log if self._log is not None else subprocess.DEVNULL,
            text=True,
            encoding="utf-8",
            env=env,
            cwd=str(PLUGIN_DIR),
            start_new_session=True,  # its own process group: killed as one on a timeout
        )
        return self

    def call(self, op: str, **req: Any) -> dict[str, Any]:
        """Send one request; the worker's reply (WorkerError on a failure it reports)."""
        proc = self.proc
        assert proc is not None and proc.stdin is not None and proc.stdout is not None
        try:
            proc.stdin.write(json.dumps({"op": op, **req}) + "\n")
            proc.stdin.flush()
        except BrokenPipeError:
            raise WorkerError(op, f"the Hindsight worker has exited ({self._tail()})") from None
        while True:
            line = proc.stdout.readline()
            if not line:
                proc.wait(timeout=30)
                raise WorkerError(op, f"the Hindsight worker exited with code {proc.returncode} ({self._tail()})")
            reply = json.loads(line)
            if "report" in reply:
                if self.on_report is not None:
                    self.on_report(reply["report"])
                continue
            self.connects += [c for c in reply.get("connects", []) if c not in self.connects]
            self.refused = list(reply.get("refused", []))
            if not reply.get("ok"):
                raise WorkerError(op, str(reply.get("error")))
            return reply

    def _tail(self) -> str:
        if self.log_path is None or not self.log_path.is_file():
            return "no log"
        lines = [line for line in self.log_path.read_text("utf-8", errors="replace").splitlines() if line.strip()]
        return f"its log {self.log_path} ends: {' '.join(' '.join(lines[-3:]).split())[:300]}"

    def __exit__(self, *exc: object) -> None:
        proc = self.proc
        if proc is None:
            return
        try:
            if proc.poll() is None and proc.stdin is not None:
                try:
                    proc.stdin.write(json.dumps({"op": "stop"}) + "\n")
                    proc.stdin.close()
                except (BrokenPipeError, OSError):
                    pass
                proc.wait(timeout=120)  # it stops PostgreSQL and removes the cluster's folder
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        finally:
            if proc.stdout is not None:
                proc.stdout.close()
            if self._log is not None:
                self._log.close()
            self.proc = None


def describe() -> dict[str, Any]:
    """What the installed Hindsight is and sends (versions, its extraction prompt and reply
    schema), from a worker that starts no database."""
    with Worker() as worker:
        try:
            return worker.call("describe")
        except WorkerError as e:
            raise UserError(
                f"memory=hindsight could not start Hindsight in {worker.python}: {e}; reinstall with `{INSTALL}`"
            ) from None


__all__ = ["INSTALL", "PYTHON_ENV", "Worker", "WorkerError", "describe", "worker_python"]
