"""What a wrapped library says about its own failures, caught while it runs.

Libraries swallow what goes wrong and say so in their own way: Graphiti logs
`Error in generating LLM response: Invalid control character ...` and then `Failed to
extract timestamps for edge ...` with the exception attached; A-MEM logs `Error in memory
evolution: ...` and prints `Error analyzing content: ...`; mem0 logs `Error parsing
extraction response: ...`. Each then goes on with what it has, so the build finishes and
every reply looked fine to the recording endpoint, which parses more leniently than a
library that calls `json.loads` strictly. `reports_of` catches those words while a scope of
the endpoint is open: log records at WARNING or above from the library's own loggers, and,
for a library that prints (A-MEM), each line it writes to stdout. The endpoint
(`LibraryEndpoint.report`) attributes each to the call it followed and counts the task as
failed (`memory/<method>/library_reports.jsonl`, `memory/writer/failures.jsonl`).
"""

from __future__ import annotations

import contextlib
import logging
import sys
from collections.abc import Callable, Iterator, Mapping
from typing import TextIO

__all__ = ["reports_of"]

#: the most characters of one report kept (a library may log a whole reply)
MAX_CHARS = 2000

#: report(source, message, failure): `failure` says whether the library means a failure of its
#: work (a record at or above its logger's failure level, a printed line) or only a remark
Report = Callable[[str, str, bool], None]


class _Catch(logging.Handler):
    """A handler that hands each record's words to `report(source, message, failure)`."""

    def __init__(self, report: Report, failure_level: int) -> None:
        super().__init__(level=logging.WARNING)
        self.report, self.failure_level = report, failure_level

    def emit(self, record: logging.LogRecord) -> None:
        try:
            message = record.getMessage()
        except Exception:  # noqa: BLE001 - a record whose arguments do not format: its template
            message = str(record.msg)
        if record.exc_info and record.exc_info[1] is not None:
            error = record.exc_info[1]
            message = f"{message}: {type(error).__name__}: {error}"
        self.report(f"log {record.name} {record.levelname}", message[:MAX_CHARS], record.levelno >= self.failure_level)


class _Lines:
    """A stand-in for sys.stdout that hands each complete line to `report` (partial lines
    wait for their newline; what is left is handed over at the end)."""

    def __init__(self, report: Report) -> None:
        self.report, self.buffer = report, ""
        self.encoding = "utf-8"

    def write(self, text: str) -> int:
        self.buffer += text
        *lines, self.buffer = self.buffer.split("\n")
        for line in lines:
            if line.strip():
                self.report("stdout", line[:MAX_CHARS], True)
        return len(text)

    def flush(self) -> None:
        pass

    def close(self) -> None:
        if self.buffer.strip():
            self.report("stdout", self.buffer[:MAX_CHARS], True)
        self.buffer = ""

    def isatty(self) -> bool:
        return False


@contextlib.contextmanager
def reports_of(report: Report, loggers: Mapping[str, int], *, stdout: bool = False) -> Iterator[None]:
    """Inside the block, `report(source, message, failure)` for each record at WARNING or
    above of the named loggers (and their children), `failure` when the record is at or above
    that logger's failure level (`loggers`: name -> level; mem0 warns at WARNING that an
    optional package is missing, and fails at ERROR), and with `stdout` for each line printed
    (a failure). A logger set above WARNING is lowered to it for the block: a library's
    warning is a report whatever level the user's logging left it at."""
    handlers: list[tuple[logging.Logger, logging.Handler]] = []
    lowered: list[tuple[logging.Logger, int]] = []
    for name, failure_level in loggers.items():
        logger = logging.getLogger(name)
        handler = _Catch(report, failure_level)
        logger.addHandler(handler)
        handlers.append((logger, handler))
        if logger.getEffectiveLevel() > logging.WARNING:
            lowered.append((logger, logger.level))
            logger.setLevel(logging.WARNING)
    lines: _Lines | None = None
    before: TextIO | None = None
    if stdout:
        before, lines = sys.stdout, _Lines(report)
        sys.stdout = lines  # type: ignore[assignment]
    try:
        yield
    finally:
        if lines is not None:
            sys.stdout = before  # type: ignore[assignment]
            lines.close()
        for logger, handler in handlers:
            logger.removeHandler(handler)
        for logger, level in lowered:
            logger.setLevel(level)
