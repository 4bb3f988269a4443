"""A memory method whose library runs in an environment of its own: the plumbing every such method shares.

A plugin's method (`mb_cognee._core.CogneeMemory`, `mb_memos._core.MemosMemory`) subclasses
`VenvMethod`, names its library (`library`: a `memorybench.memory.venv_worker.VenvLibrary`)
and its recording endpoint (`endpoint_class`), and keeps what is its library's own: its
settings, what its worker's `open` needs besides the endpoint (`open_fields`), its build and
search commands, the words of its reports (`report`). What is here:

- `endpoint(ctx)`: the run's recording endpoint, opened once; `ctx.close()` stops the
  workers, then the endpoint.
- `worker(ctx, sid, store)`: the conversation's worker (one at a time: another's stops),
  started with the environment's interpreter and asked to `open` the store (the endpoint's
  address and key, the embedder's dimensions, the writer's max_tokens and temperature, and
  `open_fields`); what it writes to stderr is appended to `memory/<method>/<method>.log`.
  `search_worker(ctx, sid, built)`: the same for a question (a resumed run opens the committed
  store again, with no build).
- `_ask(worker, op, sid)`: one command, each way it fails one line: the library raised (its
  type and words, the writer replies failed so far), or tried to connect elsewhere than the
  recording endpoint (the worker's socket audit refused it; a run that talked elsewhere stops).
- `library_record(endpoint)`: the endpoint's counts and every address the worker connected
  to, for the dump's `metadata.library`.
- `PlainStringsEndpoint`: a `LibraryEndpoint` whose bounded JSON Schema keeps each free
  string to characters JSON takes raw (`plain_strings`), for a library that parses strictly.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any, ClassVar, TextIO

from memorybench.errors import UserError
from memorybench.memory.base import BuildContext, BuiltMemory
from memorybench.memory.library_endpoint import LibraryEndpoint
from memorybench.memory.venv_worker import VenvLibrary, Worker, WorkerError, host_port


class VenvMethod:
    """The shared half of a memory method over a library worker (module doc); a base class."""

    #: the library and its environment
    library: ClassVar[VenvLibrary]
    #: the recording endpoint's class: a LibraryEndpoint with the library's roles and shapes
    endpoint_class: ClassVar[type[LibraryEndpoint]]
    #: seconds the worker may take to import the library and open its store
    start_timeout_s: ClassVar[float] = 300.0
    #: the endpoint's bounds on a JSON reply (memory.json_max_items, memory.json_max_chars)
    json_max_items: int
    json_max_chars: int

    def __init__(self) -> None:
        self._endpoint: Any = None
        self._workers: dict[str, Worker] = {}
        self._log: TextIO | None = None
        #: the versions the worker reported when it opened its store
        self.library_versions: dict[str, Any] = {}
        #: every address the worker connected to, as its last answer said
        self.connections: list[list[Any]] = []

    # -- what a plugin gives ----------------------------------------------------------------
    def report(self, event: dict[str, Any]) -> None:
        """A record the library logged in the worker: the plugin journals it (`endpoint.report`)."""
        raise NotImplementedError

    def open_fields(self, sid: str) -> dict[str, Any]:
        """What the worker's `open` needs besides the store, the endpoint and the writer's settings."""
        return {}

    def retrieve(self, built: BuiltMemory, asked: Any, ctx: BuildContext) -> Any:
        raise NotImplementedError

    # -- the endpoint and the worker --------------------------------------------------------
    def endpoint(self, ctx: BuildContext) -> Any:
        if self._endpoint is None:
            self._endpoint = endpoint = self.endpoint_class(
                ctx, method=self.library.method, max_items=self.json_max_items, max_chars=self.json_max_chars, loggers={}
            ).__enter__()
            ctx.closers.append(lambda: endpoint.__exit__(None, None, None))
            ctx.closers.append(self.close_workers)  # newest first: the workers stop before the endpoint
        return self._endpoint

    def worker(self, ctx: BuildContext, sid: str, store: Path) -> Worker:
        """The conversation's worker, started over its store (one at a time: another's stops)."""
        if sid in self._workers:
            return self._workers[sid]
        self.close_workers()
        endpoint = self.endpoint(ctx)
        if self._log is None:
            path = ctx.pack.path(self.library.pack_log)
            path.parent.mkdir(parents=True, exist_ok=True)
            self._log = path.open("a", encoding="utf-8")
        worker = Worker(self.library, self._log, self.report)
        self._workers[sid] = worker
        dims = ctx.embedder.dim or int(endpoint.in_worker(ctx.embedder.embed, ["dimension probe"]).shape[1])
        host, port = host_port(endpoint.base_url)  # a name of this module: tests point it elsewhere
        writer = ctx.writer.node
        opened = self._ask(
            worker,
            "open",
            sid,
            timeout=self.start_timeout_s,
            store=str(store),
            base_url=endpoint.base_url,
            api_key=endpoint.api_key,
            endpoint=[host, port],
            dims=dims,
            max_tokens=int(writer.max_tokens),
            temperature=float(writer.temperature),
            **self.open_fields(sid),
        )
        self.library_versions = dict(opened.get("versions") or {})
        return worker

    def search_worker(self, ctx: BuildContext, sid: str, built: BuiltMemory) -> Worker:
        """The worker of a built conversation; a resumed run's opens the committed store again, for search."""
        worker = self._workers.get(sid)
        if worker is None:
            worker = self.worker(ctx, sid, ctx.pack.path(built.state["store"]))
        return worker

    def close_workers(self) -> None:
        for sid in list(self._workers):
            self._workers.pop(sid).close()
        if self._log is not None and not self._workers:
            self._log.flush()

    def _ask(self, worker: Worker, op: str, sid: str, timeout: float | None = None, **fields: Any) -> dict[str, Any]:
        method, title = self.library.method, self.library.title
        try:
            out = worker.request(op, timeout=timeout, **fields)
        except WorkerError as e:
            # (a writer call that failed after its retries is re-raised by the endpoint's scope instead)
            if e.refused:
                where = ", ".join(f"{h}:{p}" if p is not None else str(h) for h, p in e.refused)
                raise UserError(
                    f"memory={method}: {title} tried to connect to {where} (only the recording endpoint is allowed) during "
                    f"{op} of {sid}; the connection was refused and the run stopped"
                ) from None
            raise UserError(
                f"memory={method}: {title} stopped during {op} of {sid}: {e.kind}: {' '.join(e.message.split())[:300]}; "
                f"{self.writer_failures()} writer replies failed so far (memory/writer/failures.jsonl); "
                "a rerun restarts this conversation"
            ) from None
        if out.get("refused"):  # refused, and the library went on without it: still a run that talked elsewhere
            where = ", ".join(f"{h}:{p}" for h, p in out["refused"])
            raise UserError(
                f"memory={method}: {title} tried to connect to {where} (only the recording endpoint is allowed) during {op} "
                f"of {sid}; the connection was refused and the run stopped"
            )
        self.connections = [list(c) for c in out.get("connections") or []]
        return out

    def writer_failures(self) -> int:
        endpoint = self._endpoint
        return int(endpoint.ctx.writer.usage.failures) if endpoint is not None and endpoint.ctx.writer is not None else 0

    # -- what the dump records --------------------------------------------------------------
    def library_record(self, endpoint: LibraryEndpoint) -> dict[str, Any]:
        """The endpoint's rows and reports, every address the library's process connected to
        (its socket audit refuses any other), and the JSON bounds the endpoint set, if any."""
        out: dict[str, Any] = {
            "endpoint_rows": dict(endpoint.rows),
            "reports": dict(endpoint.reports),
            "connections": [f"{h}:{p}" if p is not None else f"unix:{h}" for h, p in self.connections],
        }
        if endpoint.json_bounds:
            out["json_bounds"] = dict(endpoint.json_bounds)
        return out

    def for_question(self, built: BuiltMemory, asked: Any, ctx: BuildContext) -> str:
        retrieved = self.retrieve(built, asked, ctx)
        return retrieved.render(list(range(len(retrieved.texts))))


# -- JSON a strict parser takes -------------------------------------------------------------
class PlainStringsEndpoint(LibraryEndpoint):
    """LibraryEndpoint's bounded schema, each free string also kept to characters JSON takes
    raw (`plain_strings`): for a library that parses strictly (pydantic's strict JSON,
    `json.loads`), which refuses a raw newline inside a string."""

    def _shape(self, role: str, body: dict[str, Any], writer: Any) -> tuple[Any, int]:
        response_format, max_tokens = super()._shape(role, body, writer)
        if (
            writer.node.get("json_schema")
            and isinstance(response_format, dict)
            and isinstance(response_format.get("schema"), dict)
        ):
            response_format = {**response_format, "schema": plain_strings(response_format["schema"])}
        return response_format, max_tokens


def plain_strings(schema: dict[str, Any]) -> dict[str, Any]:
    """`schema` with every bounded free string (`maxLength`, no enum, const, pattern or format)
    given the pattern `^[^"\\\x00-\x1f]{min,max}$`: no control character and no escape.

    llama-cpp-python 0.3.36 compiles a JSON Schema string to the grammar rule `char ::=
    [^"\\] | "\\" ...`, which admits raw control characters: SmolLM2 then writes a raw
    newline inside a summary, and a strict parser refuses the whole reply (cognee asks again
    with the error, 3 tries, then tenacity's retries of the whole call, and cognify stops;
    MemOS drops the reply). The pattern is compiled before the length (llama_grammar's
    `pattern` branch), and the budget still reads `maxLength`
    (`memorybench.memory._schema_budget`), so the reply's bound is unchanged."""
    out = copy.deepcopy(schema)

    def visit(node: Any) -> None:
        if isinstance(node, dict):
            if node.get("type") == "string" and "maxLength" in node and not {"enum", "const", "pattern", "format"} & set(node):
                node["pattern"] = f'^[^"\\\\\\x00-\\x1F]{{{int(node.get("minLength", 0))},{int(node["maxLength"])}}}$'
            for value in node.values():
                visit(value)
        elif isinstance(node, list):
            for value in node:
                visit(value)

    visit(out)
    return out
