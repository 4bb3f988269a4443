"""Errors a user can fix.

A `UserError` carries one line that names the bad value and says how to fix it; the CLI
prints that line without a traceback and exits non-zero (inspect_ai's PrerequisiteError
shape). Anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import argparse
import difflib
import re
import sys
from collections.abc import Iterable

from memorybench.secrets import scrub

#: how every user-facing error line starts, wherever it is printed
ERROR_PREFIX = "memorybench: error: "


class UserError(Exception):
    """A problem with the user's input, configuration or environment."""

    exit_code = 2

    def __init__(self, message: str) -> None:
        super().__init__(" ".join(message.split("\n")))

    @property
    def message(self) -> str:
        return str(self.args[0])


class DataError(UserError):
    """A data file that does not match the format we expect."""


class ModelCallError(UserError):
    """A model call that failed after its retries; `attempts` keeps each try for the trace."""

    exit_code = 3

    def __init__(self, message: str, attempts: list | None = None) -> None:
        super().__init__(message)
        self.attempts = list(attempts or [])


#: what a terminal would act on rather than show: C0 controls but tab and newline, DEL, C1 controls
#: (U+009B is a CSI on its own), and the bidirectional overrides and isolates that reorder a line
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]")
_CONTROL_NO_NEWLINE = re.compile("[\x00-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]")


def printable(text: str, *, newlines: bool = True) -> str:
    """`text` safe to print on a terminal: every control character (ANSI and OSC escapes, a
    carriage return, a bell, C1 controls, bidirectional overrides) written as its `\\uXXXX`
    escape, so a dataset, a model's reply or a server's message cannot move the cursor, clear
    the screen or retitle the window. Newlines (and tabs) stay where they carry structure;
    with `newlines=False` they are escaped too. The escape is JSON's, so JSON text stays
    valid JSON. Everything memorybench prints that came from outside goes through here."""
    pattern = _CONTROL if newlines else _CONTROL_NO_NEWLINE
    return pattern.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def error_line(message: str) -> str:
    """The one line a user sees for an error: `memorybench: error: <message>`, with every
    known credential and a URL's userinfo scrubbed (a message may quote an override or a
    server's reply) and every control character neutralised (`printable`)."""
    return ERROR_PREFIX + printable(scrub(" ".join(str(message).split())), newlines=False)


def report(error: UserError) -> int:
    """Print a user error's line on stderr (no traceback); return its exit code."""
    print(error_line(error.message), file=sys.stderr)
    return error.exit_code


def did_you_mean(value: str, choices: Iterable[str], label: str = "Choices") -> str:
    """`Did you mean 'x'? Choices: a, b, c` for an unknown name (`label` names the list)."""
    choices = sorted(choices)
    close = difflib.get_close_matches(value, choices, n=1)
    hint = f"Did you mean '{close[0]}'? " if close else ""
    return f"{hint}{label}: {', '.join(choices)}"


class OneLineParser(argparse.ArgumentParser):
    """argparse whose usage errors are one-line `UserError`s (the message and the usage),
    not usage text plus exit 2: every `memorybench` command parses its flags with it."""

    def error(self, message: str) -> None:  # type: ignore[override]
        usage = " ".join(self.format_usage().split()).removeprefix("usage: ")
        raise UserError(f"{message}; usage: {usage}")
