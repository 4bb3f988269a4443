"""What the tests of a plugin that wraps a real memory system share (`plugins/*/tests`).

- `ScriptedQA`: `memorybench qa` of one memory method against a scripted reader and a
  scripted writer (`scripted_servers`: the writer answers with the plugin's responder) on a
  small dataset: in this process (`qa(tmp, reader, writer, *overrides)`: its exit code), or
  the same command line for a process of its own (`command`); the one pack it made
  (`pack(tmp)`); `show` of a question of it (exit code and what it printed).
- `failing_reader`: a scripted reader that refuses one question, so a run stops with its
  memory committed; `resumed_runs`: the three runs of one run id a resume test reads (the
  stopped one, the resumed one, the finished one), under a `SocketAudit`.
- `error_line`: the one line a run that a user can fix ends with; `broken_python`: an
  interpreter that cannot run a plugin's worker (it says so and exits).
- `smoke_qa`: `memorybench qa` on the embedded models over LoCoMo's pinned file, in a process
  of its own (the `local_model` smoke of each plugin): its pack, or a skip when the pinned
  file is not there (`pinned_dataset`).
- `rows`: a JSONL file's rows; `assert_only_the_endpoint`: what a `SocketAudit` saw in this
  process: every connection to 127.0.0.1, and the recording endpoint's threads only to the
  scripted writer.

The command line is the top layer of memorybench, above this package: a test hands
`memorybench.cli.main` to `ScriptedQA`, and a process of its own runs `python -m memorybench.cli`.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memorybench.llm.recording_proxy import THREAD_NAME
from memorybench.testing.scripted_server import Action, ScriptedOpenAIServer, Status, echo_responder


def rows(path: Path) -> list[dict[str, Any]]:
    """A JSONL file's rows ([] when it is not there)."""
    return [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()] if path.is_file() else []


def pins() -> Path:
    """The pinned files: $MEMORYBENCH_PINS, else `shared/pins` beside the checkout."""
    return Path(os.environ.get("MEMORYBENCH_PINS") or Path(__file__).resolve().parents[3] / "shared" / "pins")


def pinned_dataset(why: str = "the smoke reads the default dataset from the pinned files") -> Path:
    """The default dataset's pinned file (LoCoMo's locomo10.json, whose conv-26 the smokes run
    over); the test is skipped, saying `why`, when it is not there."""
    from memorybench.benchmark import default_dataset

    path = pins() / default_dataset().pinned().relpath
    if not path.is_file():
        import pytest

        pytest.skip(f"{path} is missing: {why} (MEMORYBENCH_PINS)")
    return path


@contextlib.contextmanager
def scripted_servers(
    responder: Callable[[dict[str, Any]], Action], reader: Callable[[dict[str, Any]], Action] | None = None
) -> Iterator[tuple[ScriptedOpenAIServer, ScriptedOpenAIServer]]:
    """A scripted reader (an echo, or `reader`) and a scripted writer answering with `responder`."""
    with (
        ScriptedOpenAIServer(**({"responder": reader} if reader else {})) as read,
        ScriptedOpenAIServer(responder=responder) as write,
    ):
        yield read, write


@dataclass(frozen=True)
class ScriptedQA:
    """`memorybench qa` of one method against scripted servers (module doc)."""

    #: memorybench.cli.main (the command line is above this layer: the test gives it)
    main: Callable[[list[str]], Any]
    #: the memory option (`memory=<method>`)
    method: str
    #: the dataset file (a LoCoMo-shaped fixture)
    dataset: Path
    #: the run's name (`name=`), the folder of its packs; default: the method
    name: str = ""
    #: overrides every run of these tests gives, after the usual ones (`memory.max_episodes=4`)
    always: tuple[str, ...] = ()

    def args(self, tmp: Path, reader: ScriptedOpenAIServer, writer: ScriptedOpenAIServer, *extra: str) -> list[str]:
        """The command line after `memorybench`: packs and cache under `tmp`, 3 questions, then `extra`."""
        return [
            "qa",
            "reader=openai_compatible",
            f"reader.base_url={reader.base_url}",
            "reader.model=scripted",
            f"memory={self.method}",
            "writer=openai_compatible",
            f"writer.base_url={writer.base_url}",
            "writer.model=scripted-writer",
            "embedder=hashing",
            f"dataset.path={self.dataset}",
            f"paths.packs={tmp / 'packs'}",
            f"paths.cache={tmp / 'cache'}",
            f"name={self.name or self.method}",
            "max_questions=3",
            *self.always,
            *extra,
        ]

    def command(self, tmp: Path, reader: ScriptedOpenAIServer, writer: ScriptedOpenAIServer, *extra: str) -> list[str]:
        """The same run as a process of its own."""
        return [sys.executable, "-m", "memorybench.cli", *self.args(tmp, reader, writer, *extra)]

    def __call__(self, tmp: Path, reader: ScriptedOpenAIServer, writer: ScriptedOpenAIServer, *extra: str) -> int:
        """The run in this process: its exit code."""
        return self.cli(*self.args(tmp, reader, writer, *extra))

    def cli(self, *args: str) -> int:
        try:
            return int(self.main(list(args)) or 0)
        except SystemExit as e:
            return int(e.code or 0)

    def pack(self, tmp: Path) -> Path:
        """The one pack the runs under `tmp` made."""
        (pack,) = (tmp / "packs" / (self.name or self.method) / "runs").iterdir()
        return pack

    def show(self, pack: Path, question: str) -> tuple[int, str]:
        """`memorybench show PACK QUESTION`: its exit code and what it printed."""
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            code = self.cli("show", str(pack), question)
        return code, out.getvalue()


def assert_only_the_endpoint(seen: list[tuple[str, Any]], writer_port: int) -> None:
    """What a `SocketAudit` saw: the recording endpoint's threads called the scripted writer
    only, and every connection of this process went to 127.0.0.1."""
    proxy_ports = {addr[1] for name, addr in seen if name.startswith(THREAD_NAME)}
    assert proxy_ports <= {writer_port}
    assert all(isinstance(addr, tuple) and addr[0] == "127.0.0.1" for _, addr in seen), seen


def smoke_qa(tmp: Path, name: str, *overrides: str, timeout: float) -> Path:
    """`memorybench qa NAME OVERRIDES` over LoCoMo's pinned file (skipped without it), in a
    process of its own, packs and cache under `tmp`: its pack; its stderr's end when it fails."""
    data = pinned_dataset()
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "memorybench.cli",
            "qa",
            *overrides,
            f"dataset.path={data}",
            f"paths.packs={tmp / 'packs'}",
            f"paths.cache={tmp / 'cache'}",
            f"name={name}",
        ],
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    (pack,) = (tmp / "packs" / name / "runs").iterdir()
    return pack


def failing_reader(at: int = 2) -> Callable[[dict[str, Any]], Action]:
    """A scripted reader that refuses its `at`-th request (HTTP 400) and echoes the others."""
    answered: list[int] = []

    def respond(body: dict[str, Any]) -> Action:
        answered.append(1)
        return Status(400, message="scripted reader failure") if len(answered) == at else echo_responder(body)

    return respond


@dataclass
class ResumedRuns:
    """One pack made by three `qa` runs of the same run id: the first stops when the reader
    refuses the second question (the memory committed), the second resumes it, the third
    finds it done."""

    tmp: Path
    pack: Path
    #: the three runs' exit codes
    codes: list[int]
    #: after the first run: its predictions, whether _SUCCESS was there, the writer calls made
    first: dict[str, Any]
    writer_requests: list[dict[str, Any]]
    reader_requests: list[dict[str, Any]]
    writer_port: int
    #: what the SocketAudit saw in this process: (thread name, address) of each connection
    seen: list[tuple[str, Any]]


def resumed_runs(qa: ScriptedQA, tmp: Path, responder: Callable[[dict[str, Any]], Action], env: Mapping[str, str]) -> ResumedRuns:
    """The three runs of `ResumedRuns`, packs under `tmp`, the writer answering with
    `responder`, with `env` set in the environment (canary keys) while they run."""
    import pytest

    from memorybench.testing.socket_audit import SocketAudit

    with (
        pytest.MonkeyPatch.context() as patch,
        scripted_servers(responder, reader=failing_reader()) as (reader, writer),
        SocketAudit() as audit,
    ):
        for name, value in env.items():
            patch.setenv(name, value)
        codes = [qa(tmp, reader, writer)]
        pack = qa.pack(tmp)
        first = {
            "predictions": len(rows(pack / "predictions.jsonl")),
            "success": (pack / "_SUCCESS").exists(),
            "writer_calls": len(writer.requests),
        }
        codes += [qa(tmp, reader, writer), qa(tmp, reader, writer)]
        return ResumedRuns(tmp, pack, codes, first, list(writer.requests), list(reader.requests), writer.port, list(audit.seen))


def error_line(err: str) -> str:
    """The one `memorybench: error:` line of a run's stderr, with no traceback (a UserError)."""
    (line,) = [line for line in err.splitlines() if line.startswith("memorybench: error:")]
    assert "Traceback" not in err, err[-3000:]
    return line


def broken_python(folder: Path, words: str, code: int = 3) -> Path:
    """An interpreter at `folder/bin/python` that cannot run a worker: it writes `words` to
    stderr and exits with `code`."""
    fake = folder / "bin" / "python"
    fake.parent.mkdir(parents=True)
    fake.write_text(f"#!/bin/sh\necho '{words}' >&2\nexit {code}\n")
    fake.chmod(0o755)
    return fake
