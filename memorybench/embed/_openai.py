"""`openai`: text-embedding-3-small (or any model) through the openai SDK's embeddings
endpoint, with our own retries (as the chat client: 408/409/429/5xx, timeouts and
connection errors; `Retry-After` honoured, else full jitter: `retry_wait`), every try of a
batch recorded as a chat call's attempts are (the embedder's usage: `retries`,
`retried_batches`), and cost from the price table."""

from __future__ import annotations

import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import openai

from memorybench.embed._base import Embedder
from memorybench.errors import ModelCallError
from memorybench.llm.client import ERROR_CHARS, redact, retry_after_seconds, retry_wait
from memorybench.llm.pricing import call_cost
from memorybench.llm.records import Attempt, Usage
from memorybench.secrets import scrub

_RETRYABLE = {408, 409, 429}


class OpenAIEmbedder(Embedder):
    provider = "openai"

    def __init__(
        self,
        name: str,
        *,
        model: str,
        base_url: str,
        api_key: str | None,
        dimensions: int | None,
        batch_size: int,
        cache_dir: Path | None,
        prices: Mapping[str, Any],
        timeout_s: float = 120.0,
        max_retries: int = 4,
        retry_max_wait_s: float = 60.0,
        backoff_base_s: float = 1.0,
    ) -> None:
        super().__init__(name, cache_dir)
        self.model = model
        self.base_url = base_url
        self.dimensions = dimensions
        self.batch_size = int(batch_size)
        self.prices = dict(prices or {})
        self.max_retries = max_retries
        self.retry_max_wait_s = retry_max_wait_s
        self.backoff_base_s = backoff_base_s
        self._secrets = [api_key] if api_key else []
        self._client = openai.OpenAI(base_url=base_url, api_key=api_key or "no-key", max_retries=0, timeout=timeout_s)
        self._dim: int | None = dimensions
        #: every model id the server answered with
        self.answered: set[str] = set()

    @property
    def identity(self) -> dict[str, Any]:
        return {"provider": self.provider, "model": self.model, "base_url": self.base_url, "dimensions": self.dimensions}

    @property
    def dim(self) -> int:
        return int(self._dim or 0)

    def close(self) -> None:
        super().close()
        self._client.close()

    def _embed_batch(self, texts: list[str]) -> tuple[np.ndarray, int, float | None]:
        params: dict[str, Any] = {"model": self.model, "input": texts, "encoding_format": "float"}
        if self.dimensions:
            params["dimensions"] = int(self.dimensions)
        for n in range(1, self.max_retries + 2):
            headers, status = None, None
            t0 = time.perf_counter()
            try:
                raw = self._client.embeddings.with_raw_response.create(**params)
                status = raw.status_code
                response = raw.parse()
                data = sorted(response.data, key=lambda d: d.index)
                if len(data) != len(texts):
                    raise ValueError(f"{len(data)} vectors for {len(texts)} inputs")
                vectors = np.asarray([d.embedding for d in data], dtype=np.float32)
                self._dim = vectors.shape[1]
                if response.model:
                    self.answered.add(response.model)
                tokens = int(getattr(response.usage, "prompt_tokens", 0) or 0)
                usage = Usage(prompt_tokens=tokens)
                cost = call_cost(response.model or self.model, usage, self.prices) if response.model else None
                if cost is None:
                    cost = call_cost(self.model, usage, self.prices)
                self._batch_attempts.append(Attempt(n=n, latency_s=round(time.perf_counter() - t0, 6), status=status))
                return vectors, tokens, cost
            except openai.APIStatusError as e:
                status, headers = e.status_code, e.response.headers
                error, retryable = f"HTTP {status}: {self._clean(e.message)}", status in _RETRYABLE or status >= 500
            except openai.APITimeoutError:
                error, retryable = "timeout", True
            except openai.APIConnectionError as e:
                error, retryable = f"connection error: {self._clean(str(e.__cause__ or e))}", True
            except (ValueError, TypeError, AttributeError) as e:
                error, retryable = f"bad reply: {self._clean(str(e))}", True
            last = n == self.max_retries + 1 or not retryable
            asked = retry_after_seconds(headers)
            wait = None if last else retry_wait(n, base_s=self.backoff_base_s, max_s=self.retry_max_wait_s, asked=asked)
            self._batch_attempts.append(
                Attempt(
                    n=n,
                    latency_s=round(time.perf_counter() - t0, 6),
                    status=status,
                    error=error,
                    wait_s=wait,
                    retry_after=asked is not None,
                )
            )
            if last:
                raise ModelCallError(
                    f"embedding call to {self.base_url} (model {self.model}) failed after {n} attempt(s): {error}; "
                    "check the endpoint, model and key, then rerun the same command to resume",
                    attempts=self._batch_attempts,
                )
            time.sleep(wait or 0.0)
        raise AssertionError("unreachable")

    def _clean(self, text: str) -> str:
        # scrubbed whole, then cut (as the chat client): a cut first would leave a key's first part
        return scrub(redact(" ".join(text.split()), self._secrets))[:ERROR_CHARS]
