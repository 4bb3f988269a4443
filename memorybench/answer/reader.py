"""The one-call reader: the filled template, one Chat Completions call, a short answer."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import ClassVar

from omegaconf import DictConfig

from memorybench.hashing import sha256_text
from memorybench.answer.base import Answer, ConversationView
from memorybench.answer.prompt import SYSTEM_MESSAGE, fill_template, reader_template
from memorybench.data.records import AskedQuestion, Question
from memorybench.llm.endpoints import Endpoint, open_endpoint, validate_endpoint
from memorybench.llm.records import ChatRequest, ModelIdentity
from memorybench.pack import layout
from memorybench.pack.journal import Journal
from memorybench.pack.run_pack import RunPack
from memorybench.pack.schemas import ReaderRequest, ReaderTrace, SlotValue
from memorybench.registry import ANSWERERS
from memorybench.templates import PromptTemplate


@ANSWERERS.register("reader")
class ReaderAnswerer:
    """Answers with `reader.prompt` filled with the memory and the question.

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
        return len(reader_template(str(cfg.reader.prompt)).text)

    @staticmethod
    @contextlib.contextmanager
    def open(cfg: DictConfig, pack: RunPack, *, cache_dir: Path, longest_prompt_tokens: int) -> Iterator[ReaderAnswerer]:
        """A reader on the configured endpoint; its prompts are copied into the pack's prompts/."""
        template = reader_template(str(cfg.reader.prompt))
        pack.write_text(f"{layout.PROMPTS}/{template.relpath}", template.text)
        pack.write_text(layout.SYSTEM_PROMPT, SYSTEM_MESSAGE)
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
    ):
        self.endpoint = endpoint
        self.template = template
        self.traces = traces
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.seed = seed
        self._answered_models: set[str] = set()

    @property
    def models(self) -> list[ModelIdentity]:
        return [self.endpoint.identity.model_copy(update={"answered": sorted(self._answered_models)})]

    @property
    def is_local(self) -> bool:
        return self.endpoint.is_local

    def start_conversation(self, conversation: ConversationView) -> None:
        """Nothing to prepare: the memory arrives with each question."""

    def finish(self, questions: Sequence[Question]) -> None:
        """Nothing to add after the run: every call is already in reader/traces.jsonl."""

    def answer(self, asked: AskedQuestion, memory: str) -> Answer:
        prediction, trace = self.call(asked, memory)
        if self.traces is not None:
            self.traces.append(trace)
        return Answer(prediction, trace.reader_payload_sha256)

    def call(self, asked: AskedQuestion, memory: str) -> tuple[str, ReaderTrace]:
        """One reader call: the stripped answer and its trace (not yet written)."""
        user = fill_template(self.template.text, memory, asked.question)
        stop = self.endpoint.stop or None
        request = ChatRequest(
            model=self.endpoint.model,
            messages=({"role": "system", "content": SYSTEM_MESSAGE}, {"role": "user", "content": user}),
            temperature=self.temperature,
            max_tokens=self.max_tokens,
            seed=self.seed,
            stop=stop,
        )
        result = self.endpoint.client.complete(request)
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
                system=SYSTEM_MESSAGE,
                template=self.template.relpath,
                template_sha256=self.template.sha256,
                slots={"memory": SlotValue(ref=sha256_text(memory)), "question": SlotValue(text=asked.question)},
            ),
            response=result,
        )
        return result.text.strip(), trace
