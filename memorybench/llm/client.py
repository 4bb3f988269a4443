"""One chat client over the official openai SDK, for readers, writers and judges.

The SDK's own retries are off (`max_retries=0`): we retry here so that every attempt,
its status and its wait are recorded in the call's trace, and `Retry-After` is honoured.
Without one, the wait is drawn with full jitter (`retry_wait`), so clients that failed
together do not all come back together; the attempt records the seconds actually waited
(`memorybench.llm.retry`, shared with the embedders and the agent gateway).
Retried: 408, 409, 429, 5xx, timeouts, connection errors, and replies that are not a
usable completion (not JSON, no choices, a field of the wrong type: `memorybench.llm.reply`).
Other 4xx fail at once. A well-formed reply with no text (`content` null or empty, tool
calls only) is asked once more; a second empty one is returned with its `problem` named,
so the caller counts and shows it instead of silently storing an empty answer.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Mapping
from typing import Any

import httpx2
import openai

from memorybench.errors import ModelCallError
from memorybench.hashing import canonical_json, canonical_object
from memorybench.llm.cache import ResponseCache
from memorybench.llm.pricing import call_cost
from memorybench.llm.records import Attempt, ChatRequest, ChatResult, Usage
from memorybench.llm.reply import BadReply, CompletionReply, EmptyReply, parse_reply
from memorybench.llm.retry import retry_after_seconds, retry_wait
from memorybench.progress import record_call, record_spend
from memorybench.secrets import clean_url, register, scrub, secret_forms, split_url

_RETRYABLE_STATUS = {408, 409, 429}
#: attempts a reply without text gets: a model that answers nothing at temperature 0 says
#: nothing again, so one more ask (no wait: the server is fine) tells a fluke from a habit
EMPTY_REPLY_ATTEMPTS = 2


#: characters of a server's error message kept in an attempt's error (after scrubbing)
ERROR_CHARS = 300


def redact(text: str, secrets: Iterable[str]) -> str:
    """`text` with this client's own credentials, in every form a message gives them
    (`secret_forms`: escaped, percent-encoded), replaced by `[REDACTED]`."""
    forms = {f for secret in secrets if secret for f in (secret_forms(secret) or {secret.strip()}) if len(f) >= 6}
    for form in sorted(forms, key=len, reverse=True):
        text = text.replace(form, "[REDACTED]")
    return text


def _scrubbed(value: Any) -> Any:
    return scrub(value) if isinstance(value, str) else value


class ChatClient:
    """Chat Completions against one endpoint (base URL + key), with traced retries."""

    def __init__(
        self,
        *,
        base_url: str,
        api_key: str | None,
        timeout_s: float = 120.0,
        max_retries: int = 4,
        retry_max_wait_s: float = 60.0,
        backoff_base_s: float = 1.0,
        min_request_interval_s: float = 0.0,
        cache: ResponseCache | None = None,
        prices: Mapping[str, Any] | None = None,
    ) -> None:
        # A credential in the URL is sent as one (the bearer key, or basic auth), and its
        # query as query parameters: the SDK would paste a query into the request path.
        endpoint = split_url(base_url)
        #: where this client calls, as error lines and traces may show it (no credential)
        self.base_url = clean_url(base_url)
        # a key read with its newline (pasted from a file) is the key: httpx refuses the newline in a header
        api_key = api_key.strip() if api_key else api_key
        self._secrets = [s for s in (api_key, *endpoint.secrets) if s]
        register(self._secrets)  # whatever this process writes is scrubbed of them, replies included
        # The SDK insists on a key; local servers ignore it, so a placeholder is sent.
        self._client = openai.OpenAI(
            base_url=endpoint.url,
            api_key=endpoint.api_key or api_key or "no-key",
            max_retries=0,
            timeout=timeout_s,
            default_headers=endpoint.headers or None,
            default_query=endpoint.query or None,
        )
        self.max_retries = max_retries
        self.retry_max_wait_s = retry_max_wait_s
        self.backoff_base_s = backoff_base_s
        self.min_request_interval_s = min_request_interval_s
        self.cache = cache
        self.prices = dict(prices or {})
        self._last_start: float | None = None
        self._lock = threading.Lock()

    def close(self) -> None:
        self._client.close()

    # -- public --------------------------------------------------------------------
    def complete(self, request: ChatRequest) -> ChatResult:
        messages = request.messages_json()  # encoded once: for the hash and for the body
        key = request.sha256(messages)
        if self.cache is not None:
            hit = self.cache.get(key)
            if hit is not None:
                record_spend(0.0)  # the progress line's "$ so far" (memorybench.progress)
                return hit.model_copy(update={"cache_hit": True, "cost_usd": 0.0, "attempts": [], "latency_s": 0.0})
        result = self._call_with_retries(request, key, self._body(request, messages))
        record_spend(result.cost_usd)
        # the phase lines' prefill speed and restored prefills (memorybench.progress.CALLS)
        record_call(
            result.model_answered or request.model, result.usage.prompt_tokens, result.usage.restored_tokens, result.latency_s
        )
        if self.cache is not None and result.problem is None:  # a reply without text is asked again next time
            self.cache.put(key, result)
        return result

    # -- internals -----------------------------------------------------------------
    def _wait_for_interval(self) -> None:
        with self._lock:
            if self._last_start is not None and self.min_request_interval_s > 0:
                gap = time.monotonic() - self._last_start
                if gap < self.min_request_interval_s:
                    time.sleep(self.min_request_interval_s - gap)
            self._last_start = time.monotonic()

    def _call_with_retries(self, request: ChatRequest, key: str, body: bytes) -> ChatResult:
        attempts: list[Attempt] = []
        started = time.perf_counter()
        empty = 0
        for n in range(1, self.max_retries + 2):
            self._wait_for_interval()
            t0 = time.perf_counter()
            status: int | None = None
            headers: Mapping[str, str] | None = None
            try:
                # the SDK's generic POST with the body already encoded: its per-call transform of
                # the typed params (a no-op for plain messages) and its own JSON encoding cost
                # about 0.3 ms a call of an 80 kB prompt (bench/harness_overhead.py); the bytes
                # sent are the canonical JSON of the params, the same request
                raw = self._client.post(
                    "/chat/completions",
                    cast_to=httpx2.Response,
                    content=body,
                    options={"headers": {"Content-Type": "application/json"}},
                )
                status = raw.status_code
                try:
                    reply, problem = parse_reply(raw.text), None
                except EmptyReply as e:
                    empty += 1
                    if empty < EMPTY_REPLY_ATTEMPTS and n <= self.max_retries:
                        attempts.append(
                            Attempt(
                                n=n,
                                latency_s=round(time.perf_counter() - t0, 6),
                                status=status,
                                error=f"empty reply: {e}",
                                wait_s=0.0,
                            )
                        )
                        continue
                    reply, problem = CompletionReply.model_validate_json(raw.text), f"empty reply: {e}"
                latency = time.perf_counter() - t0
                attempts.append(Attempt(n=n, latency_s=round(latency, 6), status=status))
                return self._result(request, key, reply, attempts, time.perf_counter() - started, problem)
            except openai.APIStatusError as e:
                status, headers = e.status_code, e.response.headers
                error = f"HTTP {status}: {self._clean(e.message)}"
                retryable = status in _RETRYABLE_STATUS or status >= 500
            except openai.APITimeoutError:
                error, retryable = f"timeout after {self._client.timeout}s", True
            except openai.APIConnectionError as e:
                error, retryable = f"connection error: {self._clean(str(e.__cause__ or e))}", True
            except BadReply as e:
                error, retryable = f"bad reply: {self._clean(str(e))}", True
            latency = time.perf_counter() - t0
            asked = retry_after_seconds(headers)
            last = n == self.max_retries + 1 or not retryable
            wait = None if last else retry_wait(n, base_s=self.backoff_base_s, max_s=self.retry_max_wait_s, asked=asked)
            attempts.append(
                Attempt(n=n, latency_s=round(latency, 6), status=status, error=error, wait_s=wait, retry_after=asked is not None)
            )
            if last:
                raise ModelCallError(
                    attempts=attempts,
                    message=f"model call to {self.base_url} (model {request.model}) failed after {n} attempt(s): {error}; "
                    "check the endpoint, model and key, then rerun the same command to resume",
                ) from None
            time.sleep(wait or 0.0)
        raise AssertionError("unreachable")

    def _clean(self, text: str) -> str:
        # scrubbed whole, then cut: a cut first would leave a key's first part that no longer matches it
        return scrub(redact(" ".join(text.split()), self._secrets))[:ERROR_CHARS]

    @staticmethod
    def _body(request: ChatRequest, messages_json: str) -> bytes:
        """The wire body: the canonical JSON of the call's params, around the messages as
        `ChatRequest.messages_json` encoded them; unset options are left out."""
        params: dict[str, Any] = {
            "model": request.model,
            "temperature": request.temperature,
        }
        if request.max_tokens is not None:  # max_tokens, not max_completion_tokens: llama.cpp's server ignores that
            params["max_tokens"] = request.max_tokens
        if request.seed is not None:
            params["seed"] = request.seed
        if request.response_format is not None:
            params["response_format"] = request.response_format
        if request.stop:
            params["stop"] = list(request.stop)
        encoded = {k: canonical_json(v) for k, v in params.items()}
        return canonical_object({**encoded, "messages": messages_json}).encode("utf-8")

    def _result(
        self,
        request: ChatRequest,
        key: str,
        reply: CompletionReply,
        attempts: list[Attempt],
        latency: float,
        problem: str | None = None,
    ) -> ChatResult:
        choice = reply.choices[0]
        wire = reply.usage
        usage = Usage(
            prompt_tokens=(wire and wire.prompt_tokens) or 0,
            completion_tokens=(wire and wire.completion_tokens) or 0,
            cached_tokens=(wire and wire.prompt_tokens_details and wire.prompt_tokens_details.cached_tokens) or 0,
            reasoning_tokens=(wire and wire.completion_tokens_details and wire.completion_tokens_details.reasoning_tokens) or 0,
            restored_tokens=(wire and wire.restored_tokens) or None,
        )
        # a server may echo what it was sent (a key, a header) into its reply: scrubbed
        # here, before any trace, prediction, cache file or hash is made of it
        model_answered = _scrubbed(reply.model)
        return ChatResult(
            text=scrub(reply.text),
            model_requested=request.model,
            model_answered=model_answered,
            finish_reason=choice.finish_reason,
            response_id=_scrubbed(reply.id),
            problem=problem,
            usage=usage,
            latency_s=round(latency, 6),
            attempts=attempts,
            cost_usd=self._cost(request.model, model_answered, usage),
            request_sha256=key,
        )

    def _cost(self, requested: str, answered: str | None, usage: Usage) -> float | None:
        """Priced by the model that answered, else by the one requested; unknown stays None."""
        cost = call_cost(answered, usage, self.prices) if answered else None
        return cost if cost is not None else call_cost(requested, usage, self.prices)
