"""The one-call reader: the filled template, one Chat Completions call, a short answer."""

from __future__ import annotations

from typing import ClassVar

from memorybench.answer.prompt import SYSTEM_MESSAGE, PromptTemplate, content_sha256
from memorybench.data.records import AskedQuestion
from memorybench.llm.endpoints import Endpoint
from memorybench.llm.records import ChatRequest
from memorybench.pack.schemas import ReaderRequest, ReaderTrace, SlotValue


class ReaderAnswerer:
    """Answers with `reader.prompt` filled with the memory and the question.

    The memory sits before the question in the prompt, so consecutive questions of one
    conversation share their longest prefix (a local server reuses its KV cache for it).
    """

    name: ClassVar[str] = "reader"

    def __init__(self, endpoint: Endpoint, template: PromptTemplate, *, temperature: float, max_tokens: int, seed: int | None):
        self.endpoint = endpoint
        self.template = template
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.seed = seed

    def answer(self, asked: AskedQuestion, memory: str) -> tuple[str, ReaderTrace]:
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
