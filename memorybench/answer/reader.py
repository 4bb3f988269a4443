"""The one-call reader: the filled template, one Chat Completions call, a short answer."""

from __future__ import annotations

from typing import ClassVar

from memorybench.answer.base import Answer, ConversationView
from memorybench.answer.prompt import SYSTEM_MESSAGE, PromptTemplate, content_sha256
from memorybench.data.records import AskedQuestion
from memorybench.llm.endpoints import Endpoint
from memorybench.llm.records import ChatRequest
from memorybench.pack.journal import Journal
from memorybench.pack.schemas import ModelIdentity, ReaderRequest, ReaderTrace, SlotValue


class ReaderAnswerer:
    """Answers with `reader.prompt` filled with the memory and the question.

    The memory sits before the question in the prompt, so consecutive questions of one
    conversation share their longest prefix (a local server reuses its KV cache for it).
    Each call's trace is appended to `reader/traces.jsonl` before the answer is returned.
    """

    name: ClassVar[str] = "reader"

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

    def answer(self, asked: AskedQuestion, memory: str) -> Answer:
        prediction, trace = self.call(asked, memory)
        if self.traces is not None:
            self.traces.append(trace)
        return Answer(prediction, trace.reader_payload_sha256)

    def call(self, asked: AskedQuestion, memory: str) -> tuple[str, ReaderTrace]:
        """One reader call: the stripped answer and its trace (not yet written)."""
        user = self.template.fill(memory, asked.question)
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
        payload_sha = content_sha256(user)
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
                slots={"memory": SlotValue(ref=content_sha256(memory)), "question": SlotValue(text=asked.question)},
            ),
            response=result,
        )
        return result.text.strip(), trace
