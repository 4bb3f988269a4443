"""A wrapped library's model and embedding calls, forwarded to the run's writer and embedder and journaled.

A memory method that wraps a real memory system (the `mem0_lib` plugin; Graphiti and A-MEM
later) points the library at a `LibraryEndpoint` (a `RecordingProxy` on 127.0.0.1) instead
of at OpenAI. Each request the library sends is

- a chat completion: forwarded through the run's writer endpoint (`ctx.writer`: the
  embedded llama.cpp model by default, any OpenAI-compatible server by override) with the
  writer's client (retries, response cache, prices), and journaled as a writer call in
  `memory/writer/calls.jsonl` (`writer_call.v1`: role `<method>:<task>`, the full request
  messages and reply, tokens, latency, attempts), counted in the writer's usage and so in
  `memory/build_cost.jsonl`, `metrics.json`'s build cost and the failed-task tally; verify's
  contamination check scans these rows' inputs like any writer call's;
- an embedding request: answered by the run's embedder (`ctx.embedder`, MiniLM by default)
  and journaled in `memory/<method>/embed_calls.jsonl` (`library_embed_call.v1`: the texts,
  their count, cache hits, billed tokens, seconds), counted in the embedder's usage.

Structured output: a request's `response_format` passes through. A task whose reply shape
the method declares (`reply_schemas`: role -> JSON Schema) is sent, when the writer has
`json_schema: true` (writer=local), with that schema bounded (`bounded_json_schema`) so
that its longest reply fits writer.max_tokens (`fit_bounds`): llama.cpp's grammar then makes
the reply parse. A JSON reply that does not parse, or that max_tokens cut, is a counted
writer failure (`memory/writer/failures.jsonl`), never a silent empty memory. A request the
endpoint cannot express (tool calls, images) is refused with an error the library sees and
counted the same way.

A reply counts as parsed only if the library parsed it: inside a scope the endpoint listens
to the library's own loggers (`loggers`) and, for a library that prints, its stdout
(`library_reports.reports_of`). Each report is journaled in
`memory/<method>/library_reports.jsonl` (`library_report.v1`) with the call it followed; the
first report of a build call that had not failed already makes that task a counted writer
failure, with the library's own message (`memory/writer/failures.jsonl`), and that call's
row in `calls.jsonl` says `ok: false` with the message (a call's row is written when the
next call starts or the scope ends, so that what the library says of its reply is on it).

Calls are attributed to the conversation (and question) set by `scope(...)`; a request that
arrives outside a scope is refused. The handlers run on one worker thread of the endpoint's
own (whatever HTTP thread received the request): the embedder's SQLite cache, like any
SQLite object, may be used only by the thread that opened it. A method that needs the
embedder outside a request (a dimension probe) uses `in_worker`.
"""

from __future__ import annotations

import contextlib
import shutil
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, Optional


from memorybench.errors import ModelCallError
from memorybench.hashing import sha256_text
from memorybench.llm.recording_proxy import THREAD_NAME, RecordingProxy, error_body
from memorybench.llm.records import ChatRequest, ChatResult
from memorybench.memory._records import LibraryEmbedCall, LibraryReport, WriterCall, WriterFailure, WriterRequest
from memorybench.memory._writer import bounded_json_schema, parse_json_object
from memorybench.memory._schema_budget import fit_bounds
from memorybench.memory.base import BuildContext
from memorybench.pack import layout
from memorybench.memory.library_reports import reports_of
from memorybench.secrets import scrub

#: characters of a role's system message that identify it (a library's prompt may end with variable text)
ROLE_PREFIX_CHARS = 200


def fresh_store(ctx: BuildContext, method: str, sample_id: str) -> tuple[str, Path]:
    """A wrapped library's store folder for one conversation (`memory/library_stores/<method>/<sample_id>`,
    relpath and path), emptied first: a killed build restarts its conversation from nothing."""
    from memorybench.pack.verify.context import LIBRARY_STORES

    relstore = f"{LIBRARY_STORES}{method}/{sample_id}"
    store = ctx.pack.path(relstore)
    if store.exists():
        shutil.rmtree(store)
    store.mkdir(parents=True)
    return relstore, store


class LibraryEndpoint:
    """The recording endpoint of one run of a wrapped library (a context manager).

    `roles` maps a task name to the start of the system message the library sends for it
    (its own prompt); `reply_schemas` maps a task name to the JSON Schema of its reply;
    `loggers` maps each of the library's loggers to the level from which its records are
    failures (below it, down to WARNING, they are journaled remarks), and `prints` says that
    the library also reports failures by printing to stdout."""

    def __init__(
        self,
        ctx: BuildContext,
        *,
        method: str,
        roles: Mapping[str, str] | None = None,
        reply_schemas: Mapping[str, Mapping[str, Any]] | None = None,
        max_items: int = 8,
        max_chars: int = 120,
        loggers: Mapping[str, int] | None = None,
        prints: bool = False,
    ) -> None:
        self.ctx = ctx
        self.method = method
        self.loggers, self.prints = dict(loggers or {}), prints
        #: the last writer call of the open scope, its row not yet written, and whether it failed
        self._held: WriterCall | None = None
        self._held_failed = False
        self._lock = threading.Lock()
        #: library reports journaled, and those that counted a writer task as failed
        self.reports = {"journaled": 0, "counted": 0}
        self.roles = {name: " ".join(text.split())[:ROLE_PREFIX_CHARS] for name, text in (roles or {}).items()}
        self.reply_schemas = {k: dict(v) for k, v in (reply_schemas or {}).items()}
        self.max_items, self.max_chars = max_items, max_chars
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix=THREAD_NAME)
        self.proxy = RecordingProxy(
            chat=lambda body: self.in_worker(self._chat, body), embed=lambda body: self.in_worker(self._embed, body)
        )
        self.sample_id: str | None = None
        self.question_id: str | None = None
        self._calls: dict[str, int] = {}
        self._embeds: dict[str, int] = {}
        #: rows journaled per route, for "calls the endpoint saw = rows in the pack"
        self.rows = {"chat": 0, "embed": 0}
        #: (role, json bounds record) per role, kept for the build cost
        self.json_bounds: dict[str, dict[str, Any]] = {}

    def __enter__(self) -> LibraryEndpoint:
        self.proxy.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.proxy.__exit__(*exc)
        self._worker.shutdown(wait=True)

    def in_worker(self, fn: Any, *args: Any) -> Any:
        """`fn(*args)` on the endpoint's worker thread (where the writer and embedder are used)."""
        return self._worker.submit(fn, *args).result()

    @property
    def base_url(self) -> str:
        return self.proxy.base_url

    @property
    def api_key(self) -> str:
        return self.proxy.api_key

    @contextlib.contextmanager
    def scope(self, sample_id: str, question_id: str | None = None) -> Iterator[None]:
        """Attribute the calls made inside the block to `sample_id` (and `question_id`);
        after the block, re-raise the first model-call failure the library swallowed."""
        self.sample_id, self.question_id = sample_id, question_id
        errors_before = len(self.proxy.errors)
        try:
            with reports_of(self.report, self.loggers, stdout=self.prints):
                yield
        except Exception:
            self._raise_cause(errors_before)
            raise
        finally:
            self._flush()
            self.sample_id = self.question_id = None
            if self.ctx.embedder is not None:
                # its SQLite cache was opened on the worker thread: closed there (it reopens on
                # next use), so that the run's own close on the main thread finds nothing open
                from memorybench.embed import Embedder

                self.in_worker(Embedder.close, self.ctx.embedder)
        self._raise_cause(errors_before)

    # -- what the library reports ---------------------------------------------------------
    def report(self, source: str, message: str, failure: bool = True) -> None:
        """What the library reported (`library_reports.reports_of` calls this): journaled with
        the call it followed; the first failure for a build call that had not failed counts
        that writer task as failed, with the library's own message (a remark only is journaled)."""
        sid = self.sample_id
        if sid is None:
            return  # outside a scope nothing is attributed (the handlers are attached only inside one)
        message = scrub(" ".join(str(message).split()))
        with self._lock:
            call = self._calls.get(sid, 0)
            last = self._held if self._held is not None and self._held.call == call else None
            held = last if failure else None
            # a task counts once, and only a build call's: a report before any call, or at question time, is journaled
            counted = self.question_id is None and held is not None and not self._held_failed
            if held is not None:
                said = f"the library reported: {message[:300]}"
                self._held = held.model_copy(update={"ok": False, "error": f"{held.error}; {said}" if held.error else said})
                self._held_failed = True
            self.ctx.pack.journal(layout.library_reports(self.method)).append(
                LibraryReport(
                    sample_id=sid,
                    method=self.method,
                    question_id=self.question_id,
                    call=call,
                    role=last.role if last is not None else None,
                    source=source,
                    message=message,
                    failure=failure,
                    counted=counted,
                )
            )
            self.reports["journaled"] += 1
            if counted and held is not None:
                self.reports["counted"] += 1
                writer = self.ctx.writer
                writer.usage.failures += 1
                writer.failures.append(
                    WriterFailure(
                        sample_id=sid,
                        method=self.method,
                        role=held.role,
                        error=message[:500],
                        action=(
                            f"reported by the library ({source}) after writer call {call} of {sid}; the library went on "
                            f"without what that reply should have given it ({layout.library_reports(self.method)})"
                        ),
                    )
                )

    def _hold(self, row: WriterCall, failed: bool) -> None:
        """Keep a call's row until the next call or the scope's end: a report may still mark it."""
        with self._lock:
            self._flush_locked()
            self._held, self._held_failed = row, failed

    def _flush(self) -> None:
        with self._lock:
            self._flush_locked()

    def _flush_locked(self) -> None:
        if self._held is not None:
            self.ctx.writer.calls.append(self._held)
        self._held, self._held_failed = None, False

    def _raise_cause(self, errors_before: int) -> None:
        for error in self.proxy.errors[errors_before:]:
            if isinstance(error, ModelCallError):
                raise error  # the run stops here, as on a writer call that failed after its retries

    # -- chat ---------------------------------------------------------------------------
    def role_of(self, messages: list[dict[str, str]], response_format: Any = None) -> str:
        """The task a request is: the role whose prompt its system message starts with; else
        the name of the JSON schema it asks for (a library that names its reply models, as
        Graphiti does, names its tasks); else `chat`."""
        system = next((m["content"] for m in messages if m.get("role") == "system"), "")
        head = " ".join(system.split())[:ROLE_PREFIX_CHARS]
        for name, prefix in self.roles.items():
            if head and head.startswith(prefix[: len(head)]) and prefix.startswith(head[: len(prefix)]):
                return name
        if isinstance(response_format, dict) and isinstance(response_format.get("json_schema"), dict):
            named = str(response_format["json_schema"].get("name") or "")
            if named and all(c.isalnum() or c in "_-" for c in named):
                return named
        return "chat"

    def _chat(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        if self.sample_id is None:
            return 409, error_body("a model call outside a build or question scope is not forwarded", "unattributed")
        writer = self.ctx.writer
        sample_id = self.sample_id
        unsupported = [k for k in ("tools", "functions", "tool_choice", "n", "logprobs") if body.get(k) not in (None, 1, False)]
        messages, problem = _plain_messages(body.get("messages"))
        if unsupported or problem:
            reason = problem or f"request fields not supported by the recording endpoint: {', '.join(unsupported)}"
            writer.usage.failures += 1
            writer.failures.append(
                WriterFailure(
                    sample_id=sample_id,
                    method=self.method,
                    role=f"{self.method}:refused",
                    error=reason,
                    action="refused; the library saw an HTTP 400",
                )
            )
            return 400, error_body(reason, "unsupported")
        role = self.role_of(messages, body.get("response_format"))
        endpoint = writer.endpoint()
        response_format, max_tokens = self._shape(role, body, writer)
        request = ChatRequest(
            model=endpoint.model,
            messages=tuple(messages),
            temperature=float(body["temperature"]) if body.get("temperature") is not None else float(writer.node.temperature),
            max_tokens=max_tokens,
            seed=writer.node.get("seed"),
            response_format=response_format,
            stop=None,
        )
        result = endpoint.client.complete(request)  # ModelCallError: a 500 to the library, re-raised by scope()
        writer.account(result)
        text = result.text or ""
        error = None
        if response_format is not None:
            try:
                parse_json_object(text)
            except ValueError as e:
                error = str(e)
            if result.finish_reason == "length":
                writer.usage.cut_by_length += 1
                error = f"the reply was cut at max_tokens={max_tokens} (finish_reason length)" + (f"; {error}" if error else "")
        elif not text.strip():
            error = "empty reply"
        self._calls[sample_id] = self._calls.get(sample_id, 0) + 1
        system = next((m["content"] for m in messages if m.get("role") == "system"), "")
        self._hold(
            WriterCall(
                sample_id=sample_id,
                method=self.method,
                role=f"{self.method}:{role}",
                call=self._calls[sample_id],
                attempt="first",
                **self._template(role, system),
                request=WriterRequest(
                    model=request.model,
                    messages=[dict(m) for m in request.messages],
                    temperature=request.temperature,
                    max_tokens=request.max_tokens,
                    seed=request.seed,
                    response_format=request.response_format,
                ),
                response=result,
                ok=error is None,
                error=error,
            ),
            failed=error is not None,
        )
        self.rows["chat"] += 1
        if error is not None:
            writer.usage.failures += 1
            writer.failures.append(
                WriterFailure(
                    sample_id=sample_id,
                    method=self.method,
                    role=f"{self.method}:{role}",
                    error=error,
                    action="passed to the library as it came back",
                )
            )
        return 200, _completion(result, request.model)

    def _template(self, role: str, system: str) -> dict[str, str]:
        """The call's template: the prompt file of the role (the library's prompt, copied
        verbatim under prompts/: its words are instructions to verify, not leaked gold) when
        the system message is that file's text; else `library:<method>/<role>` and the
        system message's sha256."""
        template = self.ctx.writer.templates.get(role)
        if template is not None and template.text.strip() == system.strip():
            return {"template": template.relpath, "template_sha256": template.sha256}
        return {"template": f"library:{self.method}/{role}", "template_sha256": sha256_text(system)}

    def _shape(self, role: str, body: dict[str, Any], writer: Any) -> tuple[Optional[dict[str, Any]], int]:
        """(response_format, max_tokens): the library's own, capped by writer.max_tokens; with
        writer.json_schema and a declared reply schema, that schema bounded to fit."""
        budget = int(writer.node.max_tokens)
        asked = body.get("max_tokens") or body.get("max_completion_tokens")
        max_tokens = min(int(asked), budget) if asked else budget
        response_format = body.get("response_format")
        if response_format is None or not writer.node.get("json_schema"):
            return response_format, max_tokens
        schema = self.reply_schemas.get(role)
        if schema is None and response_format.get("type") == "json_schema":
            schema = (response_format.get("json_schema") or {}).get("schema")
        if schema is None:
            return response_format, max_tokens
        fitted = fit_bounds(
            lambda n, c: bounded_json_schema(schema, max_items=n, max_chars=c),
            max_items=self.max_items,
            max_chars=self.max_chars,
            budget=budget,
            count=_counter(writer),
            what=f"memory={self.method}, library task {role!r}",
        )
        self.json_bounds[role] = fitted.record()
        return {"type": "json_object", "schema": fitted.schema}, fitted.worst_case_tokens

    # -- embeddings ---------------------------------------------------------------------
    def _embed(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        if self.sample_id is None:
            return 409, error_body("an embedding request outside a build or question scope is not forwarded", "unattributed")
        raw = body.get("input")
        texts = [raw] if isinstance(raw, str) else raw
        if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
            return 400, error_body("input must be a string or a list of strings (token arrays are not supported)", "unsupported")
        embedder = self.ctx.embedder
        before = embedder.usage.copy()
        started = time.perf_counter()
        vectors = embedder.embed(texts)
        spent = embedder.usage.since(before)
        sid = self.sample_id
        self._embeds[sid] = self._embeds.get(sid, 0) + 1
        self.ctx.pack.journal(f"memory/{self.method}/embed_calls.jsonl").append(
            LibraryEmbedCall(
                sample_id=sid,
                method=self.method,
                question_id=self.question_id,
                call=self._embeds[sid],
                model_requested=body.get("model"),
                texts=texts,
                cache_hits=int(spent["cache_hits"]),
                tokens=int(spent["tokens"]),
                cost_usd=spent["cost_usd"],
                latency_s=round(time.perf_counter() - started, 6),
                dimensions=int(vectors.shape[1]),
            )
        )
        self.rows["embed"] += 1
        data = [{"object": "embedding", "index": i, "embedding": [float(x) for x in row]} for i, row in enumerate(vectors)]
        tokens = int(spent["tokens"])
        return 200, {
            "object": "list",
            "data": data,
            "model": str(embedder.identity.get("model") or embedder.name),
            "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
        }


def _plain_messages(raw: Any) -> tuple[list[dict[str, str]], str | None]:
    """The messages as role/content strings; (_, reason) when one cannot be (images, tool calls)."""
    if not isinstance(raw, list) or not raw:
        return [], "messages must be a non-empty list"
    out = []
    for m in raw:
        if not isinstance(m, dict) or not isinstance(m.get("role"), str):
            return [], "a message without a role"
        content = m.get("content")
        if isinstance(content, list):  # text parts only
            if any(not isinstance(p, dict) or p.get("type") != "text" for p in content):
                return [], "a message with non-text parts (images) is not supported"
            content = "".join(str(p.get("text", "")) for p in content)
        if not isinstance(content, str) or m.get("tool_calls") or m.get("role") == "tool":
            return [], "tool calls and tool messages are not supported by the recording endpoint"
        out.append({"role": m["role"], "content": content})
    return out, None


def _completion(result: ChatResult, model: str) -> dict[str, Any]:
    usage = result.usage
    return {
        "id": result.response_id or f"chatcmpl-{result.request_sha256[:12]}",
        "object": "chat.completion",
        "created": 0,
        "model": result.model_answered or model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": result.text},
                "finish_reason": result.finish_reason or "stop",
            }
        ],
        "usage": {
            "prompt_tokens": usage.prompt_tokens,
            "completion_tokens": usage.completion_tokens,
            "total_tokens": usage.prompt_tokens + usage.completion_tokens,
            "prompt_tokens_details": {"cached_tokens": usage.cached_tokens},
        },
    }


def _counter(writer: Any) -> Any:
    """The tokenizer a schema's worst case is counted with (as the writer's own tasks count it)."""
    if writer.is_local:
        from memorybench.llm.local.models import LOCAL_MODELS, count_tokens

        spec = LOCAL_MODELS.get(str(writer.node.model))
        return lambda text: count_tokens(text, spec)
    return len
