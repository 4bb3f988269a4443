"""The agent's only way out of its network namespace: a bridge to the model endpoint.

The isolation wrapper gives the agent a fresh network namespace (`unshare --net`): its
127.0.0.1 is its own, with nothing listening and no route anywhere. When the model
endpoint is a port on this machine's loopback (the scripted server of the tests, a local
gateway), the agent must still reach that one port, and only it:

- inside the namespace, before the agent's root is sealed, `INNER` (run by the host's
  Python, stdlib only) brings `lo` up, binds a listening socket on 127.0.0.1:PORT for each
  bridged port and hands those sockets to the harness over a Unix socket (SCM_RIGHTS);
  a child of it holds that connection open for the life of the namespace, then exits;
- in the harness, `Bridge` accepts on those listening sockets (they stay in the agent's
  namespace) and splices each connection to the same port of the host's loopback.

So Codex's base URL stays exactly what the user configured, the agent can connect to
nothing but the bridged ports, and the control socket is never inside the agent's root.

An https endpoint elsewhere (the OpenAI API) is reached the same way through one more
listener, 127.0.0.1:PROXY_PORT inside, given to Codex as HTTPS_PROXY: the harness side
answers an HTTP CONNECT to the endpoint's own host and port only (403 for any other),
resolves and connects on the host (through the host's own HTTPS_PROXY when it has one),
then splices the TLS stream it never reads.
When the wrapper's namespace ends (its PID 1 exits) the holder dies, the harness sees
the control connection close, and drops the listeners and their connections.
"""

from __future__ import annotations

import base64
import contextlib
import os
import selectors
import socket
import tempfile
import threading
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import unquote, urlsplit

#: run inside the agent's network namespace: argv[1] control socket ("-": none), argv[2] ports ("-": none)
INNER = r"""
import fcntl, os, socket, struct, sys
ctl_path, ports = sys.argv[1], [int(p) for p in sys.argv[2].split(",") if p and p != "-"]
probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
flags = struct.unpack("16sh", fcntl.ioctl(probe, 0x8913, struct.pack("16sh", b"lo", 0)))[1]  # SIOCGIFFLAGS
fcntl.ioctl(probe, 0x8914, struct.pack("16sh", b"lo", flags | 0x1))  # SIOCSIFFLAGS, IFF_UP
probe.close()
if not ports:
    sys.exit(0)
listeners = []
for port in ports:
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", port))
    s.listen(64)
    listeners.append(s)
ctl = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
ctl.connect(ctl_path)
socket.send_fds(ctl, [b"L"], [s.fileno() for s in listeners])
for s in listeners:
    s.close()
if os.fork():
    os._exit(0)
# the holder: the harness keeps the listeners while this connection is open
os.chdir("/")
null = os.open("/dev/null", os.O_RDWR)
for fd in (0, 1, 2):
    os.dup2(null, fd)
os.closerange(3, ctl.fileno())
os.closerange(ctl.fileno() + 1, 1 << 16)
try:
    while ctl.recv(1):
        pass
finally:
    os._exit(0)
"""

#: hosts the bridge serves: inside the namespace it listens on 127.0.0.1 (where localhost resolves too)
BRIDGED_HOSTS = ("127.0.0.1", "localhost")
#: the agent's HTTPS_PROXY port inside its namespace (a remote https endpoint)
PROXY_PORT = 3128
#: the most a CONNECT request head may take
HEAD_LIMIT = 8192


def loopback_port(url: str) -> int | None:
    """The port of `url` when its host is 127.0.0.1 or localhost; None for any other host."""
    parts = urlsplit(url)
    if (parts.hostname or "").lower() not in BRIDGED_HOSTS:
        return None
    try:
        port = parts.port
    except ValueError:
        return None
    return port or (443 if parts.scheme == "https" else 80)


def host_proxy(target_host: str, environ: Mapping[str, str] | None = None) -> tuple[tuple[str, int], str] | None:
    """The host's http:// HTTPS_PROXY for `target_host` ((host, port), basic auth or ""), None when
    there is none or NO_PROXY names the host."""
    env = os.environ if environ is None else environ
    url = env.get("HTTPS_PROXY") or env.get("https_proxy") or ""
    parts = urlsplit(url)
    if parts.scheme != "http" or not parts.hostname:
        return None
    for entry in (env.get("NO_PROXY") or env.get("no_proxy") or "").split(","):
        entry = entry.strip().lower().lstrip(".")
        if entry == "*" or (entry and (target_host == entry or target_host.endswith("." + entry))):
            return None
    try:
        port = parts.port or 80
    except ValueError:
        return None
    auth = ""
    if parts.username is not None:
        auth = base64.b64encode(f"{unquote(parts.username)}:{unquote(parts.password or '')}".encode()).decode()
    return (parts.hostname, port), auth


def _pump(src: socket.socket, dst: socket.socket) -> None:
    try:
        while data := src.recv(65536):
            dst.sendall(data)
    except OSError:
        pass
    finally:
        with contextlib.suppress(OSError):
            dst.shutdown(socket.SHUT_WR)


class Bridge:
    """Harness side: accepts the listeners `INNER` sends and splices their connections to
    the same port of `upstream_host` (the endpoint's 127.0.0.1 or localhost) on the host."""

    def __init__(
        self, ports: tuple[int, ...] = (), *, upstream_host: str = "127.0.0.1", connect_to: tuple[str, int] | None = None
    ):
        """`ports`: spliced to the same port of `upstream_host`; `connect_to`: (host, port) a CONNECT
        on PROXY_PORT may reach."""
        self.connect_to = (connect_to[0].lower(), connect_to[1]) if connect_to else None
        self.host_proxy = host_proxy(self.connect_to[0]) if self.connect_to else None
        self.ports = (*ports, PROXY_PORT) if connect_to else ports
        self.upstream_host = upstream_host
        # a short private folder (a Unix socket's path has at most 107 bytes), never inside the agent's root
        self._folder = Path(tempfile.mkdtemp(prefix="memorybench-bridge-"))
        self.ctl_path = self._folder / "ctl.sock"
        self._server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._server.bind(str(self.ctl_path))
        self._server.listen(16)
        self._closed = threading.Event()
        self._lock = threading.Lock()
        self._open: set[socket.socket] = set()
        threading.Thread(target=self._serve, name="memorybench-bridge", daemon=True).start()

    def _track(self, sock: socket.socket) -> None:
        with self._lock:
            self._open.add(sock)

    def _drop(self, sock: socket.socket) -> None:
        with self._lock:
            self._open.discard(sock)
        with contextlib.suppress(OSError):
            sock.close()

    def _serve(self) -> None:
        while not self._closed.is_set():
            try:
                conn, _ = self._server.accept()
            except OSError:
                return
            self._track(conn)
            threading.Thread(target=self._session, args=(conn,), daemon=True).start()

    def _session(self, ctl: socket.socket) -> None:
        """One wrapped process: its listeners until its holder's connection closes."""
        listeners: list[socket.socket] = []
        try:
            _, fds, _, _ = socket.recv_fds(ctl, 16, len(self.ports) or 1)
            listeners = [socket.socket(fileno=fd) for fd in fds]
            for s in listeners:
                self._track(s)
            with selectors.DefaultSelector() as sel:
                sel.register(ctl, selectors.EVENT_READ)
                for s in listeners:
                    sel.register(s, selectors.EVENT_READ)
                while not self._closed.is_set():
                    for key, _ in sel.select(timeout=1.0):
                        if key.fileobj is ctl:
                            if not ctl.recv(1):
                                return
                            continue
                        listener = key.fileobj
                        assert isinstance(listener, socket.socket)
                        inside, _ = listener.accept()
                        threading.Thread(target=self._splice, args=(inside, listener.getsockname()[1]), daemon=True).start()
        except OSError:
            return
        finally:
            for s in (*listeners, ctl):
                self._drop(s)

    def _splice(self, inside: socket.socket, port: int) -> None:
        self._track(inside)
        try:
            if self.connect_to is not None and port == PROXY_PORT:
                outside = self._connect(inside)
            else:
                outside = socket.create_connection((self.upstream_host, port), timeout=30)
        except OSError:
            self._drop(inside)
            return
        if outside is None:
            self._drop(inside)
            return
        outside.settimeout(None)
        self._track(outside)
        back = threading.Thread(target=_pump, args=(outside, inside), daemon=True)
        back.start()
        _pump(inside, outside)
        back.join()
        self._drop(inside)
        self._drop(outside)

    def _connect(self, inside: socket.socket) -> socket.socket | None:
        """Answer one CONNECT: the endpoint's host and port, or 403; bytes after the head go through."""
        assert self.connect_to is not None
        inside.settimeout(30)
        head = b""
        while b"\r\n\r\n" not in head:
            data = inside.recv(1024)
            if not data or len(head) + len(data) > HEAD_LIMIT:
                return None
            head += data
        head, rest = head.split(b"\r\n\r\n", 1)
        words = head.split(b"\r\n", 1)[0].decode("latin-1").split()
        target = None
        if len(words) == 3 and words[0].upper() == "CONNECT":
            host, _, port = words[1].rpartition(":")
            if port.isdigit():
                target = (host.strip("[]").lower(), int(port))
        if target != self.connect_to:
            inside.sendall(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
            return None
        try:
            outside, early = self._open_upstream(target)
        except OSError:
            inside.sendall(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
            return None
        inside.settimeout(None)
        inside.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n" + early)
        if rest:
            outside.sendall(rest)
        return outside

    def _open_upstream(self, target: tuple[str, int]) -> tuple[socket.socket, bytes]:
        """A connection to `target`, direct or tunnelled through the host's proxy; bytes already read."""
        if self.host_proxy is None:
            return socket.create_connection(target, timeout=30), b""
        (host, port), auth = self.host_proxy
        outside = socket.create_connection((host, port), timeout=30)
        name = f"[{target[0]}]" if ":" in target[0] else target[0]
        request = f"CONNECT {name}:{target[1]} HTTP/1.1\r\nHost: {name}:{target[1]}\r\n"
        if auth:
            request += f"Proxy-Authorization: Basic {auth}\r\n"
        outside.sendall(request.encode("latin-1") + b"\r\n")
        head = b""
        while b"\r\n\r\n" not in head:
            data = outside.recv(1024)
            if not data or len(head) + len(data) > HEAD_LIMIT:
                outside.close()
                raise OSError("the host's proxy closed the tunnel")
            head += data
        head, early = head.split(b"\r\n\r\n", 1)
        status = head.split(b"\r\n", 1)[0].split()
        if len(status) < 2 or status[1] != b"200":
            outside.close()
            raise OSError("the host's proxy refused the tunnel")
        outside.settimeout(None)
        return outside, early

    def close(self) -> None:
        self._closed.set()
        with contextlib.suppress(OSError):
            self._server.close()
        with self._lock:
            socks = list(self._open)
        for s in socks:
            self._drop(s)
        with contextlib.suppress(OSError):
            os.unlink(self.ctl_path)
        with contextlib.suppress(OSError):
            os.rmdir(self._folder)
