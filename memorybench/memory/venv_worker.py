"""A wrapped library in a virtual environment of its own, behind a worker process: memorybench's side.

Some libraries cannot share memorybench's environment (cognee pins `openai<3`, MemOS
`openai<2`; memorybench needs `openai>=3.50`). Their plugin keeps the library in
`plugins/<name>/.venv` (made by its `install.sh`, ignored by git) and runs a worker script
there (`_worker.py`), one process per conversation, with that environment's Python and `-I`
(no user site, no working directory on sys.path: the library's environment only). The
plugin writes what is its library's own (the worker's commands and settings, its prompts);
what every such plugin shares is here:

- `VenvLibrary`: which library and where its environment is: `python()` (an environment
  variable if set, else `plugins/<name>/.venv/bin/python`; not a config key: a path on one
  machine must not change the run id), `versions(names)` (each distribution's version as the
  environment's `*.dist-info` says, read without starting it: run_meta.json's
  `plugins[].wraps`), `check_pins` (one line when the environment is missing or holds other
  versions than the plugin was written for).
- `Worker`: one worker process. Events are read on a thread of their own into a queue, so a
  command can wait with a deadline and a worker that dies is seen at once (EOF), with the
  last lines it wrote to stderr; what it writes to stderr (the library's own console log) is
  kept in the pack (`log`). `WorkerError`: the library raised in the worker.
- `host_port(base_url)`: the one address the worker may connect to.

The protocol is JSON lines. memorybench writes commands to the worker's stdin (`{"op": ...,
...}`, `close` last); the worker writes events to its protocol channel (the stdout it started
with; its stdout is then pointed at stderr, so that what the library prints cannot mix with
it): `result` (a command's answer, with the connections it tried), `error` (the library
raised: its type, message and traceback, and any connection the socket audit refused),
`report` (a record the library logged while a command ran: handed to `on_report` as it
arrives), `sync` (a worker waits there until every event before it is handled: answered
with an `ack` line). The worker's side of it (the command loop, the socket audit, the log
handler) is `_venv_worker_side.py` beside this module: standard library only, loaded by the
worker script from the path it gets as its first argument (memorybench itself cannot be
imported there). `memorybench.memory.venv_method` is the memory method's plumbing over this,
`memorybench.memory.venv_store_words` the words every store of the library holds.
"""

from __future__ import annotations

import json
import os
import queue
import re
import subprocess
import threading
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from memorybench.errors import UserError

#: the worker's side of the protocol, passed to the worker script as its first argument
WORKER_SIDE = Path(__file__).with_name("_venv_worker_side.py")
#: stderr lines kept for an error message
TAIL = 12


@dataclass(frozen=True)
class VenvLibrary:
    """A library that lives in its plugin's own environment (module doc)."""

    #: the memory option (`memory=cognee`): the prefix of every message
    method: str
    #: the library's name in messages ("cognee", "MemOS")
    title: str
    #: the plugin's folder (`plugins/cognee`), where `.venv` and `install.sh` are
    plugin_dir: Path
    #: the environment variable that names another interpreter (`MEMORYBENCH_COGNEE_PYTHON`)
    python_env: str
    #: the worker script, run by the environment's interpreter
    script: Path

    @property
    def default_venv(self) -> Path:
        return self.plugin_dir / ".venv"

    @property
    def install(self) -> str:
        """The plugin's one install command."""
        return f"bash plugins/{self.plugin_dir.name}/install.sh"

    @property
    def pack_log(self) -> str:
        """Where the worker's stderr is kept in the pack."""
        return f"memory/{self.method}/{self.method}.log"

    def python(self) -> Path:
        """The environment's interpreter: `python_env` if set, else `.venv/bin/python` of the plugin."""
        named = os.environ.get(self.python_env)
        return Path(named) if named else self.default_venv / "bin" / "python"

    def site_packages(self, interpreter: Path | None = None) -> Path | None:
        """The site-packages folder of the environment `interpreter` belongs to (None: none found)."""
        venv = (interpreter or self.python()).parent.parent
        found = sorted(venv.glob("lib/python3*/site-packages"))
        return found[0] if found else None

    def versions(self, names: tuple[str, ...]) -> dict[str, str | None]:
        """The environment's version of each name (from its dist-info; None: not there)."""
        site = self.site_packages()
        out: dict[str, str | None] = {n: None for n in names}
        if site is None:
            return out
        for info in site.glob("*.dist-info"):
            dist, _, rest = info.name.removesuffix(".dist-info").partition("-")
            for n in names:
                if _normal(dist) == _normal(n):
                    out[n] = rest
        return out

    def check_pins(self, pinned: Mapping[str, str], shaped: str) -> Path:
        """One line when the environment is missing, or holds other versions than `pinned`
        (`shaped`: what of the plugin those versions shape, "its prompts, its store, its
        search"); the environment's interpreter otherwise."""
        python = self.python()
        if not python.is_file():
            named = f" ({self.python_env})" if self.python_env in os.environ else ""
            raise UserError(
                f"memory={self.method}: no {self.title} environment at {python}{named}; install it with `{self.install}`"
            )
        have = self.versions(tuple(pinned))
        for name, want in pinned.items():
            if have.get(name) is None:
                raise UserError(
                    f"memory={self.method} needs {name} {want} in {python.parent.parent}, which has none; "
                    f"install it with `{self.install}`"
                )
            if have[name] != want:
                raise UserError(
                    f"memory={self.method} was written for {name} {want} ({shaped}), but {name} "
                    f"{have[name]} is installed in {python.parent.parent}; reinstall the plugin's pins with `{self.install}`"
                )
        return python


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()


class WorkerError(Exception):
    """The library raised inside the worker: its type, message and traceback."""

    def __init__(self, op: str, kind: str, message: str, trace: str, refused: list[Any]) -> None:
        super().__init__(f"{kind}: {message}")
        self.op, self.kind, self.message, self.trace, self.refused = op, kind, message, trace, refused


class Worker:
    """The worker process of one conversation (module doc)."""

    def __init__(
        self,
        library: VenvLibrary,
        log: TextIO,
        on_report: Callable[[dict[str, Any]], None],
        python: Path | None = None,
    ) -> None:
        python = python or library.python()
        if not python.is_file():
            raise UserError(
                f"memory={library.method}: no {library.title} environment at {python}; install it with `{library.install}`"
            )
        self.library, self.python, self.log, self.on_report = library, python, log, on_report
        self.tail: deque[str] = deque(maxlen=TAIL)
        self.events: queue.Queue[dict[str, Any] | None] = queue.Queue()
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
        env["PYTHONUNBUFFERED"] = "1"
        self.proc = subprocess.Popen(
            # -I: no user site, no cwd on sys.path: only the library's environment
            [str(python), "-I", str(library.script), str(WORKER_SIDE)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            encoding="utf-8",
            env=env,
            start_new_session=True,
        )
        self._threads = [
            threading.Thread(target=self._read_events, name=f"{library.method}-worker-events", daemon=True),
            threading.Thread(target=self._read_stderr, name=f"{library.method}-worker-stderr", daemon=True),
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
        A `WorkerError` when the library raised; a UserError when the worker died or timed out."""
        if self.proc.poll() is not None:
            raise self._died(op)
        try:
            self._write({"op": op, **fields})
        except (BrokenPipeError, OSError):
            raise self._died(op) from None
        name = f"memory={self.library.method}: {self.library.title}'s worker"
        while True:
            try:
                event = self.events.get(timeout=timeout)
            except queue.Empty:
                self.kill()
                raise UserError(f"{name} did not finish {op!r} within {timeout:.0f} s; stopped") from None
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
            f"memory={self.library.method}: {self.library.title}'s worker exited (code {code}) during {op!r}: "
            f"{last or 'no output'}; its log is {self.library.pack_log} in the pack"
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
