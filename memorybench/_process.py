"""Child processes in their own process group, and how the group is ended.

A child started by `start_group` leads a new session, so its process-group id is its
pid and everything it starts (a shell, a server's workers, an agent's tools) shares the
group unless it leaves it. `stop_group` signals that whole group: SIGTERM with a grace
period when the child may shut down cleanly, then SIGKILL. Used by the Codex answerer,
the local llama.cpp server and the local Cloud Run tasks.
"""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Sequence
from typing import Any

__all__ = ["signal_group", "start_group", "stop_group"]


def start_group(argv: Sequence[str], **popen_kwargs: Any) -> subprocess.Popen[bytes]:
    """`subprocess.Popen(argv, **popen_kwargs)` as the leader of a new process group."""
    return subprocess.Popen(list(argv), start_new_session=True, **popen_kwargs)


def signal_group(proc: subprocess.Popen[bytes], sig: int) -> None:
    """Send `sig` to the group `proc` leads; to `proc` alone if the group is gone or not ours.

    Call it before `proc` is reaped: until then its pid (the group id) cannot be reused.
    """
    try:
        os.killpg(proc.pid, sig)
    except (ProcessLookupError, PermissionError):
        try:
            proc.send_signal(sig)
        except (ProcessLookupError, PermissionError):
            pass


def stop_group(proc: subprocess.Popen[bytes], *, grace_s: float = 0.0, wait_s: float | None = None) -> int | None:
    """End the group `proc` leads and reap `proc`; its exit code, or None if it outlived `wait_s`.

    grace_s > 0: SIGTERM first and up to `grace_s` seconds to exit (a server flushes its
    log), then SIGKILL; grace_s == 0: SIGKILL at once. The group is signalled even if
    `proc` itself has just exited, since its children may not have.
    """
    if grace_s > 0:
        signal_group(proc, signal.SIGTERM)
        try:
            return proc.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            pass
    signal_group(proc, signal.SIGKILL)
    try:
        return proc.wait(timeout=wait_s)
    except subprocess.TimeoutExpired:
        return None
