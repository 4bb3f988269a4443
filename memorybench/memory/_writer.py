"""The writer: the model that writes memory, behind one traced `call`.

A method asks for a task by its role (`summary`, `graph`, `extract`...): the template
`memory.prompts.<role>` filled with session text only, after the writer's system message
(`writer.prompt`). Every call is appended to `memory/writer/calls.jsonl` with its
`sample_id`. A JSON task (response_format json_object; with `writer.json_schema` also the
task's schema (`grammar_schema`), size-bounded so that its longest reply fits
`writer.max_tokens`, and that many tokens asked for: `_schema_budget`) whose reply does not
parse, does not match its schema, or was cut at max_tokens (`finish_reason` length) gets
one repair turn (the reply and the error, asking again);
if that fails too the task is a failure: `call` returns `ok=False`, the method skips that
input and says so in `memory/writer/failures.jsonl`. A call that fails at the HTTP level
after the client's retries stops the run (rerun to resume), as a reader call does.

The endpoint is opened on the first call, so a run whose memory is already in the pack
starts no writer (and no local server).
"""

from __future__ import annotations

import contextlib
import copy
import json
import re
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ValidationError

from memorybench.hashing import sha256_text
from memorybench.errors import UserError
from memorybench.llm.endpoints import validate_endpoint
from memorybench.llm.records import ChatRequest, ChatResult, ModelIdentity
from memorybench.llm.usage import UsageMeter
from memorybench.memory._records import WriterCall, WriterFailure, WriterRequest
from memorybench.memory._schema_budget import FittedBounds, fit_bounds
from memorybench.templates import PromptTemplate

CALLS = "memory/writer/calls.jsonl"
FAILURES = "memory/writer/failures.jsonl"
REPAIR = (
    "That reply could not be used ({error}). Reply again with only one JSON object in the format asked for, and nothing else."
)

if TYPE_CHECKING:  # a type only: reading a class off its registry needs no OmegaConf (verify)
    from omegaconf import DictConfig
EMPTY_REPAIR = "That reply was empty. Reply again with the text asked for."


@dataclass(frozen=True)
class WriterTemplate:
    """One task template under prompts/: exact slots, filled in one pass."""

    role: str
    relpath: str
    text: str
    slots: frozenset[str]

    @property
    def sha256(self) -> str:
        return sha256_text(self.text)

    def fill(self, values: Mapping[str, str]) -> str:
        missing = self.slots - set(values)
        if missing:
            raise KeyError(f"{self.relpath}: no value for {sorted(missing)}")
        if not self.slots:
            return self.text
        pattern = re.compile(r"\{(" + "|".join(re.escape(s) for s in sorted(self.slots)) + r")\}")
        return pattern.sub(lambda m: str(values[m.group(1)]), self.text)


def load_template(role: str, relpath: str, slots: frozenset[str]) -> WriterTemplate:
    template = PromptTemplate.load(relpath, slots=slots)
    return WriterTemplate(role, template.relpath, template.text, slots)


def parse_json_object(text: str) -> dict[str, Any]:
    """The JSON object in a reply: the whole text, or inside code fences, or from the first
    `{` to the last `}`; control characters inside strings are accepted. Raises ValueError
    when there is none."""
    candidates = [text.strip()]
    fenced = re.search(r"```(?:json)?\s*(.*?)```", text, re.DOTALL)
    if fenced:
        candidates.append(fenced.group(1).strip())
    start, end = text.find("{"), text.rfind("}")
    if 0 <= start < end:
        candidates.append(text[start : end + 1])
    for candidate in candidates:
        try:
            # strict=False: a raw newline or tab inside a string (llama.cpp's grammar lets one
            # through) is read as that character instead of failing the whole reply
            value = json.loads(candidate, strict=False)
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
        raise ValueError(f"the reply is JSON but not an object ({type(value).__name__})")
    raise ValueError("the reply is not JSON")


def validate_reply(text: str, schema: type[BaseModel], context: Mapping[str, Any] | None = None) -> BaseModel:
    """The reply as `schema` (validated with `context`); ValueError with a short reason otherwise."""
    data = parse_json_object(text)
    try:
        return schema.model_validate(data, context=dict(context) if context is not None else None)
    except ValidationError as e:
        err = e.errors()[0]
        where = ".".join(str(x) for x in err["loc"]) or "object"
        raise ValueError(f"schema mismatch at {where}: {err['msg']}") from None


def grammar_schema(schema: type[BaseModel], context: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The JSON Schema a grammar-constrained server is given for `schema`: the model's own
    `grammar_schema(context)` when it has one (a shape the grammar can enforce that the
    parser's checks need: an event's required fields, the ids shown), else its JSON Schema."""
    own = getattr(schema, "grammar_schema", None)
    return copy.deepcopy(own(context)) if callable(own) else schema.model_json_schema()


def bounded_json_schema(schema: type[BaseModel] | Mapping[str, Any], *, max_items: int, max_chars: int) -> dict[str, Any]:
    """`schema` (a model, or a JSON Schema) as JSON Schema with every list at most
    `max_items` long and every free string at most `max_chars` characters (a tighter bound
    of its own is kept). A server that compiles it into a grammar (llama.cpp) can then only
    produce a reply of the right shape that ends within a known length
    (`_schema_budget.worst_case_tokens`), so a small model can neither answer in the wrong
    shape nor ramble until max_tokens cuts its JSON. The reply is still validated against
    the model itself."""

    def bound(node: Any) -> None:
        if isinstance(node, dict):
            if node.get("type") == "array":
                node["maxItems"] = min(int(node.get("maxItems", max_items)), max_items)
            if node.get("type") == "string" and "enum" not in node and "const" not in node:
                node["maxLength"] = min(int(node.get("maxLength", max_chars)), max_chars)
                if int(node.get("minLength", 0)) > node["maxLength"]:
                    node["minLength"] = node["maxLength"]
            for value in node.values():
                bound(value)
        elif isinstance(node, list):
            for value in node:
                bound(value)

    out = copy.deepcopy(dict(schema)) if isinstance(schema, Mapping) else schema.model_json_schema()
    bound(out)
    return out


@dataclass
class WriterUsage(UsageMeter):
    calls: int = 0
    repairs: int = 0
    failures: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    #: USD; None once any call had no price in the table
    cost_usd: float | None = 0.0
    #: summed call latency, seconds
    latency_s: float = 0.0
    #: JSON replies that ended at max_tokens (finish_reason length): each one unusable
    cut_by_length: int = 0


@dataclass
class WriterReply:
    ok: bool
    text: str
    #: the validated object for a JSON task
    data: Any = None
    error: str | None = None


class Writer:
    """Writer calls for one run: templates loaded (and copied into the pack's prompts/)
    up front, the endpoint opened on first use, every call journaled."""

    def __init__(
        self,
        cfg: DictConfig,
        pack: Any,
        cache_dir: Path,
        *,
        method: str,
        templates: Mapping[str, frozenset[str]],
        longest_prompt_tokens: int = 0,
    ) -> None:
        node = cfg.writer
        if node.provider in (None, "none"):
            raise UserError(
                f"memory={method} writes its memory with a model, but writer={node.name}; add writer=openai, "
                "writer=local, or writer=openai_compatible writer.base_url=... writer.model=..."
            )
        validate_endpoint("writer", node)  # base_url and model for a server, sane numbers
        self.node = node
        self.cfg = cfg
        self.pack = pack
        self.cache_dir = cache_dir
        self.method = method
        self.longest_prompt_tokens = longest_prompt_tokens
        prompts = cfg.memory.get("prompts") or {}
        self.templates: dict[str, WriterTemplate] = {}
        for role, slots in templates.items():
            relpath = prompts.get(role)
            if not relpath:
                raise UserError(
                    f"memory.prompts.{role} is not set for memory={method}; add memory.prompts.{role}=writers/FILE.txt"
                )
            self.templates[role] = load_template(role, str(relpath), slots)
        if not node.get("prompt"):
            raise UserError(
                "writer.prompt (the writer's system message file) is not set; add writer.prompt=writers/system_v1.txt"
            )
        self.system = load_template("system", str(node.prompt), frozenset())
        for template in (self.system, *self.templates.values()):
            pack.write_text(f"prompts/{template.relpath}", template.text)
        self.usage = WriterUsage()
        self.calls = pack.journal(CALLS)
        self.failures = pack.journal(FAILURES)
        self._stack = contextlib.ExitStack()
        self._endpoint: Any = None
        self._opened: ModelIdentity | None = None  # the endpoint's identity, kept after close
        self._answered: set[str] = set()
        self._counts: dict[str, int] = {}
        self._fits: dict[tuple[str, str, int], FittedBounds] = {}
        #: with writer.json_schema: per task, the bounds its schema was sent with and its
        #: worst case in tokens (the request's max_tokens), for memory/build_cost.jsonl
        self.json_bounds: dict[str, dict[str, Any]] = {}

    def account(self, result: ChatResult) -> None:
        """Add one answered call to the writer's usage and the models that answered (run_meta's
        models: the writer as answered), for our own calls and a wrapped library's alike."""
        if result.model_answered:
            self._answered.add(result.model_answered)
        usage = self.usage
        usage.calls += 1
        usage.prompt_tokens += result.usage.prompt_tokens
        usage.completion_tokens += result.usage.completion_tokens
        usage.cached_tokens += result.usage.cached_tokens
        usage.latency_s += result.latency_s
        usage.cost_usd = (
            None if usage.cost_usd is None or result.cost_usd is None else round(usage.cost_usd + result.cost_usd, 10)
        )

    # -- identity ----------------------------------------------------------------------
    @property
    def model_identity(self) -> ModelIdentity:
        if self._opened is not None:
            identity = self._opened
        else:
            identity = ModelIdentity(
                role="writer",
                provider=str(self.node.provider),
                requested=str(self.node.model) if self.node.get("model") else None,
                base_url=str(self.node.base_url) if self.node.get("base_url") else None,
                local=self.node.provider == "local",
            )
        return identity.model_copy(update={"answered": sorted(self._answered)})

    @property
    def is_local(self) -> bool:
        return self.node.provider == "local"

    # -- calls -------------------------------------------------------------------------
    def endpoint(self) -> Any:
        if self._endpoint is None:
            from memorybench.llm.endpoints import open_endpoint

            self._endpoint = self._stack.enter_context(
                open_endpoint(
                    self.node,
                    "writer",
                    cache_dir=self.cache_dir,
                    prices=self.cfg.get("pricing") or {},
                    longest_prompt_tokens=self.longest_prompt_tokens,
                    log_dir=self.pack.root / "memory" / "writer",
                )
            )
            self._opened = self._endpoint.identity
        return self._endpoint

    def call(
        self,
        role: str,
        values: Mapping[str, str],
        *,
        sample_id: str,
        schema: type[BaseModel] | None = None,
        context: Mapping[str, Any] | None = None,
        session: int | None = None,
        speaker: str | None = None,
        max_items: int | None = None,
    ) -> WriterReply:
        """One task: the filled template, parsed against `schema` (with validation
        `context`) when given, in JSON mode. `max_items` replaces `writer.json_max_items`
        for this task's lists (a method whose list has its own bound, such as max_facts)."""
        template = self.templates[role]
        messages = [
            {"role": "system", "content": self.system.text.strip()},
            {"role": "user", "content": template.fill(values)},
        ]
        common = dict(
            sample_id=sample_id,
            role=role,
            template=template,
            session=session,
            speaker=speaker,
            schema=schema,
            context=context,
            max_items=max_items,
        )
        text, error = self._send(messages, attempt="first", **common)
        if error is None:
            return WriterReply(True, text, self._parsed(text, schema, context))
        self.usage.repairs += 1
        repair = REPAIR.format(error=error) if schema is not None else EMPTY_REPAIR
        messages = [*messages, {"role": "assistant", "content": text}, {"role": "user", "content": repair}]
        text, error = self._send(messages, attempt="repair", **common)
        if error is None:
            return WriterReply(True, text, self._parsed(text, schema, context))
        self.usage.failures += 1
        return WriterReply(False, text, None, error)

    def record_failure(
        self,
        reply: WriterReply,
        *,
        sample_id: str,
        role: str,
        action: str,
        session: int | None = None,
        speaker: str | None = None,
        sources: list[str] | None = None,
    ) -> None:
        """Journal a task given up (and say it on stderr): the method skipped its input."""
        self.failures.append(
            WriterFailure(
                sample_id=sample_id,
                method=self.method,
                role=role,
                session=session,
                speaker=speaker,
                sources=list(sources or []),
                error=reply.error or "unknown",
                action=action,
            )
        )
        where = f"session {session}" if session is not None else "input"
        who = f" ({speaker})" if speaker else ""
        print(f"memorybench: writer {role} for {sample_id} {where}{who} failed twice ({reply.error}); {action}", file=sys.stderr)

    def close(self) -> None:
        self._stack.close()
        self._endpoint = None

    # -- internals ---------------------------------------------------------------------
    @staticmethod
    def _check(text: str, schema: type[BaseModel] | None, context: Mapping[str, Any] | None = None) -> str | None:
        if schema is None:
            return None if text.strip() else "empty reply"
        try:
            validate_reply(text, schema, context)
        except ValueError as e:
            return str(e)
        return None

    @staticmethod
    def _parsed(text: str, schema: type[BaseModel] | None, context: Mapping[str, Any] | None = None) -> Any:
        return validate_reply(text, schema, context) if schema is not None else None

    def _fitted(
        self, role: str, schema: type[BaseModel], context: Mapping[str, Any] | None, max_items: int | None
    ) -> FittedBounds:
        """The task's grammar schema with bounds whose worst case fits writer.max_tokens
        (`_schema_budget.fit_bounds`); the bounds used per task are kept for the build cost."""
        base = grammar_schema(schema, context)
        items, chars = max_items or int(self.node.json_max_items), int(self.node.json_max_chars)
        key = (role, json.dumps(base, sort_keys=True), items)
        fitted = self._fits.get(key)
        if fitted is None:
            fitted = self._fits[key] = fit_bounds(
                lambda n, c: bounded_json_schema(base, max_items=n, max_chars=c),
                max_items=items,
                max_chars=chars,
                budget=int(self.node.max_tokens),
                count=self._count(),
                what=f"memory={self.method}, writer task {role!r} (writer.json_max_items={items}, writer.json_max_chars={chars})",
            )
            if fitted.tightened and role not in self.json_bounds:
                print(
                    f"memorybench: writer task {role}: lists of at most {fitted.max_items} items and strings of at most "
                    f"{fitted.max_chars} characters (asked {items} and {chars}), so that the longest reply the grammar "
                    f"allows ({fitted.worst_case_tokens} tokens) fits writer.max_tokens={self.node.max_tokens}",
                    file=sys.stderr,
                )
        seen = self.json_bounds.get(role)
        if seen is None or fitted.worst_case_tokens > seen["worst_case_tokens"]:
            self.json_bounds[role] = fitted.record()  # the task's longest possible reply so far
        return fitted

    def _count(self) -> Callable[[str], int]:
        """The tokenizer a schema's worst case is counted with: the embedded model's own
        (`count_tokens`, the one its context is sized with); for any other server, whose
        tokenizer we do not have, one token per character (an upper bound for ASCII text
        under any BPE vocabulary; `estimate_tokens` is for prose and errs low on JSON's
        punctuation)."""
        if self.is_local:
            from memorybench.llm.local.models import LOCAL_MODELS, count_tokens

            spec = LOCAL_MODELS.get(str(self.node.model))  # None (auto): the most over all local models
            return lambda text: count_tokens(text, spec)
        return len

    def _request_shape(
        self, role: str, schema: type[BaseModel] | None, context: Mapping[str, Any] | None, max_items: int | None
    ) -> tuple[dict[str, Any] | None, int]:
        """(response_format, max_tokens) of a task: with writer.json_schema, the bounded
        schema and its worst case in tokens; else json_object (or none) and writer.max_tokens."""
        if schema is None:
            return None, int(self.node.max_tokens)
        if not self.node.get("json_schema"):
            return {"type": "json_object"}, int(self.node.max_tokens)
        fitted = self._fitted(role, schema, context, max_items)
        return {"type": "json_object", "schema": fitted.schema}, fitted.worst_case_tokens

    def _send(
        self,
        messages: list[dict[str, str]],
        *,
        attempt: str,
        sample_id: str,
        role: str,
        template: WriterTemplate,
        session: int | None,
        speaker: str | None,
        schema: type[BaseModel] | None,
        context: Mapping[str, Any] | None,
        max_items: int | None,
    ) -> tuple[str, str | None]:
        """One call, journaled: (its text, why it cannot be used or None)."""
        endpoint = self.endpoint()
        json_mode = schema is not None
        stop = None if json_mode or not endpoint.stop else tuple(endpoint.stop)
        response_format, max_tokens = self._request_shape(role, schema, context, max_items)
        request = ChatRequest(
            model=endpoint.model,
            messages=tuple(messages),
            temperature=float(self.node.temperature),
            max_tokens=max_tokens,
            seed=self.node.get("seed"),
            response_format=response_format,
            stop=stop,
        )
        result = endpoint.client.complete(request)
        self.account(result)
        self._counts[sample_id] = self._counts.get(sample_id, 0) + 1
        text = result.text or ""
        error = self._check(text, schema, context)
        if json_mode and result.finish_reason == "length":
            # a JSON reply cut at max_tokens is never used, even where what came back parses
            self.usage.cut_by_length += 1
            error = f"the reply was cut at max_tokens={max_tokens} (finish_reason length)" + (f"; {error}" if error else "")
        self.calls.append(
            WriterCall(
                sample_id=sample_id,
                method=self.method,
                role=role,
                call=self._counts[sample_id],
                attempt=attempt,  # type: ignore[arg-type]
                session=session,
                speaker=speaker,
                template=template.relpath,
                template_sha256=template.sha256,
                request=WriterRequest(
                    model=request.model,
                    messages=[dict(m) for m in request.messages],
                    temperature=request.temperature,
                    max_tokens=request.max_tokens,
                    seed=request.seed,
                    response_format=request.response_format,
                    stop=list(stop) if stop else None,
                ),
                response=result,
                ok=error is None,
                error=error,
            )
        )
        return text, error
