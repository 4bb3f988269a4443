"""The one-call reader: the filled template, one Chat Completions call, a short answer."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from memorybench.hashing import sha256_text
from memorybench.answer.base import Answer, ConversationView
from memorybench.answer.prompt import SYSTEM_MESSAGE, fill_template, pinned_reader, reader_template
from memorybench.data.records import AskedQuestion, Question
from memorybench.llm.endpoints import Endpoint, open_endpoint, validate_endpoint
from memorybench.pack import layout
from memorybench.registry import ANSWERERS
from memorybench.templates import BenchmarkReaderTemplate, JinjaReaderTemplate, PromptTemplate

if TYPE_CHECKING:  # a pack's and a call's records: imported where a call is made (a plan looks the class up, no more)
    from omegaconf import DictConfig  # a type only: verify reads the class's files without OmegaConf

    from memorybench.llm.records import ModelIdentity
    from memorybench.pack.journal import Journal
    from memorybench.pack.run_pack import RunPack
    from memorybench.pack.schemas import ReaderTrace

#: `reader.max_answer_chars` where a config predates it
DEFAULT_MAX_ANSWER_CHARS = 10_000


@ANSWERERS.register("reader")
class ReaderAnswerer:
    """Answers with `reader.prompt` filled with the memory and the question (or, for a pinned
    Mem0 prompt, rendered by jinja2 with the messages Mem0 sends; for `reader.prompt=locomo`,
    posed as LoCoMo's task_eval poses it: `memorybench.benchmarks.locomo.reader`).

    The memory sits before the question in the prompt, so consecutive questions of one
    conversation share their longest prefix (a local server reuses its KV cache for it).
    Each call's trace is appended to `reader/traces.jsonl` before the answer is returned.
    """

    name: ClassVar[str] = "reader"
    #: the journal with one trace per answered question (`verify` expects it)
    traces_file: ClassVar[str] = layout.READER_TRACES

    # -- the component: checks, sizing, opening ------------------------------------------
    @staticmethod
    def check(cfg: DictConfig) -> None:
        validate_endpoint("reader", cfg.reader)

    @staticmethod
    def prompt_chars(cfg: DictConfig) -> int:
        """Characters the answerer adds around the memory (its template), for sizing a local reader."""
        pinned = pinned_reader(cfg)
        if pinned is not None:
            pins = cfg.paths.get("pins")
            return len(pinned.text(pins)) + len(pinned.system(pins) or "")
        return len(reader_template(str(cfg.reader.prompt)).text)

    @staticmethod
    @contextlib.contextmanager
    def open(cfg: DictConfig, pack: RunPack, *, cache_dir: Path, longest_prompt_tokens: int) -> Iterator[ReaderAnswerer]:
        """A reader on the configured endpoint; its prompts are copied into the pack's prompts/
        (a pinned template under its `reader.prompt` name, which run_meta.json's prompts record)."""
        pinned = pinned_reader(cfg)
        system: str | None = SYSTEM_MESSAGE
        if pinned is None:
            template = reader_template(str(cfg.reader.prompt))
        else:
            pins = cfg.paths.get("pins")
            template = PromptTemplate(pinned.name, pinned.text(pins))
            system = pinned.system(pins)
        pack.write_text(f"{layout.PROMPTS}/{template.relpath}", template.text)
        if system is not None:
            pack.write_text(layout.SYSTEM_PROMPT, system)
        with open_endpoint(
            cfg.reader,
            "reader",
            cache_dir=cache_dir,
            prices=cfg.pricing,
            longest_prompt_tokens=longest_prompt_tokens,
            log_dir=pack.root / "reader",
        ) as endpoint:
            yield ReaderAnswerer(
                endpoint,
                template,
                pack.reader_traces,
                temperature=float(cfg.reader.temperature),
                max_tokens=int(cfg.reader.max_tokens),
                seed=cfg.reader.seed,
                max_answer_chars=int(cfg.reader.get("max_answer_chars", DEFAULT_MAX_ANSWER_CHARS)),
                pinned=pinned,
                system=system,
            )

    # -- the answerer --------------------------------------------------------------------

    def __init__(
        self,
        endpoint: Endpoint,
        template: PromptTemplate,
        traces: Journal | None,
        *,
        temperature: float,
        max_tokens: int,
        seed: int | None,
        max_answer_chars: int = DEFAULT_MAX_ANSWER_CHARS,
        pinned: JinjaReaderTemplate | BenchmarkReaderTemplate | None = None,
        system: str | None = SYSTEM_MESSAGE,
    ):
        self.endpoint = endpoint
        #: the pinned template that renders `template` (None: the one-pass `{memory}` fill)
        self.pinned = pinned
        #: the system message sent first; None: the rendered prompt is the only message
        self.system = system
        self._speakers: tuple[str, str] = ("", "")
        self.template = template
        self.traces = traces
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.seed = seed
        self.max_answer_chars = max_answer_chars
        self._answered_models: set[str] = set()

    @property
    def poses_choice(self) -> bool:
        """Whether its pinned template poses some questions as a choice (LoCoMo's category 5):
        the run then hands this answerer the question's `adversarial_answer` (the trap, never the gold)."""
        return bool(getattr(self.pinned, "poses_choice", False))

    @property
    def models(self) -> list[ModelIdentity]:
        return [self.endpoint.identity.model_copy(update={"answered": sorted(self._answered_models)})]

    @property
    def is_local(self) -> bool:
        return self.endpoint.is_local

    def start_conversation(self, conversation: ConversationView) -> None:
        """The memory arrives with each question; only the speakers are kept (Mem0's
        per-speaker prompts name them)."""
        self._speakers = (conversation.speaker_a, conversation.speaker_b)

    def finish(self, questions: Sequence[Question]) -> None:
        """Nothing to add after the run: every call is already in reader/traces.jsonl."""

    def answer(self, asked: AskedQuestion, memory: str) -> Answer:
        options = self._options(asked)
        reply, trace = self.call(asked, memory)
        if self.traces is not None:
            self.traces.append(trace)
        if options is None:
            return Answer(reply, trace.reader_payload_sha256)
        read = self.pinned.read_reply(reply, options)  # type: ignore[union-attr]  # the mapped answer is the prediction scored
        return Answer(
            read.answer,
            trace.reader_payload_sha256,
            options=options,
            reply=reply,
            choice=read.choice,
            malformed_reply=read.malformed,
        )

    def _options(self, asked: AskedQuestion) -> dict[str, str] | None:
        """The options its template poses a question with (LoCoMo's category 5, (a) first); else None."""
        return self.pinned.options(asked) if self.poses_choice else None  # type: ignore[union-attr]

    def call(self, asked: AskedQuestion, memory: str) -> tuple[str, ReaderTrace]:
        """One reader call: the stripped answer and its trace (not yet written)."""
        from memorybench.llm.records import ChatRequest  # here: `plan` imports this module
        from memorybench.pack.schemas import ReaderRequest, ReaderTrace, SlotValue

        slots = {"memory": SlotValue(ref=sha256_text(memory)), "question": SlotValue(text=asked.question)}
        if self.pinned is None:
            user = fill_template(self.template.text, memory, asked.question)
        elif isinstance(self.pinned, BenchmarkReaderTemplate):  # a benchmark's own: its slots from the question
            extra = self.pinned.question_values(asked, self._speakers)
            slots.update({name: SlotValue(text=value) for name, value in extra.items()})
            user = self.pinned.render(self.template.text, {"memory": memory, "question": asked.question, **extra})
        else:
            values = {"memory": memory, "question": asked.question}
            if self.pinned.extra_slots:  # the per-speaker prompts: speaker_a is Mem0's speaker 1
                values.update(zip(("speaker_1", "speaker_2"), self._speakers))
                slots.update({name: SlotValue(text=values[name]) for name in self.pinned.extra_slots})
            user = self.pinned.render(self.template.text, values)
        if self.system is not None:
            messages: tuple[dict[str, str], ...] = ({"role": "system", "content": self.system}, {"role": "user", "content": user})
        else:  # the only message: as a user message (LoCoMo's), or as the system message (Mem0's search script)
            messages = ({"role": self.pinned.message_role if self.pinned is not None else "user", "content": user},)
        stop = self.endpoint.stop or None
        request = ChatRequest(
            model=self.endpoint.model,
            messages=messages,
            temperature=self.temperature,
            max_tokens=self.max_tokens,
            seed=self.seed,
            stop=stop,
        )
        result = self.endpoint.client.complete(request)
        answer = result.text.strip()
        cut_from = None
        if len(answer) > self.max_answer_chars:  # stored cut, in the prediction and the trace alike
            cut_from, answer = len(answer), answer[: self.max_answer_chars]
            result = result.model_copy(update={"text": answer})
        if result.model_answered:
            self._answered_models.add(result.model_answered)
        payload_sha = sha256_text(user)
        trace = ReaderTrace(
            question_id=asked.question_id,
            sample_id=asked.sample_id,
            reader_payload_sha256=payload_sha,
            request=ReaderRequest(
                model=request.model,
                temperature=request.temperature,
                max_tokens=request.max_tokens,
                seed=request.seed,
                stop=list(stop) if stop else None,
                system=self.system,
                template=self.template.relpath,
                template_sha256=self.template.sha256,
                slots=slots,
                renderer=self.pinned.name if self.pinned is not None else None,
                payload_role="system" if messages[0]["role"] == "system" and self.system is None else None,
            ),
            response=result,
            answer_cut_from_chars=cut_from,
        )
        return answer, trace
