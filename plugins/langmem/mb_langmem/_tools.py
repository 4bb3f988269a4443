"""Tool calls over a JSON reply: how LangMem's tool-calling requests reach a writer that
memorybench drives by JSON replies.

LangMem extracts and updates memories through trustcall, and every trustcall request is a
tool call (`tools`, `tool_choice`, and on a repair turn the earlier tool calls and their
tool messages). memorybench's writer endpoint (`memorybench.llm.records.ChatRequest`) sends
messages and a `response_format`, never tools, and the embedded llama.cpp writer is driven
by a JSON grammar. `ToolCallEndpoint` translates at the recording endpoint, where the
library's request arrives:

- the request: the tools are written into the system message (name, description, the
  parameters' JSON Schema, which ones to call), the earlier tool calls and tool messages
  become plain messages (the assistant's calls as the same JSON, each tool message as a user
  message naming its call), and the reply is asked for as one JSON object,
  `{"tool_calls": [{"name": ..., "arguments": {...}}]}`, whose schema (`response_format`,
  named by the task: `extract`, `update`, `fix`) lists one branch per tool;
- the reply: that object becomes the OpenAI message's `tool_calls` (ids `call_<call>_<n>`,
  the arguments as a JSON string), which LangChain's ChatOpenAI parses as from any server.
  A reply that is not such an object reaches the library as text with no tool calls (the
  endpoint has counted it as a failed task already: it is a JSON task that did not parse).

What the writer saw (the rewritten messages, the schema) is what `memory/writer/calls.jsonl`
journals. This is how a server without native tool calling serves LangChain (llama.cpp's own
server writes tools into the prompt and constrains the reply the same way); it adds no
memory logic: which memories to keep, update or drop is the model's reply, read by trustcall
and LangMem as they read any provider's tool calls.

The reply schema is the parser's (docs/writers.md): what the grammar admits is what
trustcall and LangMem can use. A union that offers scalars keeps only those (a map of free
keys cannot be bounded, and lists of lists would make the longest reply many times longer
than `writer.max_tokens` allows: `memorybench.memory._schema_budget`); and trustcall's
`PatchDoc` is narrowed to patches LangMem's memories can take (`patch_doc`): its
`json_doc_id` one of the ids the request shows (`<instance id=...>`), as our clones' update
replies may only name the memories shown, each patch an `add` or `replace` of a field of the
memory schema (`/content`) with a string. Without a grammar (a server writer) the same
schema is sent as `response_format` and is guidance only.
"""

from __future__ import annotations

import copy
import json
import re
from typing import Any

from memorybench.memory.library_endpoint import LibraryEndpoint

#: the reply's one key
CALLS = "tool_calls"
#: the ids trustcall shows for existing memories (`_ExtractUpdates._setup`)
INSTANCE_ID = re.compile(r"<instance id=([^\s>]+) schema_type=")
SCALARS = ("string", "integer", "number", "boolean", "null")
#: trustcall's and LangMem's own tools (the rest are memory schemas: LangMem's `Memory`)
LIBRARY_TOOLS = ("PatchDoc", "PatchFunctionErrors", "PatchFunctionName", "Done", "RemoveDoc")
#: the head of what the system message gains (the rest lists the tools)
TOOLS_HEADING = "# Tools"


def task_of(names: list[str]) -> str:
    """The task a tool-calling request is, from the tools it offers: trustcall's repair turn
    (`fix`: PatchFunctionErrors), an update over stored memories (`update`: PatchDoc), or a
    first extraction (`extract`)."""
    if "PatchFunctionErrors" in names:
        return "fix"
    if "PatchDoc" in names:
        return "update"
    return "extract"


def _is_scalar(node: Any) -> bool:
    return isinstance(node, dict) and node.get("type") in SCALARS and "items" not in node


def grammar_schema(node: Any) -> Any:
    """A tool's parameters as a bounded grammar can hold them (module doc): descriptions,
    titles and examples dropped (they are in the system message), a union with scalar
    branches reduced to them, a map of free keys left out of a union."""
    if isinstance(node, list):
        return [grammar_schema(n) for n in node]
    if not isinstance(node, dict):
        return node
    out = {k: grammar_schema(v) for k, v in node.items() if k not in ("description", "title", "examples", "default")}
    branches = out.get("anyOf")
    if isinstance(branches, list):
        scalars = [b for b in branches if _is_scalar(b)]
        kept = scalars or [b for b in branches if not (isinstance(b, dict) and b.get("additionalProperties"))]
        out["anyOf"] = kept or branches
    return out


def envelope(tools: list[dict[str, Any]], choice: Any, shown_ids: list[str]) -> dict[str, Any]:
    """The JSON Schema of the reply: `{"tool_calls": [...]}`, one branch per callable tool;
    trustcall's `PatchDoc` narrowed to patches its memories can take (module doc)."""
    named = _named_choice(choice)
    fields = sorted(
        {f"/{key}" for t in tools if t["name"] not in LIBRARY_TOOLS for key in (t.get("parameters") or {}).get("properties", {})}
    )
    branches = []
    for tool in tools:
        name = tool["name"]
        if named is not None and name != named:
            continue
        params = grammar_schema(copy.deepcopy(tool.get("parameters") or {"type": "object", "properties": {}}))
        if name == "PatchDoc":
            patch_doc(params, shown_ids, fields)
        params.setdefault("type", "object")
        params["additionalProperties"] = False
        branches.append(
            {
                "type": "object",
                "properties": {"name": {"type": "string", "const": name}, "arguments": params},
                "required": ["name", "arguments"],
                "additionalProperties": False,
            }
        )
    if not branches:  # a named tool the request does not offer: any of its tools
        return envelope(tools, "required", shown_ids)
    calls: dict[str, Any] = {"type": "array", "items": {"anyOf": branches} if len(branches) > 1 else branches[0]}
    if named is not None or choice in ("required", "any"):
        calls["minItems"] = 1
    return {"type": "object", "properties": {CALLS: calls}, "required": [CALLS], "additionalProperties": False}


def patch_doc(params: dict[str, Any], shown_ids: list[str], fields: list[str]) -> None:
    """PatchDoc's arguments as its memories can take them: the id one of those shown; each
    patch an `add` or `replace` of a memory's field (`/content`) with a string. A `remove`
    of that field, another path or a value of another type leaves a memory LangMem's schema
    refuses, and trustcall's repair of a refused call fails under langgraph 1.x
    (docs/langmem.md): the grammar keeps the reply to patches that apply."""
    props = params.get("properties") or {}
    if shown_ids and "json_doc_id" in props:
        props["json_doc_id"] = {"type": "string", "enum": list(shown_ids)}
    patch = ((props.get("patches") or {}).get("items") or {}).get("properties")
    if not isinstance(patch, dict) or not fields:
        return
    patch["op"] = {"type": "string", "enum": ["add", "replace"]}
    patch["path"] = {"type": "string", "enum": list(fields)}
    value = patch.get("value") or {}
    strings = [b for b in value.get("anyOf", [value]) if isinstance(b, dict) and b.get("type") == "string"]
    if strings:
        patch["value"] = strings[0]


def _named_choice(choice: Any) -> str | None:
    if isinstance(choice, dict):
        return str((choice.get("function") or {}).get("name") or "") or None
    return None


def tools_text(tools: list[dict[str, Any]], choice: Any) -> str:
    """The tools as the system message states them to the model."""
    named = _named_choice(choice)
    if named is not None:
        rule = f"Call the tool {named}."
    elif choice in ("required", "any"):
        rule = "Call at least one tool."
    else:
        rule = "Call any number of tools, or none (an empty list)."
    lines = [
        TOOLS_HEADING,
        "You reply only by calling tools. Reply with one JSON object: "
        '{"tool_calls": [{"name": "<a tool name>", "arguments": {<the tool\'s parameters>}}, ...]}. ' + rule,
    ]
    for tool in tools:
        lines += [
            "",
            f"## {tool['name']}",
            str(tool.get("description") or "").strip(),
            "Parameters (JSON Schema): " + json.dumps(tool.get("parameters") or {}, ensure_ascii=False, sort_keys=True),
        ]
    return "\n".join(lines)


def plain_messages(messages: list[dict[str, Any]], tools: list[dict[str, Any]], choice: Any) -> list[dict[str, Any]]:
    """The request's messages without tool parts: the tools written into the system message,
    an assistant's tool calls as the reply JSON, a tool message as a user message."""
    out: list[dict[str, Any]] = []
    for m in messages:
        role, content = m.get("role"), m.get("content")
        if isinstance(content, list):  # text parts only (anything else the endpoint refuses)
            content = "".join(str(p.get("text", "")) for p in content if isinstance(p, dict) and p.get("type") == "text")
        if role == "assistant" and m.get("tool_calls"):
            calls = []
            for call in m["tool_calls"]:
                function = call.get("function") or {}
                try:
                    arguments = json.loads(function.get("arguments") or "{}")
                except ValueError:
                    arguments = function.get("arguments")
                calls.append({"name": function.get("name"), "arguments": arguments})
            out.append({"role": "assistant", "content": json.dumps({CALLS: calls}, ensure_ascii=False)})
        elif role == "tool":
            out.append({"role": "user", "content": f"Tool result for call {m.get('tool_call_id')}:\n{content or ''}"})
        else:
            out.append({"role": role, "content": content if content is not None else ""})
    text = tools_text(tools, choice)
    if out and out[0]["role"] == "system":
        out[0] = {"role": "system", "content": f"{out[0]['content']}\n\n{text}"}
    else:
        out.insert(0, {"role": "system", "content": text})
    return out


def json_request(body: dict[str, Any]) -> dict[str, Any]:
    """A tool-calling request as a JSON request (module doc)."""
    tools = [dict(t.get("function") or t) for t in body.get("tools") or []]
    choice = body.get("tool_choice")
    messages = [dict(m) for m in body.get("messages") or []]
    system = next((str(m.get("content") or "") for m in messages if m.get("role") == "system"), "")
    shown = list(dict.fromkeys(INSTANCE_ID.findall(system)))
    names = [str(t.get("name")) for t in tools]
    plain = {k: v for k, v in body.items() if k not in ("tools", "tool_choice", "parallel_tool_calls", "functions", "messages")}
    plain["messages"] = plain_messages(messages, tools, choice)
    plain["response_format"] = {
        "type": "json_schema",
        "json_schema": {"name": task_of(names), "schema": envelope(tools, choice, shown)},
    }
    return plain


def with_tool_calls(completion: dict[str, Any], call: int) -> dict[str, Any]:
    """The endpoint's completion with its JSON reply turned into the message's tool calls
    (ids `call_<call>_<n>`); unchanged when the reply is not such an object."""
    from memorybench.memory._writer import parse_json_object

    choice = completion["choices"][0]
    text = choice["message"].get("content") or ""
    try:
        calls = parse_json_object(text).get(CALLS)
    except ValueError:
        return completion
    if not isinstance(calls, list):
        return completion
    made = []
    for n, c in enumerate(calls):
        if not isinstance(c, dict) or not isinstance(c.get("name"), str):
            continue
        arguments = c.get("arguments")
        made.append(
            {
                "id": f"call_{call}_{n}",
                "type": "function",
                "function": {"name": c["name"], "arguments": json.dumps(arguments if arguments is not None else {})},
            }
        )
    message = {"role": "assistant", "content": "", "tool_calls": made} if made else {"role": "assistant", "content": ""}
    finish = "tool_calls" if made else choice.get("finish_reason") or "stop"
    return {**completion, "choices": [{**choice, "message": message, "finish_reason": finish}]}


class ToolCallEndpoint(LibraryEndpoint):
    """The recording endpoint, with LangMem's tool-calling requests sent as JSON requests and
    the replies returned as tool calls (module doc). Everything else is LibraryEndpoint's:
    the journal, the failure count, the library's own reports."""

    #: tool-calling requests translated, per task
    translated: dict[str, int]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.translated = {}

    def _chat(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        if not body.get("tools"):
            return super()._chat(body)
        plain = json_request(body)
        task = plain["response_format"]["json_schema"]["name"]
        self.translated[task] = self.translated.get(task, 0) + 1
        status, out = super()._chat(plain)
        if status != 200 or self.sample_id is None:
            return status, out
        return status, with_tool_calls(out, self._calls.get(self.sample_id, 0))
