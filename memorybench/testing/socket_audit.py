"""`SocketAudit`: every outbound connection a process opens while it is on, with the thread
that opened it, so a test can show that a wrapped library talked to nothing but
memorybench's recording endpoint (the plugins' tests: mem0_lib, graphiti, amem)."""

from __future__ import annotations

import socket
import threading
from typing import Any


class SocketAudit:
    """A context manager: `seen` holds (thread name, address) of every connect inside it."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, Any]] = []
        self._real = socket.socket.connect
        self._real_ex = socket.socket.connect_ex

    def __enter__(self) -> SocketAudit:
        audit = self

        def connect(sock: socket.socket, address: Any) -> Any:
            audit.seen.append((threading.current_thread().name, address))
            return audit._real(sock, address)

        def connect_ex(sock: socket.socket, address: Any) -> Any:
            audit.seen.append((threading.current_thread().name, address))
            return audit._real_ex(sock, address)

        socket.socket.connect = connect  # type: ignore[method-assign]
        socket.socket.connect_ex = connect_ex  # type: ignore[method-assign]
        return self

    def __exit__(self, *exc: object) -> None:
        socket.socket.connect = self._real  # type: ignore[method-assign]
        socket.socket.connect_ex = self._real_ex  # type: ignore[method-assign]
