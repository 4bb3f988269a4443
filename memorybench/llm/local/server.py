"""`LocalServer`: llama.cpp's OpenAI-compatible server for an embedded model, as a child
process on 127.0.0.1 that never outlives memorybench.

    # the longest prompt's text (system + user): counted with each model's own tokenizer
    spec, n_ctx, reason = choose_local_model(longest_prompt_text)
    with LocalServer(spec, n_ctx) as server:
        client = ChatClient(base_url=server.base_url, api_key=None)
        ...  # requests name model=server.model_id

Endpoints: ``GET /v1/models`` answers ``[{"id": spec.name}]``; ``POST /v1/chat/completions``
takes ``max_tokens``, ``temperature``, ``seed``, ``stop`` and
``response_format={"type": "json_object"}`` (grammar-constrained JSON; the grammar does
not hurry the model to close the object, so leave ``max_tokens`` room or the JSON is cut).
A ``{"type": "json_schema", ...}`` response format is answered with HTTP 500 by
llama-cpp-python 0.3.36's server (its request model allows only ``text`` and
``json_object``): use ``json_object``. Every completion names the model
``spec.name`` whatever the request asked for.

Lifecycle guards, in order of what they cover:

- ``stop()`` / the ``with`` block / an exception or Ctrl-C through it: SIGTERM to the
  server's process group (it runs in its own session, so a terminal's Ctrl-C reaches
  only memorybench, which then stops it), SIGKILL after a grace period;
- interpreter exit without ``stop()``: an ``atexit`` hook stops every live server;
- SIGTERM / SIGHUP to memorybench: handlers (installed while a server is live, from the
  main thread only) stop the servers, then chain to the handler that was there before
  (or re-deliver the signal with the default action, so the exit status is unchanged);
- SIGKILL of memorybench: the child asked the kernel for SIGKILL on its parent's death
  (``prctl(PR_SET_PDEATHSIG)``; only when started from the main thread, because the
  kernel ties it to the creating *thread*), and a watcher thread in the child exits it
  when its parent pid changes.
"""

from __future__ import annotations

import atexit
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path
from types import FrameType
from typing import Any

from memorybench._process import start_group, stop_group
from memorybench.llm.local.models import LocalModelError, LocalModelSpec

EXIT_PORT_TAKEN = 98  # keep in step with serve.py (not imported: it is the child's module)
PORT_ATTEMPTS = 5
STOP_GRACE_S = 5.0


#: the prefill store's default bound in MiB (``$MEMORYBENCH_PREFILL_CACHE_MB`` overrides; 0: off)
DEFAULT_PREFILL_CACHE_MB = 4096


def prefill_cache_mb() -> int:
    """The bound of the on-disk prefill store, MiB: ``$MEMORYBENCH_PREFILL_CACHE_MB`` or 4096."""
    raw = os.environ.get("MEMORYBENCH_PREFILL_CACHE_MB", "").strip()
    try:
        return max(0, int(raw)) if raw else DEFAULT_PREFILL_CACHE_MB
    except ValueError:
        raise LocalModelError(
            f"MEMORYBENCH_PREFILL_CACHE_MB={raw!r} is not a whole number of MiB; set it to e.g. 4096, or 0 to keep no prefill on disk"
        ) from None


def free_port(host: str = "127.0.0.1") -> int:
    """A port that was free a moment ago (bind port 0, read it, release it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


class _PortTaken(Exception):
    pass


def _tail(path: Path, lines: int = 15) -> str:
    try:
        with path.open("rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - 16384))
            text = f.read().decode("utf-8", "replace")
    except OSError:
        return ""
    return " | ".join(line.strip() for line in text.splitlines()[-lines:] if line.strip())


def _package_root() -> str:
    import memorybench

    return str(Path(memorybench.__file__).resolve().parent.parent)


class LocalServer:
    """One llama.cpp server process serving `spec` with context `n_ctx`.

    `port` None picks a free port (retrying with another one if it is taken by the time
    the server binds it); an explicit `port` that is taken raises `LocalModelError`.
    The server's output goes to `log_path` (default: a file in the temporary folder,
    removed after a clean stop, kept when an error names it).

    `prefix_reuse`: ``"exact"`` (default) reuses the previous prompt's KV cache only in
    chunks that a fresh evaluation would compute identically (see
    :mod:`memorybench.llm.local.prefix_reuse`), so each answer is bitwise what a fresh
    server gives, independent of question order and hence of resuming; it re-evaluates the
    prompt's last paragraph (the question). ``"token"`` is llama-cpp-python's plain reuse
    of the longest common prefix: a few tokens less, but an answer may change with the
    question asked before it.

    `prefill_dir` (exact reuse only): a folder where the KV state of a memory prefix is kept
    and from which a later server process restores it instead of evaluating it (see
    :mod:`memorybench.llm.local.prefill_store`), bounded to `prefill_max_mb` MiB (None:
    ``$MEMORYBENCH_PREFILL_CACHE_MB``, else 4096; 0: off). None keeps nothing on disk.
    """

    def __init__(
        self,
        spec: LocalModelSpec,
        n_ctx: int,
        *,
        n_threads: int | None = None,
        log_path: Path | None = None,
        host: str = "127.0.0.1",
        port: int | None = None,
        n_batch: int = 512,
        flash_attn: bool = True,
        startup_timeout_s: float = 180.0,
        verbose: bool = True,
        prefix_reuse: str = "exact",
        prefill_dir: Path | None = None,
        prefill_max_mb: int | None = None,
    ) -> None:
        if n_ctx < 256 or n_ctx > spec.max_context:
            raise LocalModelError(f"n_ctx {n_ctx} is outside 256..{spec.max_context} for local model {spec.name}")
        self.spec = spec
        self.n_ctx = int(n_ctx)
        self.n_threads = n_threads
        self.host = host
        self.requested_port = port
        self.n_batch = n_batch
        self.flash_attn = flash_attn
        self.startup_timeout_s = startup_timeout_s
        self.verbose = verbose
        if prefix_reuse not in ("exact", "token"):
            raise LocalModelError(f"prefix_reuse={prefix_reuse!r}: choose exact or token")
        self.prefix_reuse = prefix_reuse
        self.prefill_dir = Path(prefill_dir) if prefill_dir is not None else None
        self.prefill_max_mb = prefill_max_mb if prefill_max_mb is not None else prefill_cache_mb()
        self._own_log = log_path is None
        self.log_path: Path = Path(log_path) if log_path is not None else self._temp_log()
        self.port: int | None = None
        self.process: subprocess.Popen[bytes] | None = None
        self.startup_s: float | None = None
        self._log_file: Any = None
        self._owner_pid = os.getpid()  # a forked copy of this object must not stop our server
        self._lock = threading.RLock()  # a signal handler may stop() inside start()

    # -- public -----------------------------------------------------------------------
    @property
    def model_id(self) -> str:
        return self.spec.name

    @property
    def base_url(self) -> str:
        if self.port is None:
            raise LocalModelError(f"local server for {self.spec.name} is not started")
        return f"http://{self.host}:{self.port}/v1"

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process is not None else None

    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def __enter__(self) -> LocalServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> LocalServer:
        with self._lock:
            if self.running():
                return self
            model_path = self.spec.path()  # verifies the sha256 (cached per process)
            self._owner_pid = os.getpid()
            t0 = time.monotonic()
            _register(self)  # from here on, atexit and the signal handlers cover it
            try:
                self._start_on_some_port(model_path)
            except BaseException as e:
                self._kill()
                _unregister(self)
                if self._own_log and str(self.log_path) not in str(e):
                    self.log_path.unlink(missing_ok=True)  # keep a temporary log only if the error names it
                raise
            self.startup_s = time.monotonic() - t0
            return self

    def _start_on_some_port(self, model_path: Path) -> None:
        for _attempt in range(PORT_ATTEMPTS):
            port = self.requested_port if self.requested_port is not None else free_port(self.host)
            try:
                self._spawn(model_path, port)
                self._wait_ready(port)
            except _PortTaken:
                self._kill()
                if self.requested_port is not None:
                    raise LocalModelError(
                        f"port {port} on {self.host} is already in use; choose another port or leave it unset"
                    ) from None
                continue
            self.port = port
            return
        raise LocalModelError(
            f"could not find a free port for the local server after {PORT_ATTEMPTS} attempts; see {self.log_path}"
        )

    def stop(self) -> None:
        if os.getpid() != self._owner_pid:  # we are a fork: the server belongs to the parent
            self.process = None
            self._log_file = None
            return
        with self._lock:
            clean = self.process is not None and self.process.poll() is None
            self._kill()
            _unregister(self)
            self.port = None
            if clean and self._own_log:
                self.log_path.unlink(missing_ok=True)

    def rss_bytes(self) -> int | None:
        """Resident memory of the server process (Linux /proc), or None."""
        if not self.running():
            return None
        try:
            for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
        except OSError:
            return None
        return None

    # -- internals --------------------------------------------------------------------
    def _temp_log(self) -> Path:
        # a fresh name only: the file is created when the server starts
        name = f"memorybench-llama-{self.spec.name}-{os.getpid()}-{uuid.uuid4().hex[:8]}.log"
        return Path(tempfile.gettempdir()) / name

    def _command(self, model_path: Path, port: int, pdeathsig: bool) -> list[str]:
        cmd = [
            sys.executable, "-m", "memorybench.llm.local.serve",
            "--model", str(model_path),
            "--alias", self.spec.name,
            "--n-ctx", str(self.n_ctx),
            "--host", self.host,
            "--port", str(port),
            "--n-batch", str(self.n_batch),
            "--prefix-reuse", self.prefix_reuse,
            "--parent-pid", str(os.getpid()),
        ]  # fmt: skip
        if self.spec.chat_format:
            cmd += ["--chat-format", self.spec.chat_format]
        if self.prefill_dir is not None and self.prefill_max_mb > 0 and self.prefix_reuse == "exact":
            cmd += [
                "--prefill-dir",
                str(self.prefill_dir),
                "--prefill-max-mb",
                str(self.prefill_max_mb),
                "--model-sha256",
                self.spec.sha256,
            ]  # spec.path() verified the file against it
        if self.n_threads:
            cmd += ["--n-threads", str(self.n_threads)]
        if not self.flash_attn:
            cmd.append("--no-flash-attn")
        if pdeathsig:
            cmd.append("--pdeathsig")
        if not self.verbose:
            cmd.append("--quiet")
        return cmd

    def _spawn(self, model_path: Path, port: int) -> None:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log_file = self.log_path.open("ab")
        self._log_file.write(f"--- memorybench: starting {self.spec.name} on port {port}\n".encode())
        self._log_file.flush()
        env = dict(os.environ)
        env["PYTHONUNBUFFERED"] = "1"
        env["PYTHONPATH"] = os.pathsep.join(p for p in (_package_root(), env.get("PYTHONPATH", "")) if p)
        # prctl(PR_SET_PDEATHSIG) follows the creating thread; a worker thread that ends
        # would take the server with it, so only the main thread asks for it.
        pdeathsig = sys.platform.startswith("linux") and threading.current_thread() is threading.main_thread()
        # own process group: Ctrl-C reaches us, we stop it
        self.process = start_group(
            self._command(model_path, port, pdeathsig),
            stdin=subprocess.DEVNULL,
            stdout=self._log_file,
            stderr=subprocess.STDOUT,
            env=env,
            close_fds=True,
        )

    def _wait_ready(self, port: int) -> None:
        url = f"http://{self.host}:{port}/v1/models"
        deadline = time.monotonic() + self.startup_timeout_s
        while True:
            process = self.process
            if process is None:
                raise LocalModelError(f"local server for {self.spec.name} was stopped while starting")
            code = process.poll()
            if code is not None:
                tail = _tail(self.log_path)
                if code == EXIT_PORT_TAKEN or "address already in use" in tail.lower():
                    raise _PortTaken()
                if code == -signal.SIGILL:
                    raise LocalModelError(
                        f"local server for {self.spec.name} died of SIGILL (illegal instruction) at start: "
                        "llama-cpp-python was compiled for CPU features this machine does not run (typically "
                        "AMX advertised by a VM that does not enable it); fix: reinstall it without them, "
                        'CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON" '
                        'pip install --force-reinstall --no-deps --no-cache-dir "llama-cpp-python[server]==0.3.36"; '
                        f"log {self.log_path}"
                    )
                raise LocalModelError(
                    f"local server for {self.spec.name} exited with code {code} before it was ready; "
                    f"log {self.log_path}: {tail[-1500:]}"
                )
            ids = self._model_ids(url)
            if ids is not None:
                if self.spec.name in ids:
                    return
                raise _PortTaken()  # another server answers on this port
            if time.monotonic() > deadline:
                raise LocalModelError(
                    f"local server for {self.spec.name} did not answer {url} within "
                    f"{self.startup_timeout_s:.0f}s; log {self.log_path}: {_tail(self.log_path)[-1500:]}"
                )
            time.sleep(0.2)

    @staticmethod
    def _model_ids(url: str) -> list[str] | None:
        try:
            with urllib.request.urlopen(url, timeout=2.0) as reply:  # noqa: S310 (127.0.0.1)
                payload = json.loads(reply.read().decode("utf-8"))
        except (urllib.error.URLError, OSError, ValueError):
            return None
        try:
            return [str(m["id"]) for m in payload["data"]]
        except (KeyError, TypeError):
            return []

    def _kill(self) -> None:
        proc = self.process
        if proc is not None:
            if proc.poll() is None:  # not reaped yet: its pid still names its group
                stop_group(proc, grace_s=STOP_GRACE_S)
            self.process = None
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None


# -- process-wide cleanup: atexit and signal handlers --------------------------------------
_LIVE: set[LocalServer] = set()
_LIVE_LOCK = threading.RLock()
_PREVIOUS_HANDLERS: dict[int, Any] = {}
_HANDLED_SIGNALS = (signal.SIGTERM, signal.SIGHUP) if hasattr(signal, "SIGHUP") else (signal.SIGTERM,)
_ATEXIT_DONE = False


def stop_all() -> None:
    """Stop every server this process started and has not stopped yet."""
    with _LIVE_LOCK:
        servers = list(_LIVE)
    for server in servers:
        try:
            server.stop()
        except Exception:  # noqa: BLE001 - best effort at exit
            pass


def _on_signal(signum: int, frame: FrameType | None) -> None:
    previous = _PREVIOUS_HANDLERS.pop(signum, signal.SIG_DFL)  # before stop_all restores them
    stop_all()
    if callable(previous):
        signal.signal(signum, previous)
        previous(signum, frame)
        return
    # default action: die by the same signal, so the exit status says what happened
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)


def _install_handlers() -> None:
    global _ATEXIT_DONE
    if not _ATEXIT_DONE:
        atexit.register(stop_all)
        _ATEXIT_DONE = True
    if threading.current_thread() is not threading.main_thread():
        return  # signal.signal only works there; atexit and the child's guards remain
    for sig in _HANDLED_SIGNALS:
        if sig in _PREVIOUS_HANDLERS:
            continue
        current = signal.getsignal(sig)
        if current in (signal.SIG_IGN, _on_signal) or current is None:
            continue  # ignored (e.g. nohup's SIGHUP): leave it so
        _PREVIOUS_HANDLERS[sig] = current
        signal.signal(sig, _on_signal)


def _restore_handlers() -> None:
    if threading.current_thread() is not threading.main_thread():
        return
    for sig, previous in list(_PREVIOUS_HANDLERS.items()):
        if signal.getsignal(sig) is _on_signal:
            signal.signal(sig, previous)
        del _PREVIOUS_HANDLERS[sig]


def _register(server: LocalServer) -> None:
    with _LIVE_LOCK:
        _LIVE.add(server)
        _install_handlers()


def _unregister(server: LocalServer) -> None:
    with _LIVE_LOCK:
        _LIVE.discard(server)
        if not _LIVE:
            _restore_handlers()
