"""memorybench's end of the MemOS worker: start it, send a command, read its events.

One `Worker` is one process of the MemOS environment's Python running `_worker.py` over
one conversation's store (`mb_memos._worker` says why and what it speaks). Events are read
on a thread of their own into a queue, so a command can wait with a deadline and a worker
that dies is seen at once (EOF), with the last lines it wrote to stderr. What the worker
writes to stderr (MemOS's own console log) is kept in the pack (`log`).
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import threading
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

from memorybench.errors import UserError

WORKER = Path(__file__).with_name("_worker.py")
#: stderr lines kept for an error message
TAIL = 12


class WorkerError(Exception):
    """MemOS raised inside the worker: its type, message and traceback."""

    def __init__(self, op: str, kind: str, message: str, trace: str, refused: list[Any]) -> None:
        super().__init__(f"{kind}: {message}")
        self.op, self.kind, self.message, self.trace, self.refused = op, kind, message, trace, refused


class Worker:
    """The MemOS worker process of one conversation."""

    def __init__(self, python: Path, log: TextIO, on_report: Callable[[dict[str, Any]], None]) -> None:
        if not python.is_file():
            raise UserError(f"memory=memos: no MemOS environment at {python}; install it with `bash plugins/memos/install.sh`")
        self.python, self.log, self.on_report = python, log, on_report
        self.tail: deque[str] = deque(maxlen=TAIL)
        self.events: queue.Queue[dict[str, Any] | None] = queue.Queue()
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
        env["PYTHONUNBUFFERED"] = "1"
        self.proc = subprocess.Popen(
            [str(python), "-I", str(WORKER)],  # -I: no user site, no cwd on sys.path: only the MemOS environment
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            encoding="utf-8",
            env=env,
            start_new_session=True,
        )
        self._threads = [
            threading.Thread(target=self._read_events, name="memos-worker-events", daemon=True),
            threading.Thread(target=self._read_stderr, name="memos-worker-stderr", daemon=True),
        ]
        for t in self._threads:
            t.start()

    def _read_events(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            try:
                self.events.put(json.loads(line))
            except ValueError:
                self.tail.append(line.rstrip())
        self.events.put(None)

    def _read_stderr(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.tail.append(line.rstrip())
            try:
                self.log.write(line)
                self.log.flush()
            except ValueError:  # the log was closed under a dying worker
                pass

    def request(self, op: str, timeout: float | None = None, **fields: Any) -> dict[str, Any]:
        """Send one command and wait for its result; each report on the way goes to `on_report`.
        A `WorkerError` when MemOS raised; a UserError when the worker died or timed out."""
        if self.proc.poll() is not None:
            raise self._died(op)
        try:
            self._write({"op": op, **fields})
        except (BrokenPipeError, OSError):
            raise self._died(op) from None
        while True:
            try:
                event = self.events.get(timeout=timeout)
            except queue.Empty:
                self.kill()
                raise UserError(f"memory=memos: MemOS's worker did not finish {op!r} within {timeout:.0f} s; stopped") from None
            if event is None:
                raise self._died(op)
            kind = event.get("event")
            if kind == "report":
                self.on_report(event)
            elif kind == "sync":  # every event before it is handled: the worker may go on
                try:
                    self._write({"op": "ack"})
                except (BrokenPipeError, OSError):
                    pass  # it died: its EOF follows
            elif kind == "error":
                raise WorkerError(
                    op,
                    str(event.get("type")),
                    str(event.get("message")),
                    str(event.get("traceback") or ""),
                    list(event.get("refused") or []),
                )
            elif kind == "result":
                return event

    def _write(self, line: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(line) + "\n")
        self.proc.stdin.flush()

    def _died(self, op: str) -> UserError:
        try:
            code = self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            code = None
        for t in self._threads:  # its last words: read to the end of its stderr
            t.join(timeout=5)
        last = " | ".join(line for line in self.tail if line.strip())[-600:]
        return UserError(
            f"memory=memos: MemOS's worker exited (code {code}) during {op!r}: {last or 'no output'}; "
            "its log is memory/memos/memos.log in the pack"
        )

    def close(self) -> dict[str, Any] | None:
        """Ask the worker to stop and wait for it; its `close` result (the connections it tried)."""
        out = None
        if self.proc.poll() is None:
            try:
                out = self.request("close", timeout=60)
            except (UserError, WorkerError):
                pass
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.kill()
        for t in self._threads:
            t.join(timeout=5)
        return out

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def host_port(base_url: str) -> tuple[str, int]:
    """(host, port) of an endpoint's base URL: the one address the worker may connect to."""
    from urllib.parse import urlsplit

    parts = urlsplit(base_url)
    return str(parts.hostname), int(parts.port or 80)
