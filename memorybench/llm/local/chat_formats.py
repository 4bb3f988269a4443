"""Our chat format for base (non-chat) models, registered in llama-cpp-python.

``memorybench-completion`` turns the chat messages into plain completion text: each
message's content in order (system first), separated by a blank line, with no role
markers and no special tokens beyond the BOS that llama.cpp adds. Our reader prompt ends
with ``Short answer:``, so a base model such as Gemma 3 270M continues it as a completion.
Generation stops at a newline unless the request asks for JSON
(``response_format={"type": "json_object"}``), where the grammar ends the answer instead.
The answer is stripped of surrounding whitespace (a completion starts with the space
after ``Answer:``); when the model's first token is the newline (its answer would start
on the next line), the request is repeated once with that newline in the prompt, which
costs a few tokens thanks to the KV-cache prefix reuse.

`render_completion_prompt` is pure; `register()` needs ``llama_cpp`` and is called in the
server process only (``memorybench.llm.local.serve``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from memorybench.llm.local.models import COMPLETION_CHAT_FORMAT

DEFAULT_STOP = "\n"


def _content_text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    # OpenAI content parts: keep the text parts
    parts = []
    for part in content:
        if isinstance(part, Mapping) and part.get("type") == "text":
            parts.append(str(part.get("text", "")))
    return "".join(parts)


def render_completion_prompt(messages: Iterable[Mapping[str, Any]]) -> str:
    """System text, a blank line, the user text (and any further messages the same way)."""
    texts = [_content_text(m.get("content")) for m in messages]
    return "\n\n".join(t for t in texts if t)


def _answer_text(result: dict[str, Any]) -> str:
    try:
        return str(result["choices"][0]["message"]["content"] or "")
    except (KeyError, IndexError, TypeError):
        return ""


def _strip_answer(result: dict[str, Any]) -> None:
    """Drop the space a completion starts with after ``Answer:`` (and trailing blanks)."""
    try:
        message = result["choices"][0]["message"]
    except (KeyError, IndexError, TypeError):
        return
    if isinstance(message.get("content"), str):
        message["content"] = message["content"].strip()


def register() -> None:
    """Register `COMPLETION_CHAT_FORMAT` with llama-cpp-python (idempotent)."""
    from llama_cpp import llama_chat_format as lcf

    def formatter(*, messages: list[Any], **kwargs: Any) -> lcf.ChatFormatterResponse:
        return lcf.ChatFormatterResponse(prompt=render_completion_prompt(messages))

    base_handler = lcf.chat_formatter_to_chat_completion_handler(formatter)

    def handler(*, stop: Any = None, response_format: Any = None, **kwargs: Any) -> Any:
        json_mode = isinstance(response_format, Mapping) and response_format.get("type") in (
            "json_object",
            "json_schema",
        )
        if not json_mode:
            stops = [] if stop is None else [stop] if isinstance(stop, str) else list(stop)
            if DEFAULT_STOP not in stops:
                stops.append(DEFAULT_STOP)
            stop = stops
        result = base_handler(stop=stop, response_format=response_format, **kwargs)
        if json_mode or kwargs.get("stream") or not isinstance(result, dict):
            return result
        if not _answer_text(result).strip() and kwargs.get("messages"):
            # A base model often puts its answer on the next line ("Short answer:\n...") and
            # the newline stop ends it empty; ask again with that newline in the prompt.
            # The prompt is a prefix of the one just evaluated, so this costs a few tokens.
            messages = [dict(m) for m in kwargs.pop("messages")]
            messages[-1]["content"] = _content_text(messages[-1].get("content")) + "\n"
            first_usage = dict(result.get("usage") or {})
            result = base_handler(stop=stop, response_format=response_format, messages=messages, **kwargs)
            usage = result.get("usage")
            if isinstance(usage, dict) and first_usage:
                usage["completion_tokens"] = usage.get("completion_tokens", 0) + first_usage.get("completion_tokens", 0)
                usage["total_tokens"] = usage.get("prompt_tokens", 0) + usage["completion_tokens"]
        _strip_answer(result)
        return result

    lcf.LlamaChatCompletionHandlerRegistry().register_chat_completion_handler(COMPLETION_CHAT_FORMAT, handler, overwrite=True)
