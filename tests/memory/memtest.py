"""A scripted writer for the memory tests: replies derived mechanically from the request.

Plumbing, never results: it recognizes each writer task by its template's first words and
answers in the task's format with text copied from the request (a message line becomes a
"fact", a speaker an entity), so what lands in memory comes from session text only.
"""

from __future__ import annotations

import json
import re
from typing import Any

from memorybench.testing.scripted_server import Reply, echo_responder

READER_SYSTEM = "You answer questions using only the provided memory."


def _user(body: dict[str, Any]) -> str:
    return next((m["content"] for m in reversed(body.get("messages", [])) if m.get("role") == "user"), "")


def _first_user(body: dict[str, Any]) -> str:
    return next((m["content"] for m in body.get("messages", []) if m.get("role") == "user"), "")


def _block(text: str, start: str, end: str | None = None) -> str:
    after = text.split(start, 1)[1] if start in text else ""
    return after.split(end, 1)[0] if end and end in after else after


def _lines(block: str) -> list[tuple[str, str]]:
    """(speaker, text) of every `SPEAKER: TEXT` line."""
    out = []
    for line in block.strip().splitlines():
        match = re.match(r"^([^:\n]{1,40}): (.+)$", line.strip())
        if match:
            out.append((match.group(1), match.group(2)))
    return out


def _reply(payload: Any, text: str) -> Reply:
    body = json.dumps(payload) if not isinstance(payload, str) else payload
    return Reply(text=body, prompt_tokens=max(1, len(text.split())), completion_tokens=max(1, len(body.split())))


def writer_responder(body: dict[str, Any]) -> Reply:
    system = next((m["content"] for m in body.get("messages", []) if m.get("role") == "system"), "")
    if system == READER_SYSTEM:
        return echo_responder(body)
    prompt = _first_user(body)
    if prompt.startswith("Summarize the conversation session"):
        lines = _lines(_block(prompt, "Session date:", "\n\nSummary:").split("\n", 2)[-1])
        return _reply(" ".join(f"{s} said: {t}" for s, t in lines[:2]) or "nothing", prompt)
    if prompt.startswith("Extract a knowledge graph") or prompt.startswith("Extract the entities"):
        marker = "Messages:\n" if "Messages:\n" in prompt else "Session date:"
        lines = _lines(_block(prompt, marker).split("\n", 1)[-1] if marker == "Session date:" else _block(prompt, marker))
        speakers = list(dict.fromkeys(s for s, _ in lines))
        relations = [{"source": s, "relation": "said", "target": " ".join(t.split()[:3]), "when": None} for s, t in lines]
        return _reply({"entities": [{"name": s, "type": "person"} for s in speakers], "relations": relations}, prompt)
    if prompt.startswith("You are a personal-information organizer"):
        speaker = prompt.split("worth remembering about ", 1)[1].split(":", 1)[0]
        lines = _lines(_block(prompt, "Messages:\n"))
        return _reply({"facts": [f"{s}: {t}" for s, t in lines if s == speaker]}, prompt)
    if prompt.startswith("You manage the stored memories"):
        fact = _block(prompt, "New fact: ").strip()
        stored = _block(prompt, "Stored memories (id: text):\n", "\n\nNew fact:").strip()
        for line in stored.splitlines():
            mid, _, text = line.partition(": ")
            if text == fact:
                return _reply({"event": "NOOP", "id": mid, "text": None}, prompt)
        return _reply({"event": "ADD", "id": None, "text": fact}, prompt)
    if prompt.startswith("Below are relations stored"):
        return _reply({"obsolete": []}, prompt)
    if prompt.startswith("You keep a short list of saved memories"):
        speaker = prompt.split("saved memories about ", 1)[1].split(",", 1)[0]
        saved = [
            line[2:]
            for line in _block(prompt, f"Saved memories about {speaker}:\n", "\n\nSession date:").splitlines()
            if line.startswith("- ")
        ]
        lines = _lines(_block(prompt, "Session date:").split("\n", 2)[-1])
        return _reply({"facts": saved + [f"{s}: {t}" for s, t in lines if s == speaker][:2]}, prompt)
    return Reply(text="unrecognized writer task", prompt_tokens=1, completion_tokens=1)


# -- building one method directly (no Hydra per test) -------------------------------------
_BASE: dict[str, Any] = {}


def base_cfg() -> Any:
    """One composed run config (scripted endpoints, hashing embedder), composed once."""
    if "cfg" not in _BASE:
        from memorybench.plan import plan_runs

        (spec,) = plan_runs(
            [
                "reader=openai_compatible",
                "reader.base_url=http://127.0.0.1:9/v1",
                "reader.model=r",
                "writer=openai_compatible",
                "writer.base_url=http://127.0.0.1:9/v1",
                "writer.model=scripted-writer",
                "embedder=hashing",
            ]
        )
        _BASE["cfg"] = spec.cfg
    return _BASE["cfg"]


def cfg_for(method: str, writer_url: str | None = None, **memory: Any) -> Any:
    """The base config with `memory=method` (its YAML, plus `memory` overrides) and the writer at `writer_url`."""
    from hydra.core.config_store import ConfigStore
    from omegaconf import OmegaConf

    from memorybench import CONF_DIR
    from memorybench.config import MemoryConfig, load_component_configs

    load_component_configs()
    cfg = OmegaConf.create(OmegaConf.to_container(base_cfg()))
    option = OmegaConf.load(CONF_DIR / "memory" / f"{method}.yaml")
    schemas = [d for d in option.pop("defaults", []) if d != "_self_"]
    # the method's own schema node (its YAML names it first in its defaults list), else the base
    stored = ConfigStore.instance().repo["memory"]
    schema = stored[f"{schemas[0]}.yaml"].node if schemas else OmegaConf.structured(MemoryConfig)
    node = OmegaConf.merge(schema, option, memory)
    cfg.memory = OmegaConf.create(OmegaConf.to_container(node))
    if writer_url:
        cfg.writer.base_url = writer_url
        cfg.writer.max_retries = 1
        cfg.writer.retry_max_wait_s = 0.0
    return cfg


def open_method(cfg: Any, pack_root: Any) -> tuple[Any, Any]:
    """(the wrapped method, its BuildContext) over a fresh pack at `pack_root`."""
    from memorybench.memory import build_memory_method, open_build_context
    from memorybench.pack.run_pack import RunPack

    pack = RunPack(pack_root)
    pack.open()
    method = build_memory_method(cfg)
    return method, open_build_context(cfg, pack, pack_root / "cache", method=method)


def conversation(
    sessions: list[list[tuple[str, str]]], speakers: tuple[str, str] = ("Ana", "Ben"), sample_id: str = "t-1"
) -> Any:
    """A Conversation from [[(speaker, text), ...] per session]; dates 1..N May 2023."""
    from memorybench.data.records import Conversation, Session, Turn

    return Conversation(
        sample_id=sample_id,
        speaker_a=speakers[0],
        speaker_b=speakers[1],
        sessions=tuple(
            Session(i, f"10:00 am on {i} May, 2023", tuple(Turn(s, f"D{i}:{j}", t) for j, (s, t) in enumerate(turns, 1)))
            for i, turns in enumerate(sessions, 1)
        ),
        questions=(),
        session_summaries={},
    )


def jrows(path: Any) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()] if path.is_file() else []
