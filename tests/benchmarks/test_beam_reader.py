"""`reader.prompt=beam_rag`: the BEAM authors' answer prompt and settings as a reader option. The
request our reader sends is compared with the one the authors' own `probing_question_evaluation`
(taken out of the pinned long_term_memory_methods.py by `ast` and run unchanged, with a stub
retriever that hands it our memory as its retrieved context and a stub model that records what it
is sent) builds for the same memory and question; the pack verifies; the settings are those of the
pinned answer_generation.py; ours stays the default."""

from __future__ import annotations

import ast
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import PINS, scripted_reader

from memorybench import CONF_DIR
from memorybench.benchmarks.beam.reader import READER_MAX_TOKENS, BeamReaderTemplate, reader_temperature
from memorybench.cli import main
from memorybench.errors import UserError
from memorybench.pack.verify import verify_pack
from memorybench.testing.scripted_server import ScriptedOpenAIServer

BEAM = PINS / "beam"
METHODS = BEAM / "src" / "answer_probing_questions" / "long_term_memory_methods.py"
PROMPTS = BEAM / "src" / "prompts.py"
TIER = BEAM / "chats" / "100K"


def small_tier(root: Path, chats: int = 4) -> Path:
    """A tier folder in BEAM's format: the first `chats` chats of the pinned conversation 1's first
    batch, and its first question of each ability (their source turns kept where the chats hold them)."""
    folder = root / "100K" / "1"
    (folder / "probing_questions").mkdir(parents=True)
    first = json.loads((TIER / "1" / "chat.json").read_text("utf-8"))[0]
    chat = [{**first, "turns": first["turns"][:chats]}]
    (folder / "chat.json").write_text(json.dumps(chat), "utf-8")
    ids = {turn["id"] for batch in chat for turns in batch["turns"] for turn in turns}
    questions = json.loads((TIER / "1" / "probing_questions" / "probing_questions.json").read_text("utf-8"))
    kept = {}
    for ability, items in questions.items():
        first = dict(items[0])
        sources = first.get("source_chat_ids")
        if isinstance(sources, dict):
            first["source_chat_ids"] = {k: [i for i in v if i in ids] for k, v in sources.items()}
        elif isinstance(sources, list):
            first["source_chat_ids"] = [i for i in sources if i in ids]
        kept[ability] = [first]
    (folder / "probing_questions" / "probing_questions.json").write_text(json.dumps(kept), "utf-8")
    return root / "100K"


class Document:
    def __init__(self, page_content: str) -> None:
        self.page_content, self.metadata = page_content, {}


class Retriever:
    """The authors' saved retriever, handing back our memory as the one retrieved document."""

    def __init__(self, memory: str) -> None:
        self.memory = memory

    def get_relevant_documents(self, query: str, k: int | None = None) -> list[Document]:
        return [Document(self.memory)]


class Model:
    """The authors' reader `model`: every request kept."""

    def __init__(self) -> None:
        self.requests: list[Any] = []

    def invoke(self, request: Any) -> Any:
        self.requests.append(request)
        return type("Reply", (), {"content": "an answer"})()


def authors_request(chat: Path, memory: str, question: str) -> Any:
    """What the pinned probing_question_evaluation sends for `question` with `memory` as its
    retrieved context (evaluation_type "rag", a BM25 retriever already built: no chunking, no
    embedding model), run unchanged with its helpers create_retriever and handling_context."""
    tree = ast.parse(METHODS.read_text("utf-8"))
    wanted = ("probing_question_evaluation", "create_retriever", "handling_context")
    module = ast.Module(body=[n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name in wanted], type_ignores=[])
    namespace: dict[str, Any] = {"json": json}
    exec(compile(PROMPTS.read_text("utf-8"), str(PROMPTS), "exec"), namespace)  # noqa: S102 - pinned string literals
    exec(compile(module, str(METHODS), "exec"), namespace)  # noqa: S102 - pinned, sha256-checked
    model = Model()
    namespace["probing_question_evaluation"](
        query=question,
        chat_directory=str(chat.parent),
        chat_address=str(chat),
        chat_size="100K",
        evaluation_type="rag",
        gpt_llm=None,
        qwen_llm=None,
        model=model,
        retrieval_config={"retrieval_method": "turn_chunk", "retriever": "bm25", "k": 5},
        saved_retriever=Retriever(memory),
        chunks=[],
    )
    (request,) = model.requests
    return request


@pytest.fixture(scope="module")
def answered(tmp_path_factory):
    root = tmp_path_factory.mktemp("beam_reader")
    tier = small_tier(root)
    with ScriptedOpenAIServer() as server:
        code = main(
            [
                "qa",
                "experiment=beam_authors",
                "memory=full_context",
                f"dataset.path={tier}",
                *scripted_reader(server.base_url),
                f"paths.packs={root / 'packs'}",
                f"paths.cache={root / 'cache'}",
            ]
        )
        bodies = list(server.requests)
    assert code == 0
    (pack,) = (root / "packs" / "beam_authors" / "runs").iterdir()
    return tier, pack, bodies


def test_the_request_is_what_the_authors_code_builds_for_the_same_memory_and_question(answered):
    tier, pack, bodies = answered
    from memorybench.benchmarks.beam.data import read_tier
    from memorybench.memory.full_context import render_sessions

    (conversation,) = read_tier(tier).conversations
    memory = "\n".join(item.text for item in render_sessions(conversation))  # full_context's text
    # within the authors' context budget (handling_context: 29,000 tokens at 3.5 characters each),
    # so their context is the whole memory, as ours is
    assert 1000 < len(memory) < 29000 * 3.5
    assert len(bodies) == len(conversation.questions) == 10
    for question, body in zip(conversation.questions, bodies, strict=True):
        theirs = authors_request(tier / "1" / "chat.json", memory, question.question)
        assert isinstance(theirs, str)  # model.invoke(prompt): one user message, no system message
        assert body["messages"] == [{"role": "user", "content": theirs}]
        assert body["temperature"] == reader_temperature() == 0.0 and body["max_tokens"] == READER_MAX_TOKENS


def test_the_pack_records_the_pinned_prompt_and_verifies(answered):
    _, pack, _ = answered
    assert verify_pack(pack) == []
    traces = [json.loads(line) for line in (pack / "reader" / "traces.jsonl").read_text("utf-8").splitlines()]
    assert {t["request"]["renderer"] for t in traces} == {"beam_rag"} and all(t["request"].get("system") is None for t in traces)
    assert (pack / "prompts" / "beam_rag").read_text("utf-8") == BeamReaderTemplate().text()


def test_the_experiment_carries_the_authors_settings_and_ours_stays_the_default():
    experiment = yaml.safe_load((CONF_DIR / "experiment" / "beam_authors.yaml").read_text("utf-8"))
    assert experiment["reader"] == {"prompt": "beam_rag", "temperature": reader_temperature(), "max_tokens": READER_MAX_TOKENS}
    for option in ("openai", "openai_compatible", "local"):
        assert yaml.safe_load((CONF_DIR / "reader" / f"{option}.yaml").read_text("utf-8"))["prompt"] == "readers/qa_v1.txt"


def test_the_fill_is_the_authors_replace_chain_values_and_all():
    """A memory holding the text `<question>` gets the question put into it, as
    `.replace("<context>", context).replace("<question>", query)` does."""
    template = BeamReaderTemplate()
    text = template.text()
    sent = template.render(text, {"memory": "said <question> once", "question": "Q?"})
    assert sent == text.replace("<context>", "said <question> once").replace("<question>", "Q?")
    assert "said Q? once" in sent


def test_a_changed_pin_is_one_line(tmp_path):
    pins = tmp_path / "pins"
    shutil.copytree(BEAM, pins / "beam")
    methods = pins / "beam" / "src" / "answer_probing_questions" / "long_term_memory_methods.py"
    methods.write_text(methods.read_text("utf-8").replace('.replace("<question>", query)', '.replace("<q>", query)'), "utf-8")
    with pytest.raises(UserError, match="sha256") as info:
        BeamReaderTemplate().text(pins)
    assert "\n" not in info.value.message


def test_another_benchmarks_dataset_refuses_it(tmp_path, capsys):
    from conftest import FIXTURES

    code = main(["plan", "reader.prompt=beam_rag", f"dataset.path={FIXTURES / 'mini_locomo.json'}"])
    assert code != 0 and "reader.prompt=beam_rag is BEAM's reader prompt" in capsys.readouterr().err
