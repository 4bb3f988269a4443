"""One `codex exec` process: task on stdin (then closed), JSONL on stdout, an outer timeout.

The process starts in its own session (process group); at the timeout the whole group
is killed. Under the isolation wrapper the CLI is PID 1 of its own PID namespace and
`unshare --kill-child` ties it to the wrapper, so killing the group ends every process
the agent started, including ones that left the group.
"""

from __future__ import annotations

import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from memorybench._process import start_group, stop_group
from memorybench.provenance import utc_now

STDERR_TAIL = 4000
#: how long to wait for the killed CLI to be reaped (no grace: a timed-out agent's work is abandoned)
KILL_WAIT_S = 30.0


@dataclass
class ProcessResult:
    lines: list[str]
    exit_code: int | None
    timed_out: bool
    wall_s: float
    started_at: str
    ended_at: str
    stderr_tail: str


def run_process(argv: Sequence[str], *, stdin_text: str, env: Mapping[str, str], cwd: str, timeout_s: float) -> ProcessResult:
    started_at, t0 = utc_now(), time.monotonic()
    proc = start_group(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=dict(env), cwd=cwd)
    lines: list[str] = []
    stderr: list[bytes] = []

    def feed() -> None:
        try:
            assert proc.stdin is not None
            proc.stdin.write(stdin_text.encode("utf-8"))
        except (BrokenPipeError, OSError):
            pass
        finally:
            try:
                proc.stdin.close()  # type: ignore[union-attr]
            except OSError:
                pass

    def read_out() -> None:
        assert proc.stdout is not None
        for raw in proc.stdout:
            lines.append(raw.decode("utf-8", "replace"))

    def read_err() -> None:
        assert proc.stderr is not None
        for raw in proc.stderr:
            stderr.append(raw)
            if sum(len(b) for b in stderr) > 4 * STDERR_TAIL:
                del stderr[: len(stderr) // 2]

    threads = [threading.Thread(target=f, daemon=True) for f in (feed, read_out, read_err)]
    for t in threads:
        t.start()
    timed_out = False
    try:
        proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        timed_out = True
        stop_group(proc, wait_s=KILL_WAIT_S)
    except BaseException:  # KeyboardInterrupt: leave nothing running behind
        stop_group(proc, wait_s=KILL_WAIT_S)
        raise
    for t in threads[1:]:
        t.join(timeout=10)
    tail = b"".join(stderr).decode("utf-8", "replace")[-STDERR_TAIL:]
    return ProcessResult(
        lines, None if timed_out else proc.returncode, timed_out, round(time.monotonic() - t0, 3), started_at, utc_now(), tail
    )
