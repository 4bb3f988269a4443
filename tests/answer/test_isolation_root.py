"""The agent's outer isolation holds when memorybench runs as root (containers, CI).

Each test runs the real wrapper (`Isolation.wrap`) as root and checks a property from
inside: no capability and not uid 0 of the host, the CLI's vendor folder read-only, a
minimal /dev and no /sys, the host's loopback out of reach while the model endpoint's
port is bridged (or, for a remote https endpoint, a CONNECT to its host and port only),
`open_by_handle_at` refused; then that `Isolation.probe` passes on the real CLI and
refuses in one line when one property fails, and that the real Codex CLI answers through
both bridges.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import socket
import stat
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest

from memorybench.answer.agent._cli import locate_cli
from memorybench.answer.agent._isolation import AGENT_ID, Isolation, _probe_python
from memorybench.errors import UserError

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="checks the wrapper as root (as in containers and CI)")


class LineServer:
    """A TCP service on the host's 127.0.0.1: answers every connection with one line."""

    def __init__(self, reply: bytes):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.reply = reply
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                conn.sendall(self.reply + conn.recv(100))

    def close(self) -> None:
        self.sock.close()


@pytest.fixture()
def endpoint() -> Iterator[LineServer]:
    server = LineServer(b"model endpoint says ")
    yield server
    server.close()


@pytest.fixture()
def host_service() -> Iterator[LineServer]:
    server = LineServer(b"host secret ")
    yield server
    server.close()


@pytest.fixture()
def vendor() -> Path:
    return locate_cli().vendor_dir


def tree_digest(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "dir"
        for p in sorted(folder.rglob("*"))
    }


def make(tmp_path: Path, vendor: Path, endpoint: LineServer | None, network: str = "isolated") -> Isolation:
    url = f"http://127.0.0.1:{endpoint.port}/v1" if endpoint else None
    return Isolation.create(tmp_path / "scratch" / "root", [vendor], endpoint=url, network=network)


def inside(isolation: Isolation, tmp_path: Path, script: str, *args: str) -> subprocess.CompletedProcess:
    """`sh -c script` as the agent, in a writable workspace; the test's Python is visible read-only."""
    workspace = tmp_path / "scratch" / "workspace"
    workspace.mkdir(parents=True, exist_ok=True)
    python, extra = _probe_python()
    argv = isolation.wrap(["/bin/sh", "-c", script, "sh", python, *args], cwd=workspace, visible=[workspace], readonly=extra)
    return subprocess.run(argv, capture_output=True, text=True, timeout=60)


def python_inside(isolation: Isolation, tmp_path: Path, code: str, *args: str) -> subprocess.CompletedProcess:
    return inside(isolation, tmp_path, 'PY="$1"; shift; exec "$PY" -I -S -c "$@"', code, *args)


@pytest.fixture()
def isolation(tmp_path, vendor, endpoint) -> Iterator[Isolation]:
    iso = make(tmp_path, vendor, endpoint)
    yield iso
    iso.close()


def status_of(text: str) -> dict[str, str]:
    return {k: v.strip() for k, _, v in (line.partition(":") for line in text.splitlines())}


# -- identity ------------------------------------------------------------------------
def test_the_agent_has_no_capability_and_is_not_uid_0_of_the_host(tmp_path, isolation):
    done = inside(isolation, tmp_path, "cat /proc/self/status; echo ===; cat /proc/self/uid_map; echo mine > owned.txt")
    assert done.returncode == 0, done.stderr
    status_text, uid_map = done.stdout.split("===\n")
    status = status_of(status_text)
    for key in ("CapInh", "CapPrm", "CapEff", "CapAmb"):
        assert int(status[key], 16) == 0, (key, status[key])
    assert status["NoNewPrivs"] == "1"
    assert status["Uid"].split() == [str(AGENT_ID)] * 4 and status["Gid"].split() == [str(AGENT_ID)] * 4
    assert status["Groups"] == ""
    # its own user namespace maps only AGENT_ID, onto AGENT_ID of the host: uid 0 is no one there
    assert uid_map.split() == [str(AGENT_ID), str(AGENT_ID), "1"]
    # what the agent writes the host sees as AGENT_ID's, not root's
    owned = tmp_path / "scratch" / "workspace" / "owned.txt"
    assert owned.read_text() == "mine\n" and owned.stat().st_uid == AGENT_ID != 0


def test_without_the_drop_the_agent_would_be_root_so_the_check_above_can_fail(tmp_path, isolation, monkeypatch):
    monkeypatch.setattr(Isolation, "drop_prefix", staticmethod(lambda: []))
    done = inside(isolation, tmp_path, "cat /proc/self/status")
    status = status_of(done.stdout)
    assert status["Uid"].split()[0] == "0" and int(status["CapEff"], 16) != 0


# -- files ---------------------------------------------------------------------------
def test_the_vendor_folder_cannot_be_written_and_stays_as_it_was(tmp_path, isolation, vendor):
    before = tree_digest(vendor)
    binary = vendor / "bin" / "codex"
    script = r"""V="$2"; B="$3"
for t in "$V/planted" "$V/bin/planted"; do if touch "$t" 2>/dev/null; then echo "wrote $t"; fi; done
if sh -c 'printf x >> "$0"' "$B" 2>/dev/null; then echo "appended $B"; fi
if mv "$B" "$B.moved" 2>/dev/null; then echo "moved $B"; fi
if chmod 777 "$V" 2>/dev/null; then echo "chmod $V"; fi
echo checked"""
    done = inside(isolation, tmp_path, script, str(vendor), str(binary))
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "checked"
    assert tree_digest(vendor) == before
    assert not (vendor / "planted").exists()


def test_a_mount_inside_a_read_only_path_is_read_only_too(tmp_path, isolation):
    # a container's /etc/hosts is its own mount: here a world-writable tmpfs inside a read-only path
    shown = tmp_path / "shown"
    (shown / "sub").mkdir(parents=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "mode=1777", "memorybench-test", str(shown / "sub")], check=True)
    try:
        workspace = tmp_path / "scratch" / "workspace"
        workspace.mkdir(parents=True)
        argv = isolation.wrap(
            [
                "/bin/sh",
                "-c",
                'for d in "$0" "$0/sub"; do touch "$d/x" 2>/dev/null && echo "wrote $d"; done; echo checked',
                str(shown),
            ],
            cwd=workspace,
            visible=[workspace],
            readonly=[shown],
        )
        done = subprocess.run(argv, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        assert done.stdout.split() == ["checked"] and not (shown / "sub" / "x").exists()
    finally:
        subprocess.run(["umount", str(shown / "sub")], check=True)


def test_dev_is_minimal_and_there_is_no_writable_sys(tmp_path, isolation):
    code = r"""
import json, os, stat
found = {}
for root, dirs, files in os.walk("/dev"):
    for name in dirs + files:
        path = os.path.join(root, name)
        mode = os.lstat(path).st_mode
        found[path] = "blk" if stat.S_ISBLK(mode) else "chr" if stat.S_ISCHR(mode) else "dir" if stat.S_ISDIR(mode) else "lnk" if stat.S_ISLNK(mode) else "other"
sys_state = "absent" if not os.path.exists("/sys") else ("ro" if os.statvfs("/sys").f_flag & os.ST_RDONLY else "rw")
try:
    open("/dev/planted", "w")
    dev_write = "ok"
except OSError:
    dev_write = "refused"
print(json.dumps({"dev": found, "sys": sys_state, "dev_write": dev_write}))
"""
    done = python_inside(isolation, tmp_path, code)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    assert "blk" not in seen["dev"].values()
    chars = sorted(p for p, kind in seen["dev"].items() if kind == "chr" and not p.startswith("/dev/pts/"))
    assert chars == [f"/dev/{n}" for n in ("full", "null", "random", "tty", "urandom", "zero")]
    assert seen["dev"]["/dev/pts/ptmx"] == "chr" and seen["dev"]["/dev/shm"] == "dir"
    assert seen["sys"] in ("absent", "ro") and seen["dev_write"] == "refused"
    # the host has block devices (the disk) that the agent does not see
    host_blocks = [p for p in Path("/dev").rglob("*") if stat.S_ISBLK(p.lstat().st_mode)]
    assert not any(str(p) in seen["dev"] for p in host_blocks)


def test_open_by_handle_at_is_refused_inside_and_works_for_root_outside(tmp_path, isolation):
    code = r"""
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
class Handle(ctypes.Structure):
    _fields_ = [("handle_bytes", ctypes.c_uint), ("handle_type", ctypes.c_int), ("f_handle", ctypes.c_ubyte * 128)]
handle, mount_id = Handle(handle_bytes=128), ctypes.c_int()
named = libc.name_to_handle_at(-100, sys.argv[1].encode(), ctypes.byref(handle), ctypes.byref(mount_id), 0)
if named != 0:
    print("name_to_handle_at", ctypes.get_errno()); sys.exit(0)
at = os.open("/", os.O_RDONLY | os.O_DIRECTORY)
fd = libc.open_by_handle_at(at, ctypes.byref(handle), os.O_RDONLY)
print("open_by_handle_at", fd, ctypes.get_errno())
"""
    target = tmp_path / "scratch" / "workspace" / "target.txt"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text("x")
    done = python_inside(isolation, tmp_path, code, str(target))
    assert done.returncode == 0, done.stderr
    word, fd, err = done.stdout.split()
    assert word == "open_by_handle_at" and int(fd) == -1 and int(err) == errno.EPERM
    # as root outside the wrapper the same call opens the file: the refusal above is the wrapper's
    outside = subprocess.run([_probe_python()[0], "-I", "-S", "-c", code, str(target)], capture_output=True, text=True)
    word, fd, _ = outside.stdout.split()
    assert word == "open_by_handle_at" and int(fd) >= 0


# -- network -------------------------------------------------------------------------
REACH = r"""
import socket, sys
for port in sys.argv[1:]:
    try:
        with socket.create_connection(("127.0.0.1", int(port)), timeout=5) as s:
            s.sendall(b"ping")
            s.shutdown(socket.SHUT_WR)
            print(port, s.recv(100).decode() or "closed")
    except OSError as e:
        print(port, "unreachable", e.errno)
"""


def test_the_hosts_loopback_is_unreachable_and_only_the_endpoint_is_bridged(tmp_path, isolation, endpoint, host_service):
    done = python_inside(isolation, tmp_path, REACH, str(host_service.port), str(endpoint.port))
    assert done.returncode == 0, done.stderr
    lines = dict(line.split(" ", 1) for line in done.stdout.splitlines())
    assert lines[str(host_service.port)].startswith("unreachable")
    assert lines[str(endpoint.port)] == "model endpoint says ping"
    # the bridge drops the wrapped process's listeners once its namespace is gone
    assert isolation.bridge is not None
    for _ in range(100):
        if not isolation.bridge._open:
            break
        time.sleep(0.05)
    assert not isolation.bridge._open


def test_the_bridge_carries_concurrent_large_exchanges_intact(tmp_path, vendor):
    echo = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    echo.bind(("127.0.0.1", 0))
    echo.listen(16)

    def serve() -> None:
        while True:
            try:
                conn, _ = echo.accept()
            except OSError:
                return

            def back(c: socket.socket) -> None:
                with c:
                    while data := c.recv(65536):
                        c.sendall(data)

            threading.Thread(target=back, args=(conn,), daemon=True).start()

    threading.Thread(target=serve, daemon=True).start()
    iso = Isolation.create(tmp_path / "scratch" / "root", [vendor], endpoint=f"http://localhost:{echo.getsockname()[1]}/v1")
    code = r"""
import hashlib, socket, sys, threading
port, results = int(sys.argv[1]), {}
def one(i):
    payload = bytes([i]) * (1 << 20)
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        threading.Thread(target=lambda: (s.sendall(payload), s.shutdown(socket.SHUT_WR)), daemon=True).start()
        got = bytearray()
        while data := s.recv(65536):
            got += data
    results[i] = hashlib.sha256(got).hexdigest() == hashlib.sha256(payload).hexdigest()
threads = [threading.Thread(target=one, args=(i,)) for i in range(6)]
[t.start() for t in threads]; [t.join() for t in threads]
print(sorted(results.items()))
"""
    try:
        done = python_inside(iso, tmp_path, code, str(echo.getsockname()[1]))
    finally:
        iso.close()
        echo.close()
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str([(i, True) for i in range(6)])


def test_with_the_network_shared_the_host_service_answers_so_the_check_above_can_fail(tmp_path, vendor, host_service):
    shared = make(tmp_path, vendor, None, network="shared")
    done = python_inside(shared, tmp_path, REACH, str(host_service.port))
    assert done.stdout.split(" ", 1)[1].strip() == "host secret ping"


def test_a_plain_http_remote_endpoint_with_the_network_isolated_is_refused_in_one_line(tmp_path, vendor):
    with pytest.raises(UserError) as e:
        Isolation.create(tmp_path / "root", [vendor], endpoint="http://user:sk-SECRETSECRET@models.example.test/v1?key=sk-Q")
    message = str(e.value)
    assert "\n" not in message and "answerer.network=shared" in message and "http://models.example.test" in message
    assert "sk-" not in message
    shared = Isolation.create(tmp_path / "root", [vendor], endpoint="http://models.example.test/v1", network="shared")
    assert shared.bridge is None and shared.agent_env() == {}
    with pytest.raises(UserError, match="answerer.network='open' is unknown"):
        Isolation.create(tmp_path / "root", [vendor], network="open")


CONNECT = r"""
import socket, sys
def ask(target):
    with socket.create_connection(("127.0.0.1", 3128), timeout=10) as s:
        s.sendall(f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\nping".encode())
        s.shutdown(socket.SHUT_WR)
        got = b""
        while data := s.recv(4096):
            got += data
    return got.decode("latin-1").replace("\r\n", "|")
for target in sys.argv[1:]:
    print(ask(target))
"""


def test_a_remote_https_endpoint_is_reached_by_a_connect_to_its_host_and_port_only(tmp_path, vendor, host_service):
    # 127.0.0.2 is not bridged port for port: it stands for a remote host, reached through HTTPS_PROXY
    remote = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    remote.bind(("127.0.0.2", 0))
    remote.listen(4)
    port = remote.getsockname()[1]

    def serve() -> None:
        while True:
            try:
                conn, _ = remote.accept()
            except OSError:
                return
            with conn:
                conn.sendall(b"tls bytes " + conn.recv(100))

    threading.Thread(target=serve, daemon=True).start()
    iso = Isolation.create(tmp_path / "scratch" / "root", [vendor], endpoint=f"https://127.0.0.2:{port}/v1")
    try:
        assert iso.agent_env()["HTTPS_PROXY"] == "http://127.0.0.1:3128"
        done = python_inside(
            iso, tmp_path, CONNECT, f"127.0.0.2:{port}", f"127.0.0.1:{host_service.port}", f"127.0.0.2:{port + 1}"
        )
    finally:
        iso.close()
        remote.close()
    assert done.returncode == 0, done.stderr
    allowed, other_host, other_port = done.stdout.splitlines()
    assert allowed == "HTTP/1.1 200 Connection established||tls bytes ping"
    assert other_host.startswith("HTTP/1.1 403 Forbidden") and "host secret" not in other_host
    assert other_port.startswith("HTTP/1.1 403 Forbidden")


# -- the probe -----------------------------------------------------------------------
def probe(isolation: Isolation, tmp_path: Path) -> None:
    cwd = tmp_path / "scratch" / "probe"
    cwd.mkdir(parents=True, exist_ok=True)
    isolation.probe([], cwd=cwd, visible=[cwd], binary=locate_cli().binary)


def test_the_probe_passes_on_the_real_cli(tmp_path, isolation, endpoint):
    probe(isolation, tmp_path)
    marker = tmp_path / "scratch" / "probe" / "memorybench-probe-owner"
    assert marker.stat().st_uid == AGENT_ID


def test_the_probe_refuses_in_one_line_when_the_agent_keeps_root(tmp_path, isolation, monkeypatch):
    monkeypatch.setattr(Isolation, "drop_prefix", staticmethod(lambda: []))
    with pytest.raises(UserError) as e:
        probe(isolation, tmp_path)
    message = str(e.value)
    assert "\n" not in message
    assert message.startswith("the agent's isolation does not hold: the agent holds capabilities")
    assert "refuses to run unsafe" in message and "more)" in message


def test_the_probe_refuses_when_the_network_is_shared_by_mistake(tmp_path, vendor, monkeypatch):
    # the wrapper told to isolate, but the namespace is not made: the probe must notice
    isolation = make(tmp_path, vendor, None)
    original = Isolation.wrap

    def no_net(self, argv, **kwargs):
        return [a for a in original(self, argv, **kwargs) if a != "--net"]

    monkeypatch.setattr(Isolation, "wrap", no_net)
    with pytest.raises(UserError, match="the network is shared"):
        probe(isolation, tmp_path)


# -- through the answerer and the real CLI -----------------------------------------
def test_the_agents_own_commands_run_unprivileged_and_cli_json_says_how(tmp_path, monkeypatch):
    from test_codex import agent, view_of

    # a proxy of the host (passed to the CLI) is out of reach inside: the loopback endpoint goes direct
    for name in ("HTTPS_PROXY", "HTTP_PROXY", "https_proxy", "http_proxy"):
        monkeypatch.setenv(name, "http://127.0.0.1:9")

    from memorybench.testing.scripted_responses import Message, ScriptedResponsesServer, Shell, function_outputs

    command = (
        "grep -E '^(Uid|CapEff|CapPrm|NoNewPrivs):' /proc/self/status; cat /proc/self/uid_map; "
        "ls /dev | tr '\\n' ' '; echo; ls -d /sys 2>&1 | tail -1"
    )
    with ScriptedResponsesServer() as server:
        server.script(Shell(command), Message("ok"))
        with agent(tmp_path, server) as (answerer, pack, conversations):
            answerer.start_conversation(view_of(conversations[0]))
            answerer.answer(conversations[0].questions[0].asked(), "")
        (output,) = function_outputs(server.requests[1])
    status = status_of(output)
    assert int(status["CapEff"], 16) == 0 and int(status["CapPrm"], 16) == 0 and status["NoNewPrivs"] == "1"
    assert status["Uid"].split() == [str(AGENT_ID)] * 4
    dev = next(line for line in output.splitlines() if " null " in line).split()
    assert set(dev) <= {
        "core",
        "fd",
        "full",
        "null",
        "ptmx",
        "pts",
        "random",
        "shm",
        "stderr",
        "stdin",
        "stdout",
        "tty",
        "urandom",
        "zero",
    }
    assert "No such file or directory" in output.splitlines()[-1]  # no /sys
    isolation = json.loads(pack.path("agent/cli.json").read_text())["isolation"]
    assert f"host uid {AGENT_ID}" in isolation and "its own network namespace" in isolation and "no /sys" in isolation


def test_qa_with_an_unreachable_remote_endpoint_behind_the_gateway_ends_in_one_line(tmp_path, capsys):
    from memorybench.cli import main

    with pytest.raises(SystemExit) as stopped:  # the Hydra app exits with the error's code
        main(
            [
                "qa",
                "answerer=codex",
                "answerer.model=gpt-test",
                "answerer.provider=openai_compatible",
                "answerer.base_url=http://user:sk-memorybench-test-0123@models.example.test:8000/v1",
                "answerer.api_key_env=null",
                f"paths.packs={tmp_path / 'packs'}",
                f"paths.cache={tmp_path / 'cache'}",
                "max_questions=1",
                f"dataset.path={Path(__file__).parents[1] / 'fixtures' / 'mini_locomo.json'}",
            ]
        )
    err = capsys.readouterr().err.strip().splitlines()
    assert stopped.value.code not in (0, None) and len(err) == 1 and "Traceback" not in err[0]
    # the agent reaches only the gateway; the gateway, on the host, cannot reach this upstream
    assert "memorybench gateway: upstream" in err[0] and "sk-" not in err[0] and "user:" not in err[0]


def test_the_connect_bridge_goes_through_the_hosts_own_proxy_when_it_has_one(tmp_path, vendor, monkeypatch):
    proxy = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    proxy.bind(("127.0.0.1", 0))
    proxy.listen(4)
    heads: list[bytes] = []

    def serve() -> None:
        while True:
            try:
                conn, _ = proxy.accept()
            except OSError:
                return
            with conn:
                head = b""
                while b"\r\n\r\n" not in head:
                    head += conn.recv(1024)
                heads.append(head)
                conn.sendall(b"HTTP/1.1 200 OK\r\n\r\nvia the host proxy ")
                conn.sendall(conn.recv(100))

    threading.Thread(target=serve, daemon=True).start()
    monkeypatch.setenv("HTTPS_PROXY", f"http://corp:pa%40ss@127.0.0.1:{proxy.getsockname()[1]}")
    monkeypatch.setenv("NO_PROXY", "internal.example")
    iso = Isolation.create(tmp_path / "scratch" / "root", [vendor], endpoint="https://api.example.test/v1")
    try:
        done = python_inside(iso, tmp_path, CONNECT, "api.example.test:443")
    finally:
        iso.close()
        proxy.close()
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "HTTP/1.1 200 Connection established||via the host proxy ping"
    (head,) = heads
    assert head.startswith(b"CONNECT api.example.test:443 HTTP/1.1\r\n")
    assert b"Proxy-Authorization: Basic Y29ycDpwYUBzcw==" in head  # corp:pa@ss


class TlsFront:
    """https://127.0.0.2:PORT (a stand-in for a remote host) in front of a plain local server."""

    def __init__(self, tmp_path: Path, backend_port: int):
        self.cert = tmp_path / "cert.pem"
        key = tmp_path / "key.pem"
        subprocess.run(
            [
                "openssl",
                "req",
                "-x509",
                "-newkey",
                "rsa:2048",
                "-nodes",
                "-keyout",
                str(key),
                "-out",
                str(self.cert),
                "-days",
                "1",
                "-subj",
                "/CN=127.0.0.2",
                "-addext",
                "subjectAltName=IP:127.0.0.2",
                "-addext",
                "basicConstraints=critical,CA:FALSE",
                "-addext",
                "extendedKeyUsage=serverAuth",
            ],
            check=True,
            capture_output=True,
        )
        import ssl

        self.context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.context.load_cert_chain(self.cert, key)
        self.backend_port = backend_port
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind(("127.0.0.2", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.connections = 0
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._relay, args=(conn,), daemon=True).start()

    def _relay(self, conn: socket.socket) -> None:
        import select

        try:
            tls = self.context.wrap_socket(conn, server_side=True)
        except OSError:
            conn.close()
            return
        with tls, socket.create_connection(("127.0.0.1", self.backend_port)) as plain:
            while True:
                ready = [tls] if tls.pending() else select.select([tls, plain], [], [], 60)[0]
                if not ready:
                    return
                for src, dst in ((tls, plain), (plain, tls)):
                    if src in ready:
                        data = src.recv(65536)
                        if not data:
                            return
                        dst.sendall(data)

    def close(self) -> None:
        self.sock.close()


def test_codex_reaches_a_remote_https_endpoint_through_the_gateway(tmp_path, monkeypatch):
    """The agent talks to the run's gateway only (its loopback port bridged into the agent's
    network namespace); the gateway, on the host, reaches the https upstream."""
    from test_codex import agent, view_of

    from memorybench.testing.scripted_responses import Message, ScriptedResponsesServer

    with ScriptedResponsesServer() as server:
        front = TlsFront(tmp_path, server.port)
        monkeypatch.setenv("SSL_CERT_FILE", str(front.cert))
        remote = SimpleNamespace(base_url=f"https://127.0.0.2:{front.port}/v1")  # all the agent helper reads
        try:
            server.script(Message("from afar"))
            with agent(tmp_path, remote) as (answerer, pack, conversations):
                answerer.start_conversation(view_of(conversations[0]))
                answer = answerer.answer(conversations[0].questions[0].asked(), "")
        finally:
            front.close()
    (trace,) = [json.loads(line) for line in pack.path("agent/traces.jsonl").read_text().splitlines()]
    assert answer.prediction == "from afar" and front.connections >= 1, (trace["status"], trace["error"])
    assert len(server.requests) == 1  # through the TLS front, whose certificate Codex took from SSL_CERT_FILE
    isolation = json.loads(pack.path("agent/cli.json").read_text())["isolation"]
    assert "its own network namespace (the model endpoint's port bridged from the host's loopback)" in isolation
    assert "HTTPS_PROXY" not in isolation  # nothing but the gateway's port is reachable from inside


def test_the_hosts_proxy_is_skipped_where_no_proxy_names_the_endpoint():
    from memorybench.answer.agent._bridge import host_proxy

    env = {"HTTPS_PROXY": "http://proxy.corp:3128", "NO_PROXY": "localhost, .openai.com"}
    assert host_proxy("api.openai.com", env) is None
    assert host_proxy("models.example.test", env) == (("proxy.corp", 3128), "")
    assert host_proxy("api.openai.com", {"https_proxy": "socks5://proxy.corp:1080"}) is None
    assert host_proxy("api.openai.com", {}) is None
