"""Cost before you pay: what a run spec will ask its models, counted before any call.

`estimate_run(cfg)` composes what `qa` would send and counts it, per model role:

- **calls**: one reader call per selected question (answerer=reader); for memory a writer
  builds, the writer's calls over the conversations those questions need (cut to
  `memory.max_sessions`, as the build cuts them), as the method declares them
  (`writer_calls`, `memorybench.memory._writer_calls`): exact where the input fixes them,
  else an expectation from a measured build with its range (`calls_low`, `calls_high`) and
  its basis in `notes`.
- **input tokens**: every reader prompt (system message, filled template, chat format),
  counted with the reader's own tokenizer (`tokenizer_for`): tiktoken's encoding of an
  OpenAI model (loaded offline only: an encoding not on this machine is replaced by
  cl100k_base, and the line says so), the GGUF's own vocabulary for the embedded model
  (llama.cpp, vocabulary only), else a stated approximation. Memory that software builds
  without a model (full_context, released summaries) is built and counted exactly; memory
  a writer or a retriever makes is the method's own upper bound per question.
- **cached input tokens**: for a provider that caches shared prompt prefixes (OpenAI: a
  prefix of at least 1024 tokens, in steps of 128), the prefix every question of a
  conversation shares, on each call after the conversation's first. That assumes every
  such call hits the cache, so `cost_usd` is the low end; `cost_usd_uncached` the high end.
- **output tokens**: calls x `max_tokens`, an upper bound (replies usually stop earlier).
- **cost**: from the run's price table (`memorybench.llm.pricing`); None when a model has
  no price, never 0.

What cannot be counted before the run is said in `notes` and leaves its numbers None
(an agent's turns, a wrapped library's prompts, the writer calls of a method that declares
none). `write_estimate` records the
estimate in a pack (`estimate.json`, written when the run starts); after the run,
`estimate_vs_actual` sets it beside metrics.json's usage.
"""

from __future__ import annotations

import contextlib
import hashlib
import math
import os
import re
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

from pydantic import Field, SerializerFunctionWrapHandler, model_serializer

from memorybench.records import Record

if TYPE_CHECKING:  # a type only: verify reads an estimate.json's record without OmegaConf
    from omegaconf import DictConfig

#: the pack file of a run's estimate (beside metrics.json, whose schema it leaves as it is)
ESTIMATE = "estimate.json"
#: OpenAI caches a prompt's prefix once it is this long, in steps of CACHE_STEP tokens
CACHE_MIN_TOKENS = 1024
CACHE_STEP = 128
#: providers whose servers cache shared prompt prefixes by themselves
CACHING_PROVIDERS = frozenset({"openai"})
#: OpenAI's chat format: tokens around each message, and priming the reply
OPENAI_PER_MESSAGE, OPENAI_PER_REPLY = 4, 3
#: ChatML (SmolLM2's embedded template): `<|im_start|>role\n ... <|im_end|>\n` around a message
CHATML_PER_MESSAGE, CHATML_PER_REPLY = 5, 3
#: the approximation where no tokenizer of the model is at hand
CHARS_PER_TOKEN = 4.0
_MEMORY, _QUESTION = "\x00memorybench-memory\x00", "\x00memorybench-question\x00"


class RoleEstimate(Record):
    """One model role's calls in a run (reader, agent)."""

    role: str
    model: Optional[str] = None
    calls: Optional[int] = None
    input_tokens: Optional[int] = None
    cached_input_tokens: int = 0
    #: calls x max_tokens: an upper bound
    output_tokens_max: Optional[int] = None
    cost_usd: Optional[float] = None
    #: the same calls with no prompt cache hit
    cost_usd_uncached: Optional[float] = None
    #: how the tokens were counted ("tiktoken o200k_base", "gemma3-270m GGUF vocabulary", ...)
    tokenizer: Optional[str] = None
    #: whether input_tokens is the tokenizer's exact count of the prompts (else a bound or an approximation)
    exact: bool = False
    #: where `calls` is an expectation (a writer's calls that depend on its replies): the fewest
    #: and the most the input and the bounds allow (calls_high None: no bound); left out of the
    #: JSON where the calls are counted exactly, as every reader's are
    calls_low: Optional[int] = None
    calls_high: Optional[int] = None
    #: whether `calls` is exact (None: left out, as for a reader, whose calls are)
    calls_exact: Optional[bool] = None

    @model_serializer(mode="wrap")
    def _leave_out_unset(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # a reader's role keeps the JSON it had before writers were estimated (estimate.json's bytes)
        data = handler(self)
        if self.calls_exact is None:
            for key in ("calls_low", "calls_high", "calls_exact"):
                data.pop(key, None)
        return data


class RunEstimate(Record, schema="estimate.v1"):
    """What a run spec will ask its models, counted before any call (`estimate.json`)."""

    run_id: str
    questions: int
    roles: list[RoleEstimate] = Field(default_factory=list)
    #: the sum over roles; None when any role's cost is unknown
    cost_usd: Optional[float] = None
    cost_usd_uncached: Optional[float] = None
    #: some model calls of the run (a writer's, an embedder's) are not in the numbers: see notes
    partial: bool = False
    notes: list[str] = Field(default_factory=list)


# -- tokenizers ------------------------------------------------------------------------------
@dataclass(frozen=True)
class Tokenizer:
    """How a model's server counts a chat prompt: `count` (no BOS) over each message, plus
    the chat format's tokens around them."""

    name: str
    count: Callable[[str], int]
    per_message: int
    per_prompt: int
    exact: bool

    def prompt_tokens(self, contents: Sequence[int]) -> int:
        return sum(contents) + self.per_message * len(contents) + self.per_prompt


def _approximate(text: str) -> int:
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def _tiktoken_offline(name: str) -> Any:
    """tiktoken's encoding `name` if it is on this machine (never downloaded), else None."""
    try:
        import tiktoken
    except ImportError:
        return None
    if name == "cl100k_base":
        from memorybench.memory._tokens import encoding

        try:
            return encoding()
        except Exception:  # noqa: BLE001  (the offline package missing too: no count)
            return None
    import hashlib

    try:
        from tiktoken_ext.openai_public import ENCODING_CONSTRUCTORS
    except ImportError:
        return None
    constructor = ENCODING_CONSTRUCTORS.get(name)
    if constructor is None:
        return None
    url = f"https://openaipublic.blob.core.windows.net/encodings/{name}.tiktoken"
    folder = (
        os.environ.get("TIKTOKEN_CACHE_DIR")
        or os.environ.get("DATA_GYM_CACHE_DIR")
        or os.path.join(tempfile.gettempdir(), "data-gym-cache")
    )
    if not (Path(folder) / hashlib.sha1(url.encode()).hexdigest()).is_file():
        return None
    try:
        return tiktoken.get_encoding(name)
    except Exception:  # noqa: BLE001
        return None


def _openai_encoding_name(model: str) -> str | None:
    try:
        from tiktoken.model import encoding_name_for_model
    except ImportError:
        return None
    try:
        return encoding_name_for_model(model)
    except KeyError:
        return None


def tokenizer_for(node: Mapping[str, Any]) -> Tokenizer:
    """The tokenizer an endpoint node's server counts with, or the closest one at hand."""
    provider = str(node.get("provider") or "")
    model = str(node.get("model") or "")
    if provider == "local":
        return _local_tokenizer(model or "auto")
    wanted = _openai_encoding_name(model)
    if wanted is not None:
        enc = _tiktoken_offline(wanted)
        if enc is not None:
            return Tokenizer(
                f"tiktoken {wanted}",
                lambda t, e=enc: len(e.encode(t, disallowed_special=())),
                OPENAI_PER_MESSAGE,
                OPENAI_PER_REPLY,
                exact=True,
            )
    fallback = _tiktoken_offline("cl100k_base")
    if fallback is not None:
        why = f"{wanted} is not on this machine" if wanted else f"no tokenizer of {model or 'the model'} is known"
        return Tokenizer(
            f"tiktoken cl100k_base, approximate ({why})",
            lambda t, e=fallback: len(e.encode(t, disallowed_special=())),
            OPENAI_PER_MESSAGE,
            OPENAI_PER_REPLY,
            exact=False,
        )
    return Tokenizer(
        f"approximation: {CHARS_PER_TOKEN:g} characters per token (no tokenizer installed)",
        _approximate,
        OPENAI_PER_MESSAGE,
        OPENAI_PER_REPLY,
        exact=False,
    )


def _local_tokenizer(requested: str) -> Tokenizer:
    from memorybench.llm.local.models import AUTO_ORDER, COMPLETION_CHAT_FORMAT, LOCAL_MODELS, count_tokens, static_choice

    name = static_choice(requested) or AUTO_ORDER[0]
    spec = LOCAL_MODELS[name]
    try:
        import llama_cpp  # noqa: F401
    except ImportError:
        return Tokenizer(
            f"approximation: {CHARS_PER_TOKEN:g} characters per token (llama-cpp-python not installed)",
            _approximate,
            2,
            1,
            exact=False,
        )

    def count(text: str) -> int:
        return count_tokens(text, spec) - 1  # count_tokens adds BOS: once per prompt, in per_prompt

    if spec.chat_format == COMPLETION_CHAT_FORMAT:
        # the messages' texts joined by a blank line, after BOS (chat_formats.render_completion_prompt)
        blank = count("\n\n")
        return Tokenizer(f"{name} GGUF vocabulary", count, blank, 1 - blank, exact=True)
    return Tokenizer(
        f"{name} GGUF vocabulary (ChatML template tokens approximated)",
        count,
        CHATML_PER_MESSAGE,
        1 + CHATML_PER_REPLY,
        exact=False,
    )


# -- the run ---------------------------------------------------------------------------------
@dataclass
class _Prompt:
    """A reader prompt split where the memory and the question go, each part counted once."""

    system: str | None
    parts: list[str]


def _reader_prompt(cfg: DictConfig, speakers: tuple[str, str]) -> _Prompt:
    """The reader's messages with placeholders for the memory and the question, rendered
    as `memorybench.answer.reader.ReaderAnswerer.call` renders them."""
    from memorybench.answer.prompt import SYSTEM_MESSAGE, fill_template, pinned_reader, reader_template
    from memorybench.templates import BenchmarkReaderTemplate

    pinned = pinned_reader(cfg)
    if pinned is None:
        user, system = fill_template(reader_template(str(cfg.reader.prompt)).text, _MEMORY, _QUESTION), SYSTEM_MESSAGE
    else:
        pins = cfg.paths.get("pins")
        values = {"memory": _MEMORY, "question": _QUESTION}
        if isinstance(pinned, BenchmarkReaderTemplate):  # a benchmark's own: its typical extra slots
            values.update(pinned.sizing_values(speakers))
        elif pinned.extra_slots:
            values.update(zip(("speaker_1", "speaker_2"), speakers))
        user, system = pinned.render(pinned.text(pins), values), pinned.system(pins)
    return _Prompt(system, re.split(f"({re.escape(_MEMORY)}|{re.escape(_QUESTION)})", user))


def _cached(prefix_tokens: int) -> int:
    return 0 if prefix_tokens < CACHE_MIN_TOKENS else prefix_tokens // CACHE_STEP * CACHE_STEP


@contextlib.contextmanager
def _scratch_context(cfg: DictConfig) -> Iterator[Any]:
    """The run's memory method, and for memory software builds up front a build context
    over a throwaway pack (it is built as qa builds it); None for any other memory."""
    from memorybench.memory import build_memory_method, open_build_context
    from memorybench.pack.run_pack import RunPack

    method = build_memory_method(cfg)
    if not (method.software_only and not method.question_dependent):
        yield method, None  # built during the run, by a model or per question: its bound is all we use
        return
    with tempfile.TemporaryDirectory(prefix="memorybench-estimate-") as tmp:
        pack = RunPack(Path(tmp) / "pack")
        pack.open()
        ctx = open_build_context(cfg, pack, Path(tmp) / "cache", method=method)
        try:
            yield method, ctx
        finally:
            ctx.close()
            pack.close()


def estimate_run(cfg: DictConfig, run_id: str) -> RunEstimate:
    """What `qa` will ask for `cfg` (see the module docstring), with no model call."""
    from memorybench.data.source import load_dataset, resolve_dataset
    from memorybench.data import iter_questions

    path, _ = resolve_dataset(cfg.dataset, cfg.paths.get("pins"))
    conversations = load_dataset(path, str(cfg.dataset.name))
    from memorybench.data.selection import select_questions

    # as qa selects them: all, the first max_questions, question_ids or question_sample, in file order
    questions = select_questions(list(iter_questions(conversations)), cfg)
    notes: list[str] = []
    answerer = str(cfg.answerer.name)
    if answerer == "reader":
        role = _reader_estimate(cfg, conversations, questions, notes)
    else:
        model = cfg.answerer.get("model")
        role = RoleEstimate(role="agent", model=str(model) if model else None, calls=None)
        notes.append(
            f"answerer={answerer} takes as many model turns per question as it needs: its tokens and cost "
            "are known only after the run"
        )
    method_name = str(cfg.memory.name)
    from memorybench.memory._notes import writes_memory
    from memorybench.registry import MEMORY

    memory_cls = MEMORY.get(method_name)
    partial = False
    roles = [role]
    if writes_memory(memory_cls, cfg):
        writer = _writer_estimate(cfg, memory_cls, conversations, questions, notes)
        if writer is None:
            partial = True
            notes.append(
                f"memory={method_name} is written by writer={cfg.writer.name}, but the method declares no writer_calls: "
                "its writer calls are not estimated"
            )
        else:
            roles.append(writer)
    if getattr(memory_cls, "uses_embedder", False) and str(cfg.embedder.get("provider")) in ("openai", "openai_compatible"):
        partial = True
        notes.append(f"memory={method_name} embeds with {cfg.embedder.get('model')}: its embedding calls are not estimated")
    costs = [r.cost_usd for r in roles]
    uncached = [r.cost_usd_uncached for r in roles]
    return RunEstimate(
        run_id=run_id,
        questions=len(questions),
        roles=roles,
        notes=notes,
        partial=partial,
        cost_usd=None if any(c is None for c in costs) else round(sum(costs), 10),  # type: ignore[arg-type]
        cost_usd_uncached=None if any(c is None for c in uncached) else round(sum(uncached), 10),  # type: ignore[arg-type]
    )


def _writer_estimate(
    cfg: DictConfig, memory_cls: Any, conversations: Sequence[Any], questions: Sequence[Any], notes: list[str]
) -> RoleEstimate | None:
    """The writer's calls of a writer-built memory over the conversations the questions need,
    each cut to memory.max_sessions, as the method declares them (None: it declares none)."""
    hook = getattr(memory_cls, "writer_calls", None)
    if hook is None:
        return None
    from memorybench.llm.pricing import call_cost
    from memorybench.llm.records import Usage
    from memorybench.memory._prefix import max_sessions, session_prefix
    from memorybench.memory._writer import load_template
    from memorybench.memory._writer_calls import WriterCallEstimate
    from memorybench.run_id import resolved_model

    node = dict(cfg.writer)
    model = resolved_model(node) or (str(node.get("model")) if node.get("model") else None)
    tokenizer = tokenizer_for({**node, "model": model})
    system = load_template("system", str(cfg.writer.prompt), frozenset()).text.strip() if cfg.writer.get("prompt") else None
    system_tokens = tokenizer.count(system) if system else 0
    # by a digest of the text: a dataset whose conversations share sessions (LongMemEval's
    # haystacks) counts a repeated prompt once, without holding every prompt's text
    counts: dict[bytes, int] = {}

    def tokens(user: str) -> int:
        key = hashlib.blake2b(user.encode("utf-8"), digest_size=16).digest()
        if key not in counts:
            counts[key] = tokenizer.count(user) if user else 0
        return tokenizer.prompt_tokens([system_tokens, counts[key]] if system is not None else [counts[key]])

    needed = {q.sample_id for q in questions}
    cut = max_sessions(cfg.memory)
    total = WriterCallEstimate(conversations=0)
    input_tokens: int | None = 0  # the prompts known before any call, counted one conversation at a time
    counted: set[str] = set()  # the tasks whose every call's prompt was known
    for conversation in conversations:
        if conversation.sample_id not in needed:  # qa builds only the memories its questions need
            continue
        one = hook(session_prefix(conversation, cut), cfg)
        for task in one.tasks:
            if task.prompts:
                input_tokens = None if input_tokens is None else input_tokens + sum(tokens(p) for p in task.prompts)
                counted.add(task.task)
        total = total.add(one.model_copy(update={"tasks": [t.model_copy(update={"prompts": []}) for t in one.tasks]}))
    for task in total.tasks:  # the rest: a typical prompt per call, or unknown
        if task.task in counted or not task.calls:
            continue
        if task.typical_prompt is None:
            input_tokens = None
        elif input_tokens is not None:
            input_tokens += task.calls * tokens(task.typical_prompt)
    calls, max_tokens = total.calls, int(cfg.writer.get("max_tokens") or 0)
    notes.append(_writer_note(cfg, total, cut))
    exact_tokens = tokenizer.exact and all(t.task in counted and t.prompts_exact for t in total.tasks)
    if input_tokens is not None and not exact_tokens:
        notes.append(
            f"writer input tokens: {', '.join(_tokens_how(t, t.task in counted) for t in total.tasks)}; the system message and chat format "
            f"counted per call by {tokenizer.name}"
        )
    elif input_tokens is None:
        notes.append(f"memory={cfg.memory.name}'s writer prompts are the library's own: writer input tokens and cost unknown")
    prices = cfg.get("pricing") or {}
    cost = (
        None
        if input_tokens is None
        else call_cost(model or "", Usage(prompt_tokens=input_tokens, completion_tokens=calls * max_tokens), prices)
    )
    if cost is None and input_tokens is not None:
        notes.append(f"{model} has no price in the price table (pricing): writer cost unknown")
    return RoleEstimate(
        role="writer",
        model=model,
        calls=calls,
        input_tokens=input_tokens,
        output_tokens_max=calls * max_tokens,
        cost_usd=cost,
        cost_usd_uncached=cost,
        tokenizer=tokenizer.name,
        exact=exact_tokens and total.exact,
        calls_low=total.low,
        calls_high=total.high,
        calls_exact=total.exact,
    )


def _writer_note(cfg: DictConfig, total: Any, cut: int | None) -> str:
    """What the writer's calls are made of: each task exact or expected (its rate and range),
    the basis of any expectation, and what no count holds (repair turns)."""
    prefix = f", each cut to its first {cut} session(s) (memory.max_sessions={cut})" if cut is not None else ""
    parts = []
    for t in total.tasks:
        if t.exact:
            parts.append(f"{t.task} {t.calls:,} (exact)")
        else:
            high = "no bound" if t.high is None else f"{t.high:,}"
            parts.append(f"{t.task} ~{t.calls:,} expected ({t.rate:g} {t.unit}; {t.low:,}-{high})")
    what = "exact" if total.exact else "an expectation"
    high = "unbounded" if total.high is None else f"{total.high:,}"
    line = (
        f"memory={cfg.memory.name} writer calls over {total.conversations} conversation(s){prefix}: "
        f"{'; '.join(parts) or 'none'}; {total.calls:,} in all ({what}"
        + ("" if total.exact else f", range {total.low:,}-{high}")
        + ")"
        + (f", not counting {total.uncounted}" if total.uncounted else "")
    )
    if not total.exact and total.basis:
        line += f"; expected counts measured: {total.basis}"
    return line


def _tokens_how(task: Any, counted: bool) -> str:
    if counted:
        return f"{task.task} counted from its prompts" + (
            "" if task.prompts_exact else " (earlier replies' parts at their bounds)"
        )
    return f"{task.task} as {task.calls:,} prompts of a typical size (the memories shown at their bounds)"


def _reader_estimate(cfg: DictConfig, conversations: Sequence[Any], questions: Sequence[Any], notes: list[str]) -> RoleEstimate:
    from memorybench.llm.pricing import call_cost
    from memorybench.llm.records import Usage
    from memorybench.run_id import resolved_model

    node = dict(cfg.reader)
    model = resolved_model(node) or (str(node.get("model")) if node.get("model") else None)
    tokenizer = tokenizer_for({**node, "model": model})
    max_tokens = int(cfg.reader.max_tokens)
    caching = str(node.get("provider")) in CACHING_PROVIDERS
    by_sample: dict[str, list[Any]] = {}
    for q in questions:
        by_sample.setdefault(q.sample_id, []).append(q)
    counts: dict[str, int] = {}

    def count(text: str) -> int:
        if text not in counts:
            counts[text] = tokenizer.count(text) if text else 0
        return counts[text]

    total_input = cached_input = 0
    exact = tokenizer.exact
    with _scratch_context(cfg) as (method, ctx):
        built_up_front = method.software_only and not method.question_dependent
        needed = [c for c in conversations if c.sample_id in by_sample]
        bound = None if built_up_front else method.memory_tokens_bound(list(needed))
        if not built_up_front:
            exact = False
            notes.append(
                f"memory={method.name} is built during the run: each reader prompt counts the method's upper "
                f"bound of {bound} memory tokens (cl100k_base)"
                if bound
                else f"memory={method.name} is built during the run and has no size bound: reader input unknown"
            )
        for conversation in needed:
            asked = [q.asked() for q in by_sample[conversation.sample_id]]
            prompt = _reader_prompt(cfg, (conversation.speaker_a, conversation.speaker_b))
            built = method.build(conversation, ctx) if built_up_front else None
            for number, question in enumerate(asked):
                if built is not None:
                    memory_tokens = count(method.for_question(built, question, ctx))
                elif bound:
                    memory_tokens = int(bound)
                else:
                    return RoleEstimate(
                        role="reader",
                        model=model,
                        calls=len(questions),
                        tokenizer=tokenizer.name,
                        output_tokens_max=len(questions) * max_tokens,
                    )
                user, prefix, seen_question = 0, 0, False
                for part in prompt.parts:
                    tokens = memory_tokens if part == _MEMORY else count(question.question) if part == _QUESTION else count(part)
                    user += tokens
                    seen_question = seen_question or part == _QUESTION
                    prefix += 0 if seen_question else tokens
                contents = [count(prompt.system), user] if prompt.system is not None else [user]
                tokens = tokenizer.prompt_tokens(contents)
                total_input += tokens
                if caching and number > 0 and built_up_front:
                    shared = tokens - user + prefix - tokenizer.per_prompt  # system message and the user text up to the question
                    cached_input += _cached(shared)
    if cached_input:
        notes.append(
            f"{model}: cached input assumes every reader call after a conversation's first hits the "
            f"provider's prompt cache (cost_usd); cost_usd_uncached assumes none does"
        )
    calls = len(questions)
    prices = cfg.get("pricing") or {}
    cost = call_cost(
        model or "", Usage(prompt_tokens=total_input, completion_tokens=calls * max_tokens, cached_tokens=cached_input), prices
    )
    cost_uncached = call_cost(model or "", Usage(prompt_tokens=total_input, completion_tokens=calls * max_tokens), prices)
    if cost is None:
        notes.append(f"{model} has no price in the price table (pricing): cost unknown")
    return RoleEstimate(
        role="reader",
        model=model,
        calls=calls,
        input_tokens=total_input,
        cached_input_tokens=cached_input,
        output_tokens_max=calls * max_tokens,
        cost_usd=cost,
        cost_usd_uncached=cost_uncached,
        tokenizer=tokenizer.name,
        exact=exact,
    )


# -- showing and recording -------------------------------------------------------------------
def _n(value: int | None) -> str:
    return "?" if value is None else f"{value:,}"


def _usd(value: float | None) -> str:
    return "unknown" if value is None else f"${value:,.4f}"


def format_estimate(estimate: RunEstimate) -> list[str]:
    lines = []
    for r in estimate.roles:
        cached = f" ({_n(r.cached_input_tokens)} cached)" if r.cached_input_tokens else ""
        uncached = f" ({_usd(r.cost_usd_uncached)} with no cache hit)" if r.cached_input_tokens else ""
        calls = f"{_n(r.calls)} calls"
        if r.calls_exact is False:  # a writer's calls that depend on its replies
            calls = f"~{calls} expected (range {_n(r.calls_low)}-{_n(r.calls_high) if r.calls_high is not None else 'unbounded'})"
        lines.append(
            f"  {r.role} {r.model or '?'}: {calls}, input {_n(r.input_tokens)} tokens{cached}, "
            f"output at most {_n(r.output_tokens_max)} tokens (max_tokens per call), cost {_usd(r.cost_usd)}"
            f"{uncached}; tokens by {r.tokenizer or '?'}"
        )
    lines += [f"  note: {n}" for n in estimate.notes]
    return lines


def format_total(estimates: Sequence[RunEstimate]) -> str:
    known = [e.cost_usd for e in estimates if e.cost_usd is not None]
    unknown = len(estimates) - len(known)
    calls = sum(r.calls or 0 for e in estimates for r in e.roles)
    writer = sum(r.calls or 0 for e in estimates for r in e.roles if r.role == "writer")
    expected = any(r.calls_exact is False for e in estimates for r in e.roles)
    tokens = sum(r.input_tokens or 0 for e in estimates for r in e.roles)
    out = sum(r.output_tokens_max or 0 for e in estimates for r in e.roles)
    high = [e.cost_usd_uncached for e in estimates if e.cost_usd_uncached is not None]
    cost = f"${sum(known):,.4f}" + (f" (${sum(high):,.4f} with no cache hit)" if sum(high) > sum(known) else "")
    cost += f" for {len(known)} spec(s), {unknown} unknown" if unknown else ""
    partial = sum(1 for e in estimates if e.partial)
    cost += f"; {partial} spec(s) without their writer or embedder calls (see their notes)" if partial else ""
    of_which = f" ({writer:,} of them writer calls{', partly expected' if expected else ''})" if writer else ""
    return (
        f"estimate for {len(estimates)} run spec(s): {calls:,} model calls{of_which}, input {tokens:,} tokens, output at most "
        f"{out:,} tokens (an upper bound: max_tokens per call), cost {cost}"
    )


def write_estimate(cfg: DictConfig, run_id: str, pack: Any) -> RunEstimate | None:
    """`estimate.json` in a pack, written when the run starts (kept as it is on a resume):
    the estimate stays beside what metrics.json will say was used (`estimate_vs_actual`)."""
    path = pack.path(ESTIMATE)
    if path.is_file():
        return RunEstimate.model_validate_json(path.read_text("utf-8"))
    estimate = estimate_run(cfg, run_id)
    pack.write_json(ESTIMATE, estimate)
    return estimate


def estimate_vs_actual(estimate: RunEstimate, metrics: Mapping[str, Any]) -> dict[str, Any]:
    """The estimate beside what a finished run's metrics.json says it used, by role."""
    usage = metrics.get("usage") or {}
    out: dict[str, Any] = {}
    for r in estimate.roles:
        actual = usage.get(r.role) or {}
        out[r.role] = {
            "calls": {"estimated": r.calls, "actual": actual.get("calls")}
            | ({"low": r.calls_low, "high": r.calls_high} if r.calls_exact is False else {}),
            "input_tokens": {"estimated": r.input_tokens, "actual": actual.get("prompt_tokens")},
            "output_tokens": {"estimated_max": r.output_tokens_max, "actual": actual.get("completion_tokens")},
            "cost_usd": {"estimated": r.cost_usd, "actual": actual.get("cost_usd") if actual.get("cost_known") else None},
        }
    return out


__all__ = [
    "ESTIMATE",
    "RoleEstimate",
    "RunEstimate",
    "Tokenizer",
    "estimate_run",
    "estimate_vs_actual",
    "format_estimate",
    "format_total",
    "tokenizer_for",
    "write_estimate",
]
