"""Mem0's answer prompts as reader templates (`reader.prompt=mem0_rag | mem0_answer |
mem0_answer_graph`): pinned and fetched like the judge prompt; each request body equals,
byte for byte, jinja2's render of the pinned text with the slot values Mem0's scripts
compute (here computed again from the pack's own records); the pack verifies; a template
the memory cannot fill is a one-line error."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import re
from pathlib import Path

import jinja2
import pytest
from conftest import FIXTURES, PINS, scripted_reader

from memorybench.benchmarks.locomo.data import load_locomo
from memorybench.cli import main
from memorybench.data import pins
from memorybench.errors import UserError
from memorybench.pack.verify import verify_pack
from memorybench.plan import plan_runs
from memorybench.testing.scripted_server import ScriptedOpenAIServer

MINI = FIXTURES / "mini_locomo.json"
PROMPT_PINS = {
    "mem0_rag": "prompts/mem0_rag_prompt.txt",
    "mem0_answer": "prompts/mem0_answer_prompt.txt",
    "mem0_answer_graph": "prompts/mem0_answer_prompt_graph.txt",
}
RAG_SYSTEM = "prompts/mem0_rag_system.txt"


def _memtest():
    spec = importlib.util.spec_from_file_location("memtest", Path(__file__).resolve().parents[1] / "memory" / "memtest.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def pinned(relpath: str) -> str:
    return (PINS / relpath).read_bytes().decode("utf-8")


def render(name: str, **values: str) -> str:
    """What Mem0's scripts send: `jinja2.Template(PROMPT).render(...)`."""
    return jinja2.Template(pinned(PROMPT_PINS[name])).render(**values)


def rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]


def sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@pytest.fixture(scope="module")
def servers():
    with ScriptedOpenAIServer() as reader, ScriptedOpenAIServer(responder=_memtest().writer_responder) as writer:
        yield reader, writer


def qa(tmp: Path, reader, writer, *extra: str) -> Path:
    reader.requests.clear()
    code = main(
        [
            "qa",
            *scripted_reader(reader.base_url),
            "writer=openai_compatible",
            f"writer.base_url={writer.base_url}",
            "writer.model=scripted-writer",
            "embedder=hashing",
            f"dataset.path={MINI}",
            f"paths.packs={tmp / 'packs'}",
            f"paths.cache={tmp / 'cache'}",
            "name=mem0",
            *extra,
        ]
    )
    assert code == 0
    (pack,) = (tmp / "packs" / "mem0" / "runs").iterdir()
    return pack


def questions() -> dict[str, str]:
    return {q.question_id: q.question for c in load_locomo(MINI) for q in c.questions}


# -- the pins ----------------------------------------------------------------------------


def test_the_four_prompts_are_pinned_with_the_hashes_of_pins_md():
    table = {}
    for line in (PINS / "PINS.md").read_text("utf-8").splitlines():
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line)]  # a `\|` inside a cell is no border
        if len(cells) > 3 and cells[1].startswith("prompts/mem0_"):
            table[cells[1]] = cells[3]
    new = {p.relpath: p for p in pins.MEM0_ANSWER_PINS}
    assert set(new) == {*PROMPT_PINS.values(), RAG_SYSTEM}
    for relpath, pin in new.items():
        assert pin.sha256 == table[relpath] and pin in pins.ALL_PINS
        assert pin.commit == pins.MEM0_ACCURACY_PROMPT.commit and pin.repository == "mem0ai/mem0"
        assert pins.pin_path(pin) == (PINS / relpath).resolve()


def test_fetch_takes_each_prompt_out_of_mem0s_source(tmp_path, monkeypatch):
    # mem0's files as Python sources: triple-quoted assignments, and the system message as
    # adjacent literals inside the call, as at the pinned commit
    system = pinned(RAG_SYSTEM)
    cut = system.index("context.") + len("context.")
    sources = {
        "evaluation/prompts.py": (
            f'ANSWER_PROMPT_GRAPH = """{pinned(PROMPT_PINS["mem0_answer_graph"])}"""\n\n\n'
            f'ANSWER_PROMPT = """{pinned(PROMPT_PINS["mem0_answer"])}"""\n'
        ),
        "evaluation/src/rag.py": (
            f'PROMPT = """{pinned(PROMPT_PINS["mem0_rag"])}"""\n\n\nclass RAGManager:\n    def generate_response(self, prompt):\n'
            f'        return [\n            {{\n                "role": "system",\n                "content": "{system[:cut]}"\n'
            f'                "{system[cut:]}",\n            }},\n            {{"role": "user", "content": prompt}},\n        ]\n'
        ),
    }
    fetched: list[str] = []

    def download(url: str) -> bytes:
        fetched.append(url)
        return next(text for path, text in sources.items() if url.endswith(path)).encode("utf-8")

    monkeypatch.setattr(pins, "_download", download)
    monkeypatch.setattr(pins, "ALL_PINS", pins.MEM0_ANSWER_PINS)
    log: list[str] = []
    root = pins.fetch_pins(tmp_path, log=log.append)
    assert log == [f"fetched  {p.relpath}" for p in pins.MEM0_ANSWER_PINS]
    assert len(fetched) == 2  # rag.py once for its two strings
    for pin in pins.MEM0_ANSWER_PINS:
        assert (root / pin.relpath).read_bytes() == (PINS / pin.relpath).read_bytes()
        assert pin.url == f"https://raw.githubusercontent.com/mem0ai/mem0/{pin.commit}/{pin.source_path}"


# -- taking a mem0 memory text apart ---------------------------------------------------------


def test_mem0_memory_text_is_taken_apart_into_mem0s_slots():
    from memorybench.templates import (
        mem0_context,
        mem0_relations,
        mem0_speaker_memories,
    )

    text = (
        "Memories for Ana:\n- 10:00 am on 1 May, 2023: Ana: likes tea\n- 10:00 am on 2 May, 2023: Ana: moved to Lisbon\n\n"
        "Memories for Ben:\n(none)\n\n"
        "Relations:\n- Ana -- lives in --> Lisbon (10:00 am on 2 May, 2023)\n"
        "- Ana -- lives in --> Porto (10:00 am on 1 May, 2023; obsolete since 10:00 am on 2 May, 2023)"
    )
    assert mem0_speaker_memories(text, "Ana") == [
        "10:00 am on 1 May, 2023: Ana: likes tea",
        "10:00 am on 2 May, 2023: Ana: moved to Lisbon",
    ]
    assert mem0_speaker_memories(text, "Ben") == [] == mem0_speaker_memories(text, "Cleo")
    assert mem0_relations(text) == [{"source": "Ana", "relationship": "lives in", "target": "Lisbon"}]  # obsolete: left out
    assert mem0_context("a | X: hi\nb | Y: yo") == "a | X: hi\nb | Y: yo\n" == mem0_context("a | X: hi\nb | Y: yo\n")


# -- request bodies, byte for byte ----------------------------------------------------------


def test_mem0_rag_on_full_context_sends_mem0s_messages(tmp_path, servers):
    reader, writer = servers
    pack = qa(tmp_path, reader, writer, "memory=full_context", "reader.prompt=mem0_rag")
    asked = questions()
    # Mem0's full-context CONTEXT: `{timestamp} | {speaker}: {text}` lines, each ending in a newline
    context = {
        c.sample_id: "".join(f"{s.date_time} | {t.render()}\n" for s in c.sessions for t in s.turns) for c in load_locomo(MINI)
    }
    traces = rows(pack / "reader/traces.jsonl")
    assert len(traces) == len(reader.requests) == 10
    for trace, body in zip(traces, reader.requests):
        expected = render("mem0_rag", QUESTION=asked[trace["question_id"]], CONTEXT=context[trace["sample_id"]])
        assert expected.endswith("# Short answer:")  # jinja2 dropped the literal's trailing newline
        assert body["messages"] == [{"role": "system", "content": pinned(RAG_SYSTEM)}, {"role": "user", "content": expected}]
        assert trace["reader_payload_sha256"] == sha(expected)
        assert trace["request"]["renderer"] == "mem0_rag" and trace["request"]["template"] == "mem0_rag"
    meta = json.loads((pack / "run_meta.json").read_text())
    assert meta["prompts"] == {"mem0_rag": sha(pinned(PROMPT_PINS["mem0_rag"])), "system.txt": sha(pinned(RAG_SYSTEM))}
    assert verify_pack(pack) == []


def _expected_mem0(pack: Path, method: str, trace: dict, asked: dict[str, str], speakers: dict[str, tuple[str, str]]) -> str:
    """Mem0's search-script render, from the pack's own records: the retrieval's hits (best
    first) looked up in the stored memories, `{timestamp}: {memory}` per speaker."""
    stored = json.loads((pack / f"memory/{method}/{trace['sample_id']}.json").read_text())["state"]
    (retrieval,) = [r for r in rows(pack / f"memory/{method}/retrievals.jsonl") if r["question_id"] == trace["question_id"]]
    a, b = speakers[trace["sample_id"]]
    by_id = {f"{s}/{m['id']}": m for s, ms in stored["memories"].items() for m in ms}
    lines = {
        s: [f"{by_id[h['item_id']]['time']}: {by_id[h['item_id']]['text']}" for h in retrieval["hits"] if h.get("speaker") == s]
        for s in (a, b)
    }
    values = {
        "speaker_1_user_id": a,
        "speaker_2_user_id": b,
        "question": asked[trace["question_id"]],
        "speaker_1_memories": json.dumps(lines[a], indent=4),
        "speaker_2_memories": json.dumps(lines[b], indent=4),
    }
    if method == "mem0":
        return render("mem0_answer", **values)
    relations = {f"relation/{r['id']}": r for r in stored["relations"]}
    graph = [
        {"source": r["source"], "relationship": r["relation"], "target": r["target"]}
        for h in retrieval["hits"]
        if h.get("kind") == "relation" and (r := relations[h["item_id"]])["valid"]
    ]
    return render(
        "mem0_answer_graph",
        **values,
        speaker_1_graph_memories=json.dumps(graph, indent=4),
        speaker_2_graph_memories=json.dumps(graph, indent=4),
    )


@pytest.mark.parametrize("method, template", [("mem0", "mem0_answer"), ("mem0g", "mem0_answer_graph")])
def test_mem0_answer_prompts_are_the_only_message_as_mem0_sends_them(method, template, tmp_path, servers):
    reader, writer = servers
    pack = qa(tmp_path, reader, writer, f"memory={method}", f"reader.prompt={template}")
    asked = questions()
    speakers = {c.sample_id: (c.speaker_a, c.speaker_b) for c in load_locomo(MINI)}
    traces = rows(pack / "reader/traces.jsonl")
    predictions = {r["question_id"]: r for r in rows(pack / "predictions.jsonl")}
    assert len(traces) == len(reader.requests) == 10
    filled = related = 0
    for trace, body in zip(traces, reader.requests):
        expected = _expected_mem0(pack, method, trace, asked, speakers)
        related += '"relationship": ' in expected
        assert body["messages"] == [{"role": "system", "content": expected}]
        assert trace["reader_payload_sha256"] == sha(expected) == predictions[trace["question_id"]]["reader_payload_sha256"]
        assert trace["request"]["payload_role"] == "system" and "system" not in trace["request"]
        filled += '"' in expected.split("Memories for user", 1)[1]  # some memory lines reached the prompt
    assert filled and bool(related) == (method == "mem0g")
    meta = json.loads((pack / "run_meta.json").read_text())
    assert meta["prompts"][template] == sha(pinned(PROMPT_PINS[template])) and "system.txt" not in meta["prompts"]
    assert verify_pack(pack) == []


def test_verify_rebuilds_the_render_and_finds_an_edited_slot(tmp_path, servers):
    reader, writer = servers
    pack = qa(tmp_path, reader, writer, "memory=mem0", "reader.prompt=mem0_answer")
    path = pack / "reader/traces.jsonl"
    lines = path.read_text("utf-8").splitlines()
    first = json.loads(lines[0])
    first["request"]["slots"]["speaker_1"]["text"] = "Someone else"
    path.write_text("\n".join([json.dumps(first), *lines[1:]]) + "\n", "utf-8")
    problems = " ".join(str(f) for f in verify_pack(pack))
    assert "does not hash to its reader_payload_sha256" in problems


# -- mismatches ------------------------------------------------------------------------------


SCRIPTED = [
    "reader=openai_compatible",
    "reader.base_url=http://127.0.0.1:9/v1",
    "reader.model=r",
    "writer=openai_compatible",
    "writer.base_url=http://127.0.0.1:9/v1",
    "writer.model=w",
    "embedder=hashing",
]


@pytest.mark.parametrize(
    "overrides, expected",
    [
        (
            ["memory=full_context", "reader.prompt=mem0_answer"],
            "reader.prompt=mem0_answer fills per-speaker memory slots that only memory=mem0",
        ),
        (["memory=mem0g", "reader.prompt=mem0_answer"], "only memory=mem0 provides, not memory=mem0g"),
        (["memory=mem0", "reader.prompt=mem0_answer_graph"], "only memory=mem0g provides, not memory=mem0"),
        (["answerer=codex", "reader.prompt=mem0_rag"], "reader.prompt=mem0_rag is a pinned Mem0 prompt for answerer=reader"),
    ],
)
def test_a_template_the_memory_cannot_fill_is_a_one_line_error(overrides, expected):
    with pytest.raises(UserError) as info:
        plan_runs([*SCRIPTED, *overrides])
    assert expected in str(info.value) and "\n" not in str(info.value)


def test_the_default_reader_template_is_unchanged():
    (spec,) = plan_runs(SCRIPTED)
    assert spec.cfg.reader.prompt == "readers/qa_v1.txt"
    (rag,) = plan_runs([*SCRIPTED, "reader.prompt=mem0_rag"])
    assert rag.run_id != spec.run_id  # the pinned template's sha256 is in the identity


# -- qa_mem0_v1: Mem0's instructions over one {memory} slot, built at run time ---------------


def test_qa_mem0_v1_is_built_from_the_pinned_answer_prompt_and_recorded(tmp_path, servers):
    from memorybench import PROMPTS_DIR
    from memorybench.answer.prompt import fill_template
    from memorybench.templates import slots_of

    answer = pinned(PROMPT_PINS["mem0_answer"])
    reader, writer = servers
    pack = qa(tmp_path, reader, writer, "memory=full_context", "reader.prompt=qa_mem0_v1")
    template = (pack / "prompts/qa_mem0_v1").read_text("utf-8")
    assert slots_of(template) == {"memory", "question"} and "8. The answer should be less than 5-6 words." in template
    head = answer[: answer.index("    Memories for user")]
    assert template.startswith(head) and template.endswith(
        "    Memories:\n\n    {memory}\n\n    Question: {question}\n\n    Answer:\n    "
    )
    assert not list(PROMPTS_DIR.rglob("qa_mem0_v1*"))  # never committed: made from the pin when used
    meta = json.loads((pack / "run_meta.json").read_text())
    assert meta["prompts"]["qa_mem0_v1"] == sha(template)
    dumps = {p.stem: p.read_text("utf-8") for p in (pack / "memory/dumps").iterdir()}
    asked = questions()
    for trace, body in zip(rows(pack / "reader/traces.jsonl"), reader.requests):
        expected = fill_template(template, dumps[trace["sample_id"]], asked[trace["question_id"]])
        assert body["messages"][1] == {"role": "user", "content": expected}
        assert trace["request"]["template_sha256"] == sha(template) and "renderer" not in trace["request"]
    assert verify_pack(pack) == []
