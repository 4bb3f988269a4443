"""One writer per folder: an OS file lock on a lock file inside the folder it guards.

A pack (`qa`, `rescore`), a judge's folder (`autorater/<judge id>/`) and an aggregate's
output (`collected/`) each have one writer at a time. The writer holds `fcntl.flock` on
`<folder>/.lock` (`layout.LOCK_FILE`) for the whole write and writes its pid, host and
start time into it; a second writer finds the lock taken and stops with one line naming
them, before it touched anything:

    pack /p/mini/runs/full-1a2b is being written by pid 1234 on host h (since 2026-12-02T01:52:00+00:00); wait for it or stop it

The kernel drops a flock when its process dies, kill -9 included: a lock file left by a
dead writer is taken by the next one at once (its stale text is overwritten), so there is
no stale lock to clean up. The holder unlinks the file before it lets go, so a finished
folder is left without it; whoever locks a file checks that it is still the one at the
path, so a writer never holds a lock on a file that was just unlinked.

A lock file is never a pack file: `memorybench.storage.local_files` skips it, so no
`_SUCCESS` closes it, no upload carries it and verify does not count it.

The lock is advisory and local to one machine (and to file systems whose flock the kernel
enforces across clients, as NFS does): two Cloud Run tasks never share a work folder, and
a bucket's create-only `_SUCCESS` stops the second of two publishers.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import socket
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from memorybench.errors import UserError
from memorybench.pack import layout
from memorybench.provenance import utc_now

__all__ = ["Holder", "LOCK_FILE", "LockBusy", "WriterLock", "folder_lock"]

LOCK_FILE = layout.LOCK_FILE
#: how long a second writer looks for the holder's pid and host before it reports without
#: them (the holder writes them right after it took the lock)
_HOLDER_WAIT_S = 1.0
#: the holder's text is a few dozen bytes; more is not a lock file of ours
_MAX_HOLDER_BYTES = 4096


@dataclass(frozen=True)
class Holder:
    """Who holds a lock, as it wrote itself into the lock file."""

    pid: int | None = None
    host: str | None = None
    since: str | None = None

    def describe(self) -> str:
        if self.pid is None:
            return "another process"
        where = f" on host {self.host}" if self.host else ""
        when = f" (since {self.since})" if self.since else ""
        return f"pid {self.pid}{where}{when}"

    @classmethod
    def parse(cls, data: bytes) -> Holder | None:
        try:
            doc = json.loads(data.decode("utf-8"))
        except ValueError:
            return None
        if not isinstance(doc, dict) or not isinstance(doc.get("pid"), int):
            return None
        host, since = doc.get("host"), doc.get("since")
        return cls(doc["pid"], host if isinstance(host, str) else None, since if isinstance(since, str) else None)


class LockBusy(UserError):
    """Another process writes the folder now."""

    def __init__(self, what: str, folder: Path, holder: Holder) -> None:
        super().__init__(f"{what} {folder} is being written by {holder.describe()}; wait for it or stop it")
        self.folder = folder
        self.holder = holder


class WriterLock:
    """The writer lock of one folder: `with folder_lock(pack_root, "pack"): ...`.

    `wait=False` (a pack, a judge folder, an aggregate output): a taken lock is a
    `LockBusy` at once. `wait=True` (an MLflow store, which writers share in turn): wait
    for the holder, saying so once on stderr.
    """

    def __init__(self, path: Path, what: str, *, folder: Path | None = None, wait: bool = False) -> None:
        self.path = path
        self.what = what
        #: what the error names: the folder the lock guards (the lock file's own folder by default)
        self.folder = folder if folder is not None else path.parent
        self.wait = wait
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def acquire(self) -> WriterLock:
        if self._fd is not None:
            raise RuntimeError(f"{self.path} is already locked by this WriterLock")
        waited = False
        while True:
            fd = self._open()
            try:
                if self._lock(fd, waited):
                    break
            except BaseException:
                os.close(fd)
                raise
            waited = True
            os.close(fd)  # not ours after all: the holder unlinked it as we locked it; lock the file at the path now
        self._fd = fd
        self._write_holder()
        return self

    def _lock(self, fd: int, waited: bool) -> bool:
        """flock `fd`: True when it is the file at the path; a busy lock is `LockBusy`, or
        waited for (`wait`, saying so once)."""
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = self._holder()
            if not self.wait:
                if holder is None and not self.path.exists():
                    return False  # released and unlinked while we looked: try again
                raise LockBusy(self.what, self.folder, holder or Holder()) from None
            if not waited:
                print(
                    f"waiting for {self.what} {self.folder}: {(holder or Holder()).describe()} is writing it",
                    file=sys.stderr,
                    flush=True,
                )
            fcntl.flock(fd, fcntl.LOCK_EX)
        return self._still_at_path(fd)

    def release(self) -> None:
        fd, self._fd = self._fd, None
        if fd is None:
            return
        try:
            # unlink while still holding it: whoever locks the old file next sees it is gone
            if self._still_at_path(fd):
                self.path.unlink()
        except OSError:
            pass  # a lock file left behind is harmless: the next writer takes it
        finally:
            os.close(fd)  # closing the last descriptor drops the flock

    def __enter__(self) -> WriterLock:
        return self.acquire()

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None) -> None:
        self.release()

    # -- the file ----------------------------------------------------------------------
    def _open(self) -> int:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            # O_NOFOLLOW: a link planted at the lock's name is refused, never written through
            return os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
        except OSError as e:
            if e.errno == errno.ELOOP:
                raise UserError(f"{self.path} is a symbolic link; a lock file is a plain file: remove it and rerun") from None
            raise UserError(
                f"cannot lock {self.what} {self.folder}: {e.strerror or e} creating {self.path}; the folder must be writable"
            ) from None

    def _still_at_path(self, fd: int) -> bool:
        try:
            here = os.stat(self.path, follow_symlinks=False)
        except FileNotFoundError:
            return False
        mine = os.fstat(fd)
        return (here.st_dev, here.st_ino) == (mine.st_dev, mine.st_ino)

    def _write_holder(self) -> None:
        assert self._fd is not None
        text = json.dumps({"pid": os.getpid(), "host": socket.gethostname(), "since": utc_now()}) + "\n"
        try:
            os.ftruncate(self._fd, 0)
            os.pwrite(self._fd, text.encode("utf-8"), 0)
        except OSError:
            pass  # the lock holds without its text; a second writer then names "another process"

    def _holder(self) -> Holder | None:
        """The holder as it wrote itself, waiting a moment for a holder that just took the lock."""
        deadline = time.monotonic() + _HOLDER_WAIT_S
        while True:
            try:
                fd = os.open(self.path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
            except OSError:
                return None
            try:
                holder = Holder.parse(os.read(fd, _MAX_HOLDER_BYTES))
            finally:
                os.close(fd)
            if holder is not None or time.monotonic() >= deadline:
                return holder
            time.sleep(0.05)


def folder_lock(folder: str | os.PathLike[str], what: str) -> WriterLock:
    """The writer lock of `folder` (`<folder>/.lock`), not yet taken: use it as `with`.

    `what` names the folder in the error line: "pack", "judge folder", "aggregate output".
    """
    folder = Path(folder)
    return WriterLock(folder / LOCK_FILE, what, folder=folder)
