"""The parent side of the Responses gateway: one child process per Codex run (see `gateway_server`).

    with GatewayProcess(upstream="https://api.openai.com/v1", key_env="OPENAI_API_KEY") as gateway:
        gateway.base_url                     # what Codex's model provider points at (no key needed)
        gateway.begin(question_id, sample_id, "answer", budget={"max_requests": 8})
        ...                                  # one `codex exec` process
        report = gateway.end()               # its requests, each accounted, and any refused by the budget

The child runs in its own process group (`memorybench._process.start_group`) and holds the
key: it reads it from its environment by the variable's *name*; the key is on no command
line and never in the Codex process's environment, CODEX_HOME or the pack. Control goes
over the child's stdin/stdout pipes, so nothing on the network can open work or read rows.

Lifecycle, as for the embedded llama.cpp server (`memorybench.llm.local.server`): `stop()`
/ the `with` block; an `atexit` hook; and on SIGKILL of memorybench the child exits by
itself (its stdin reaches EOF; `PR_SET_PDEATHSIG` when started from the main thread; a
watcher thread that sees its parent pid change).
"""

from __future__ import annotations

import atexit
import json
import os
import select
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from memorybench._process import start_group, stop_group
from memorybench.errors import UserError

STARTUP_TIMEOUT_S = 30.0
CONTROL_TIMEOUT_S = 30.0
STOP_GRACE_S = 2.0

_LIVE: set[GatewayProcess] = set()
_LIVE_LOCK = threading.Lock()


@dataclass
class GatewayReport:
    """What the gateway saw of one piece of work (one `codex exec` process)."""

    #: one dict per forwarded request, in order (fields of `AgentRequest` minus the run id)
    rows: list[dict[str, Any]] = field(default_factory=list)
    #: requests answered with the budget error instead of being forwarded
    refused: list[dict[str, Any]] = field(default_factory=list)
    #: model requests that arrived while no work was open (not forwarded)
    unattributed: int = 0
    #: forwarded requests whose reply had not ended when the work ended (a process killed at its timeout)
    in_flight: int = 0
    #: other requests passed through (GET /models ...)
    other_requests: int = 0
    #: requests refused for their path, method or body encoding ("POST /v1/chat/completions"): never forwarded
    not_forwarded: list[str] = field(default_factory=list)


def _package_root() -> str:
    import memorybench

    return str(Path(memorybench.__file__).resolve().parent.parent)


class GatewayProcess:
    """One gateway child process forwarding to `upstream` with the key in `$key_env` (None: no key)."""

    def __init__(
        self,
        upstream: str,
        key_env: str | None = None,
        *,
        raw: bool = False,
        max_retries: int = 4,
        timeout_s: float = 600.0,
        log_path: Path | None = None,
    ) -> None:
        self.upstream = upstream
        self.key_env = key_env
        self.raw = raw
        self.max_retries = max_retries
        self.timeout_s = timeout_s
        self.log_path = log_path
        self.process: subprocess.Popen[bytes] | None = None
        self.port: int | None = None
        self._lock = threading.Lock()
        self._owner = os.getpid()
        self._log: IO[bytes] | None = None

    @property
    def base_url(self) -> str:
        if self.port is None:
            raise RuntimeError("the gateway is not started")
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process is not None else None

    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def __enter__(self) -> GatewayProcess:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def command(self, pdeathsig: bool) -> list[str]:
        cmd = [
            sys.executable,
            "-m",
            "memorybench.answer.agent.gateway_server",
            "--upstream",
            self.upstream,
            "--parent-pid",
            str(os.getpid()),
            "--max-retries",
            str(int(self.max_retries)),
            "--timeout-s",
            str(float(self.timeout_s)),
        ]
        if self.key_env:
            cmd += ["--key-env", self.key_env]  # the variable's name; the value stays in the environment
        if self.raw:
            cmd.append("--raw")
        if pdeathsig:
            cmd.append("--pdeathsig")
        return cmd

    def start(self) -> GatewayProcess:
        if self.running():
            return self
        env = dict(os.environ)
        env["PYTHONUNBUFFERED"] = "1"
        env["PYTHONPATH"] = os.pathsep.join(p for p in (_package_root(), env.get("PYTHONPATH", "")) if p)
        pdeathsig = sys.platform.startswith("linux") and threading.current_thread() is threading.main_thread()
        if self.log_path is not None:
            self.log_path.parent.mkdir(parents=True, exist_ok=True)
            self._log = self.log_path.open("ab")
        self._owner = os.getpid()
        self.process = start_group(
            self.command(pdeathsig),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log if self._log is not None else subprocess.DEVNULL,
            env=env,
            close_fds=True,
        )
        with _LIVE_LOCK:
            _LIVE.add(self)
        try:
            hello = self._read_line(STARTUP_TIMEOUT_S)
            self.port = int(hello["port"])
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        if os.getpid() != self._owner:  # a fork's copy: the process is the parent's
            self.process = None
            return
        with self._lock:
            proc, self.process = self.process, None
            self.port = None
            if proc is not None:
                if proc.stdin is not None:
                    try:
                        proc.stdin.close()  # the child exits at EOF
                    except OSError:
                        pass
                try:
                    proc.wait(timeout=STOP_GRACE_S)
                except subprocess.TimeoutExpired:
                    pass
                stop_group(proc, wait_s=10)  # whatever is left of its group
                if proc.stdout is not None:
                    proc.stdout.close()
            if self._log is not None:
                self._log.close()
                self._log = None
        with _LIVE_LOCK:
            _LIVE.discard(self)

    # -- control -------------------------------------------------------------------------
    def _read_line(self, timeout_s: float) -> dict[str, Any]:
        proc = self.process
        assert proc is not None and proc.stdout is not None
        fd = proc.stdout.fileno()
        deadline = time.monotonic() + timeout_s
        line = b""
        while not line.endswith(b"\n"):
            left = deadline - time.monotonic()
            ready, _, _ = select.select([fd], [], [], max(0.0, left))
            if not ready:
                raise UserError(
                    f"the memorybench gateway did not answer within {timeout_s:.0f} s"
                    f"{self._log_hint()}; rerun, or check that {sys.executable} can start"
                )
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                raise UserError(
                    f"the memorybench gateway exited (code {proc.poll()}){self._log_hint()}; "
                    f"check answerer.base_url={self.upstream}"
                )
            line += chunk
        return json.loads(line)

    def _log_hint(self) -> str:
        return f" (log {self.log_path})" if self.log_path is not None else ""

    def _call(self, command: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            proc = self.process
            if proc is None or proc.stdin is None or proc.poll() is not None:
                raise UserError(f"the memorybench gateway is not running{self._log_hint()}; rerun to resume")
            proc.stdin.write((json.dumps(command) + "\n").encode("utf-8"))
            proc.stdin.flush()
            reply = self._read_line(CONTROL_TIMEOUT_S)
        if not reply.get("ok"):
            raise RuntimeError(f"gateway control {command.get('op')}: {reply.get('error')}")
        return reply

    def begin(self, question_id: str | None, sample_id: str, phase: str, budget: dict[str, Any] | None = None) -> None:
        """Open one piece of work: every model request until `end` is counted as its own."""
        self._call({"op": "begin", "question_id": question_id, "sample_id": sample_id, "phase": phase, "budget": budget or {}})

    def end(self) -> GatewayReport:
        reply = self._call({"op": "end"})
        return GatewayReport(
            rows=reply["rows"],
            refused=reply["refused"],
            unattributed=int(reply["unattributed"]),
            in_flight=int(reply.get("in_flight", 0)),
            other_requests=int(reply["other_requests"]),
            not_forwarded=list(reply.get("not_forwarded", [])),
        )


def _stop_all() -> None:
    with _LIVE_LOCK:
        live = list(_LIVE)
    for gateway in live:
        try:
            gateway.stop()
        except Exception:  # noqa: BLE001 - best effort at exit
            pass


atexit.register(_stop_all)
