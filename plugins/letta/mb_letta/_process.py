"""The Letta server as a local process: found, checked, started, waited for and stopped.

The server runs `mb_letta/_server.py` with the server environment's Python
(`plugins/letta/.venv/bin/python`, made by `plugins/letta/install.sh`), on 127.0.0.1 at a free
port, in a process group of its own. Its environment is built here from nothing (no variable of
the caller's is passed on but PATH, LANG and TZ, so no provider key and no proxy setting reaches
it):

- `HOME`: the conversation's store folder in the pack (Letta 0.11.7 keeps its SQLite database
  at `~/.letta/sqlite.db`, beside its `config` and `logs/Letta.log`; `LETTA_DIR` says the
  same); the server's own output goes to the run's cache (`server.out`);
- `OPENAI_API_KEY` / `OPENAI_API_BASE`: the recording endpoint's one-run key and URL (Letta's
  embedding client sends the key; its OpenAI provider lists models there);
- telemetry and tracing off: `LETTA_TELEMETRY_ENABLE_DATADOG=false`, `LETTA_DISABLE_TRACING=true`,
  no `SENTRY_DSN`, no `LETTA_OTEL_EXPORTER_OTLP_ENDPOINT`, `LETTA_PG_URI` unset (SQLite);
  composio's Sentry and PyPI version check off (`COMPOSIO_DISABLE_SENTRY`,
  `COMPOSIO_DISABLE_VERSION_CHECK`);
- offline tokenizers: llama-index's own bundled data (its wheel ships them in
  `llama_index/core/_static/`): `TIKTOKEN_CACHE_DIR` (cl100k_base, gpt2) and `NLTK_DATA`
  (punkt_tab and the stopwords its sentence splitter loads; without them llama-index downloads
  both from raw.githubusercontent.com, which the socket audit refuses).

Every failure to start is one line (`UserError`): no server environment, the wrong letta in it,
the server exiting before it answers (with the last line of its log), no answer within
`start_timeout_s`.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

from memorybench.errors import UserError

#: the Letta release this plugin drives (its REST API, its store's tables): the server line's
#: last release on SQLite (0.12.0 onward has no SQLite engine: letta/server/db.py)
LETTA_VERSION = "0.11.7"
PLUGIN_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_PYTHON = PLUGIN_ROOT / ".venv" / "bin" / "python"
SERVER_SCRIPT = Path(__file__).resolve().parent / "_server.py"
CONSTRAINTS = Path(__file__).resolve().parent / "server" / "constraints.txt"
INSTALL = "plugins/letta/install.sh"
AUDIT_FILE = "socket_audit.jsonl"
#: the only variables of the caller's environment the server gets
PASSED = ("PATH", "LANG", "LC_ALL", "TZ")


def server_python(configured: Any = None) -> Path:
    return Path(str(configured)).expanduser() if configured else DEFAULT_PYTHON


def site_packages(python: Path) -> Path | None:
    found = sorted((python.parent.parent / "lib").glob("python3*/site-packages"))
    return found[0] if found else None


def installed_letta(python: Path) -> str | None:
    """The letta version in the server environment (its dist-info, no import); None: not there."""
    site = site_packages(python)
    if site is None:
        return None
    versions = [m.group(1) for p in site.glob("letta-*.dist-info") if (m := re.fullmatch(r"letta-(.+)\.dist-info", p.name))]
    return versions[0] if versions else None


def check_server_env(configured: Any = None) -> Path:
    """The server's Python, after checking it is there with the pinned letta (one line otherwise)."""
    python = server_python(configured)
    if not python.is_file():
        raise UserError(
            f"memory=letta needs the Letta server's environment, and {python} is not there; make it with `{INSTALL}` "
            "(or point memory.server_python at a Python with letta 0.11.7)"
        )
    have = installed_letta(python)
    if have is None:
        raise UserError(f"memory=letta: letta is not installed in {python.parent.parent}; run `{INSTALL}`")
    if have != LETTA_VERSION:
        raise UserError(
            f"memory=letta was written for letta {LETTA_VERSION} (its REST API, its SQLite store), but letta {have} is "
            f"installed in {python.parent.parent}; rerun `{INSTALL}`"
        )
    return python


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def server_env(python: Path, letta_dir: Path, home: Path, endpoint_url: str, endpoint_key: str) -> dict[str, str]:
    env = {k: os.environ[k] for k in PASSED if k in os.environ}
    env.setdefault("PATH", "/usr/bin:/bin")
    site = site_packages(python)
    env.update(
        {
            # Letta 0.11.7 keeps its SQLite database at ~/.letta/sqlite.db (its config's recall_storage_path):
            # HOME is the store folder, so the database, Letta's config and log are the pack's
            "HOME": str(letta_dir),
            "LETTA_DIR": str(letta_dir / ".letta"),
            "OPENAI_API_KEY": endpoint_key,
            "OPENAI_API_BASE": endpoint_url,
            "LETTA_TELEMETRY_ENABLE_DATADOG": "false",
            "LETTA_DISABLE_TRACING": "true",
            "LETTA_TRACK_PROVIDER_TRACE": "false",
            "LETTA_ENABLE_BATCH_JOB_POLLING": "false",
            "PYTHONUNBUFFERED": "1",
            "NO_PROXY": "127.0.0.1,localhost",
            # composio (imported by Letta's server) fetches a Sentry DSN and checks PyPI for a newer release
            "COMPOSIO_DISABLE_SENTRY": "true",
            "COMPOSIO_DISABLE_VERSION_CHECK": "true",
        }
    )
    if site is not None:
        static = site / "llama_index" / "core" / "_static"
        env["TIKTOKEN_CACHE_DIR"] = str(static / "tiktoken_cache")
        env["NLTK_DATA"] = str(static / "nltk_cache")
    return env


class LettaServer:
    """One Letta server process over one store folder (a context manager)."""

    def __init__(
        self,
        python: Path,
        letta_dir: Path,
        home: Path,
        endpoint_url: str,
        endpoint_key: str,
        *,
        start_timeout_s: float = 600.0,
    ) -> None:
        self.python, self.letta_dir, self.home = python, letta_dir, home
        self.endpoint_url, self.endpoint_key = endpoint_url, endpoint_key
        self.start_timeout_s = float(start_timeout_s)
        self.port = free_port()
        self.process: subprocess.Popen | None = None
        self.audit_path = letta_dir / AUDIT_FILE
        self.log_path = home / "server.out"
        self.started_s: float | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> LettaServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        import httpx

        self.letta_dir.mkdir(parents=True, exist_ok=True)
        self.home.mkdir(parents=True, exist_ok=True)
        endpoint_port = int(self.endpoint_url.split("//", 1)[1].split("/", 1)[0].rsplit(":", 1)[1])
        env = server_env(self.python, self.letta_dir, self.home, self.endpoint_url, self.endpoint_key)
        args = [
            str(self.python),
            str(SERVER_SCRIPT),
            "--port",
            str(self.port),
            "--allow",
            f"127.0.0.1:{endpoint_port}",
            "--audit",
            str(self.audit_path),
            "--letta-dir",
            str(self.letta_dir),
        ]
        started = time.perf_counter()
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(
                args, env=env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True
            )
        deadline = started + self.start_timeout_s
        while True:
            code = self.process.poll()
            if code is not None:
                raise UserError(
                    f"memory=letta: the Letta server exited ({code}) before it answered: {self.last_line()}; "
                    f"its output is in {self.log_path}"
                )
            try:
                if httpx.get(f"{self.base_url}/v1/health/", timeout=2.0).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.perf_counter() > deadline:
                self.stop()
                raise UserError(
                    f"memory=letta: the Letta server did not answer within memory.start_timeout_s={self.start_timeout_s:g} s "
                    f"(last output: {self.last_line()}); raise it on a slow machine"
                )
            time.sleep(1.0)
        self.started_s = round(time.perf_counter() - started, 3)

    def last_line(self) -> str:
        try:
            lines = [ln for ln in self.log_path.read_text("utf-8", "replace").splitlines() if ln.strip()]
        except OSError:
            return "no output"
        return " ".join(lines[-1].split())[:300] if lines else "no output"

    def stop(self) -> None:
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=30)
