"""The scripted writer for memory=cognee's plumbing tests: cognee's calls answered from the
chunk in the request, in the shape its schema asks for (plumbing, not results)."""

from __future__ import annotations

import json
import re
from typing import Any

from memorybench.testing.scripted_server import Reply, echo_responder


def task_of(body: dict[str, Any]) -> str | None:
    fmt = body.get("response_format") or {}
    if fmt.get("type") == "json_schema":
        return (fmt.get("json_schema") or {}).get("name")
    if fmt.get("type") == "json_object":
        return "json_object"
    return None


def chunk_of(body: dict[str, Any]) -> str:
    user = next(m["content"] for m in body["messages"] if m["role"] == "user")
    return user.split("\n\nYour previous response failed validation", 1)[0]


def speakers(text: str) -> list[str]:
    return list(dict.fromkeys(re.findall(r"\| (\w+): ", text)))


def cognee_responder(body: dict[str, Any]) -> Reply:
    """A graph of the chunk's speakers (each `said` its first words) and a summary: its first line."""
    task = task_of(body)
    if task is None:
        return echo_responder(body)
    chunk = chunk_of(body)
    lines = [line for line in chunk.splitlines() if line.strip()]
    if task == "KnowledgeGraph":
        names = speakers(chunk)
        nodes = [{"id": n.lower(), "name": n, "type": "Person", "description": f"{n} speaks in the chunk"} for n in names]
        edges = [
            {"source_node_id": a.lower(), "target_node_id": b.lower(), "relationship_name": "talks_with"}
            for a, b in zip(names, names[1:])
        ]
        data: dict[str, Any] = {"nodes": nodes, "edges": edges}
    else:
        data = {"summary": (lines[0].split(": ", 1)[-1] if lines else "nothing")[:100]}
    text = json.dumps(data)
    words = sum(len(m["content"].split()) for m in body["messages"])
    return Reply(text=text, prompt_tokens=words, completion_tokens=len(text.split()))
