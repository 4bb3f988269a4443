"""The worker's side of a library in an environment of its own: standard library only.

memorybench's side, and the protocol, are `memorybench.memory.venv_worker`. A plugin's worker
script (`mb_cognee/_worker.py`, `mb_memos/_worker.py`) runs in the library's environment
with `-I`, where memorybench cannot be imported: memorybench passes this file's path as the
script's first argument, and the script loads it from there. The script
keeps what is its library's own (the settings it sets before the import, the commands) and
uses what is the same for every library:

- `serve(ops, close)`: the command loop. The protocol channel is the process's stdout as it
  started; stdout is then pointed at stderr (what the library prints is its log). Each
  command line runs `ops[op](command)`; its answer goes back as a `result` event with the
  connections tried so far (`connections`, `refused`), a failure as an `error` event (type,
  message, traceback). `close` (or the end of stdin) calls `close()` (a library's store to
  close before memorybench reads it) and answers with every connection tried.
- `audit_connections(host, port)`: the socket audit (`sys.addaudithook`), installed before
  the library is imported: a connection to anything but the recording endpoint sends an
  `error` event naming it and ends the process at once (a client would retry, with backoff,
  a connection that may never happen); a unix socket is recorded, local.
- `Reports`: a logging handler that sends each record at its level or above as a `report`
  event while a command runs; memorybench journals it with the call it followed.
- `send(event, **fields)`, `versions(names)`.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import traceback
from collections.abc import Callable
from importlib import metadata
from typing import Any, TextIO

PROTO: TextIO | None = None  # the protocol channel (set in serve)
#: (host, port) the worker may connect to
ALLOWED: set[tuple[str, int]] = set()
#: [host, port] of every connection tried ([path, None] for a unix socket)
TRIED: list[list[Any]] = []
#: [host, port] of every connection the audit refused
REFUSED: list[list[Any]] = []


def send(event: str, **fields: Any) -> None:
    assert PROTO is not None
    PROTO.write(json.dumps({"event": event, **fields}, default=str) + "\n")
    PROTO.flush()


# -- the socket audit ------------------------------------------------------------------------
def audit(name: str, args: tuple) -> None:
    if name != "socket.connect":
        return
    address = args[1] if len(args) > 1 else None
    if isinstance(address, tuple) and len(address) >= 2:
        host, port = str(address[0]), int(address[1])
        if [host, port] not in TRIED:
            TRIED.append([host, port])
        if (host, port) not in ALLOWED:
            REFUSED.append([host, port])
            # stop at once: the library's client would retry (with backoff) a connection that may never happen
            send(
                "error",
                op="audit",
                type="ConnectionRefusedError",
                message=f"connection to {host}:{port} refused",
                traceback="",
                refused=REFUSED,
            )
            os._exit(4)
    elif isinstance(address, (str, bytes)) and [str(address), None] not in TRIED:
        TRIED.append([str(address), None])  # a unix socket: local, recorded


def audit_connections(host: str, port: int) -> None:
    """From now on, every connection but to (host, port) is refused (module doc)."""
    ALLOWED.add((str(host), int(port)))
    sys.addaudithook(audit)


# -- what the library logs -------------------------------------------------------------------
def record_text(record: logging.LogRecord) -> str:
    """A log record's message (its `msg` itself when it cannot format)."""
    try:
        return record.getMessage()
    except Exception:  # noqa: BLE001 - a record that cannot format is still reported
        return str(record.msg)


class Reports(logging.Handler):
    """Every record at the handler's level or above, sent as a `report` event while a command
    runs. `text(record)`: its words (default `record_text`)."""

    def __init__(self, level: int = logging.WARNING, text: Callable[[logging.LogRecord], str] | None = None) -> None:
        super().__init__(level=level)
        self.text = text or record_text

    def emit(self, record: logging.LogRecord) -> None:
        message = self.text(record)
        if record.exc_info and record.exc_info[1] is not None:
            message += f" [{type(record.exc_info[1]).__name__}: {record.exc_info[1]}]"
        send("report", logger=record.name, level=record.levelname, message=" ".join(message.split())[:2000])


def versions(names: tuple[str, ...]) -> dict[str, str | None]:
    """Each distribution's version in this environment (None: not installed)."""
    out: dict[str, str | None] = {}
    for name in names:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


# -- the command loop ------------------------------------------------------------------------
def serve(ops: dict[str, Callable[[dict[str, Any]], dict[str, Any]]], close: Callable[[], None] | None = None) -> None:
    """Answer commands from stdin until `close` or its end (module doc)."""
    global PROTO
    PROTO = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)  # what the library prints goes to stderr (memorybench keeps it as the library's log)
    sys.stdout = sys.stderr
    for line in sys.stdin:
        if not line.strip():
            continue
        cmd = json.loads(line)
        op = cmd.get("op")
        if op == "close":
            if close is not None:
                close()
            send("result", op="close", tried=TRIED)
            break
        try:
            out = ops[op](cmd)
        except BaseException as e:  # noqa: BLE001 - every failure goes back as one event
            send(
                "error",
                op=op,
                type=type(e).__name__,
                message=" ".join(str(e).split())[:2000],
                traceback=traceback.format_exc()[-6000:],
                refused=REFUSED,
            )
            continue
        send("result", op=op, connections=TRIED, refused=REFUSED, **out)
    if close is not None:
        close()
