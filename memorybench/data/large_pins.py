"""Large dataset files pinned by address, size and sha256, fetched by a streamed, resumable download.

A benchmark names its large files in its own package (a dataset's `pin`), each by its
address at a pinned revision (a Hugging Face dataset repository), its size and sha256
(../shared/pins/PINS.md says where each comes from). A fetch

- streams the file to `<pins>/<relpath>.part` with a progress line, resuming a partial
  `.part` with an HTTP Range request where the server honours it (else starting over);
- checks the size, then the sha256, and only then renames the file into place: a file in
  the pins folder is always a verified one;
- on a mismatch names both hashes (or sizes) in one line and keeps nothing.

A large file is fetched only when asked for (`memorybench fetch --dataset NAME`). A pins folder that already holds a
file (MEMORYBENCH_PINS, `memorybench fetch --pins DIR`) is verified, never downloaded.
Verification streams the file (`sha256_file`): a 2.7 GB file is never read into memory.
"""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from memorybench.errors import UserError
from memorybench.fs import fsync_dir
from memorybench.hashing import sha256_file

_HF = "https://huggingface.co/datasets"
_CHUNK = 1 << 20


@dataclass(frozen=True)
class LargePin:
    """A large file: its path in the pins folder, its revision-pinned address, size and sha256."""

    relpath: str
    repository: str
    revision: str
    source_path: str
    size: int
    sha256: str
    licence: str

    @property
    def url(self) -> str:
        return f"{_HF}/{self.repository}/resolve/{self.revision}/{self.source_path}"


_verified: set[tuple[str, int, int]] = set()


def verify_large(pin: LargePin, path: Path) -> Path:
    """`path` when it is the pinned file (size, then sha256; remembered per size and mtime in
    this process), else one UserError line naming both values and the fix."""
    if not path.is_file():
        raise UserError(
            f"pinned file {path} is missing; run `memorybench fetch --dataset {_name_of(pin)}` "
            "(or set MEMORYBENCH_PINS to a folder that has it)"
        )
    st = path.stat()
    key = (str(path.resolve()), st.st_size, st.st_mtime_ns)
    if key in _verified:
        return path
    if st.st_size != pin.size:
        raise UserError(
            f"pinned file {path} is {st.st_size:,} bytes, expected {pin.size:,}; delete it and run "
            f"`memorybench fetch --dataset {_name_of(pin)}`"
        )
    actual = sha256_file(path)
    if actual != pin.sha256:
        raise UserError(
            f"pinned file {path} has sha256 {actual}, expected {pin.sha256}; delete it and run "
            f"`memorybench fetch --dataset {_name_of(pin)}`"
        )
    _verified.add(key)
    return path


def fetch_large(pin: LargePin, root: Path, *, log=print, opener=None) -> Path:
    """The verified file under `root`, downloaded (resuming a partial one) if missing
    (`opener`: urllib's `urlopen` unless given)."""
    # imported here: a command that only verifies a pinned file (show, verify) opens no URL
    import urllib.error
    import urllib.request

    opener = opener or urllib.request.urlopen
    target = root / pin.relpath
    if target.is_file():
        return verify_large(pin, target)
    part = target.with_name(target.name + ".part")
    part.parent.mkdir(parents=True, exist_ok=True)
    have = part.stat().st_size if part.is_file() else 0
    if have > pin.size:
        part.unlink()
        have = 0
    request = urllib.request.Request(pin.url, headers={"Range": f"bytes={have}-"} if have else {})
    try:
        response = opener(request, timeout=60)
    except urllib.error.HTTPError as e:
        if e.code == 416 and have == pin.size:  # the partial file is whole: only the check is left
            response = None
        else:
            raise UserError(
                f"could not download {pin.url} (HTTP {e.code}); check the network, or copy "
                f"{pin.source_path} into {target.parent} (MEMORYBENCH_PINS)"
            ) from None
    except OSError as e:
        raise UserError(
            f"could not download {pin.url} ({e}); check the network, or copy {pin.source_path} "
            f"into {target.parent} (MEMORYBENCH_PINS)"
        ) from None
    if response is not None:
        with response:
            resumed = have and getattr(response, "status", 200) == 206
            if have and not resumed:
                log(f"resume   {pin.relpath}: the server sent the whole file; starting over")
                have = 0
            announced = _content_length(response)
            if announced is not None and announced > pin.size - have:  # refused before a byte is written
                raise UserError(
                    f"{pin.url} announces {announced:,} bytes where {pin.size - have:,} are left of the pinned "
                    f"{pin.size:,}; refusing the download (copy {pin.source_path} into {target.parent} instead)"
                )
            _stream(response, part, have, pin, log)
    size = part.stat().st_size
    if size != pin.size:
        raise UserError(
            f"downloaded {pin.url} is {size:,} bytes, expected {pin.size:,}; run the fetch again (it resumes from {part})"
        )
    actual = sha256_file(part)
    if actual != pin.sha256:
        part.unlink()
        raise UserError(f"downloaded {pin.url} has sha256 {actual}, expected {pin.sha256}; refusing to store it")
    os.replace(part, target)
    fsync_dir(target.parent)
    log(f"fetched  {pin.relpath} ({pin.size:,} bytes, sha256 verified)")
    return verify_large(pin, target)


def _stream(response, part: Path, have: int, pin: LargePin, log) -> None:
    """Append the response's bytes to `part` (from `have`), with a progress line every few seconds."""
    done, last = have, 0.0
    with open(part, "ab" if have else "wb") as out:
        # never past the pinned size: a server that sends more (or never stops) gets read no further
        while done < pin.size:
            piece = response.read(min(_CHUNK, pin.size - done))
            if not piece:
                break
            out.write(piece)
            done += len(piece)
            now = time.monotonic()
            if now - last > 5:
                last = now
                print(f"fetch {pin.relpath}: {done / 1e6:,.0f} of {pin.size / 1e6:,.0f} MB", file=sys.stderr, flush=True)
        out.flush()
        os.fsync(out.fileno())


def _content_length(response) -> int | None:
    """The response's Content-Length, or None when it gives none (or none that is a number)."""
    headers = getattr(response, "headers", None)
    value = headers.get("Content-Length") if headers is not None else None
    try:
        return int(value) if value is not None else None
    except (TypeError, ValueError):
        return None


def _name_of(pin: LargePin) -> str:
    """The dataset name `memorybench fetch --dataset` takes for this pin."""
    from memorybench.benchmark import datasets

    return next((d.name for d in datasets().values() if d.large and d.pinned() == pin), Path(pin.source_path).stem)
