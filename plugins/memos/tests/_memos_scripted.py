"""The scripted writer for memory=memos's plumbing tests: MemOS's extraction calls answered
from the conversation in the request, in the shape its prompt asks for (plumbing, not results)."""

from __future__ import annotations

import json
import re
from typing import Any

from memorybench.testing.scripted_server import Reply, echo_responder

#: how MemOS's extraction prompt starts (its user message: MemOS sends no system message)
PROMPT_START = "You are a memory extraction expert."


def is_extraction(body: dict[str, Any]) -> bool:
    user = next((m.get("content") for m in body.get("messages") or [] if m.get("role") == "user"), "")
    return isinstance(user, str) and user.startswith(PROMPT_START)


def conversation_of(body: dict[str, Any]) -> str:
    """The `role:content` lines MemOS filled into its prompt."""
    user = next(m["content"] for m in body["messages"] if m["role"] == "user")
    return user.rsplit("\nConversation:\n", 1)[-1].rsplit("\n\nYour Output:", 1)[0]


def lines_of(body: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(role, speaker, text) of each line MemOS filled in (`role:[DATE]: SPEAKER: text`)."""
    out = []
    for line in conversation_of(body).splitlines():
        found = re.match(r"^(user|assistant):\[[^\]]*\]: (\w+): (.*)$", line)
        if found:
            out.append((found.group(1), found.group(2), found.group(3)))
    return out


def memos_responder(body: dict[str, Any]) -> Reply:
    """One memory per `user` line (the speaker whose side MemOS extracts): `SPEAKER said: text`."""
    if not is_extraction(body):
        return echo_responder(body)
    memories = [
        {"key": f"{speaker} line {n}", "memory_type": "UserMemory", "value": f"{speaker} said: {text[:100]}", "tags": [speaker]}
        for n, (role, speaker, text) in enumerate(lines_of(body))
        if role == "user"
    ]
    text = json.dumps({"memory list": memories, "summary": "scripted"})
    words = sum(len(str(m["content"]).split()) for m in body["messages"])
    return Reply(text=text, prompt_tokens=words, completion_tokens=len(text.split()))
