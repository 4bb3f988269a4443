"""memory=memos (MemOS's own general_text memory: extract, add, search, in its own
environment) against scripted servers over real HTTP: plumbing; and one smoke on the embedded
local models (marked `local_model`).

The scripted writer (`_memos_scripted.memos_responder`) answers MemOS's extraction calls in the
shape its prompt asks for (one memory per line of the speaker whose side is extracted), so
what lands in MemOS's store comes from session text. Most checks read one pack (`run`,
module-scoped: three `qa` runs of one run id, a failed, a resumed and a finished one, with
canary keys and a dead OpenAI base URL in the environment), since starting MemOS is most of
a test's time. Checked: every call MemOS made has its row in the pack (calls the endpoint
saw = rows), named by MemOS's prompt; the build cost and the estimate count them; the pack
verifies (contamination check included); the store (Qdrant's embedded store, MemOS's log) is
in the pack, named by `show`, and searched again by a resumed run without a build call; a
rerun builds nothing; run_meta.json records the MemOS environment's versions; no canary key
reaches a file or a request; the store-words prompt file holds the store's own words and the
rest of the store is still scanned; MemOS's process connected to nothing but the recording
endpoint (its socket audit, which refuses anything else: tested with a wrong allowed port);
a reply MemOS cannot use is a counted failure with MemOS's words; a run's budget.top_k is
MemOS's top_k; with writer.json_schema the extraction goes out with its reply's schema;
every way the method can fail to start is one line.

Skipped, with the reason, when the plugin or its MemOS environment is not installed
(`bash plugins/memos/install.sh`).
"""

from __future__ import annotations

import json
import re
import sys
import time
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mb_memos", reason="the memos plugin is not installed: bash plugins/memos/install.sh")
from mb_memos import _env  # noqa: E402

if not _env.python().is_file():
    pytest.skip(f"no MemOS environment at {_env.python()}: bash plugins/memos/install.sh", allow_module_level=True)

sys.path.insert(0, str(Path(__file__).parent))
from _memos_scripted import PROMPT_START, conversation_of, is_extraction, memos_responder  # noqa: E402

from memorybench.cli import main  # noqa: E402
from memorybench.errors import UserError  # noqa: E402
from memorybench.pack.verify import verify_pack  # noqa: E402
from memorybench.testing.plugin_qa import (  # noqa: E402
    ResumedRuns,
    ScriptedQA,
    assert_only_the_endpoint,
    broken_python,
    error_line,
    pinned_dataset,
    resumed_runs,
    rows,
    scripted_servers,
    smoke_qa,
)
from memorybench.testing.scripted_server import Reply  # noqa: E402

FIXTURES = Path(__file__).resolve().parents[3] / "tests" / "fixtures"
MINI = FIXTURES / "mini_locomo.json"
PROMPT_FILE = "library/memos/memos-2.0.33_prompts.txt"
STORE_WORDS_FILE = "library/memos/memos-2.0.33_store_words.txt"
CANARY = "sk-canary-memos-0123456789abcdefghijklmnop"
#: a UUID (with or without dashes), a longer hex run, a timestamp: what MemOS's store holds of random digits
RANDOM_DIGITS = re.compile(
    r"[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}|[0-9a-f]{16,}"
    r"|\d{4}-\d\d-\d\d[ t]\d\d:\d\d:\d\d(?:[.,]\d+)?"
)
qa = ScriptedQA(main, "memos", MINI)
the_pack = qa.pack


@pytest.fixture()
def servers():
    with scripted_servers(memos_responder) as pair:
        yield pair


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> ResumedRuns:
    """One pack made by three `qa` runs of the same run id on mini-1 (its two sessions), with
    an OPENAI_API_KEY canary and a dead OPENAI_BASE_URL in the environment: the first stops
    when the reader fails on the second question (the memory committed), the second resumes
    it (MemOS opened again over the pack's store, for search only), the third finds it done."""
    return resumed_runs(
        qa,
        tmp_path_factory.mktemp("memos-shared"),
        memos_responder,
        {"OPENAI_API_KEY": CANARY, "OPENAI_BASE_URL": "http://127.0.0.1:9/v1"},  # the openai client's default: never used
    )


def test_memos_extracts_stores_and_searches_through_the_recording_endpoint(run):
    pack = run.pack
    assert run.codes[1:] == [0, 0]
    assert verify_pack(pack) == []

    # every call MemOS made reached the writer through us and has its row, named by its prompt:
    # mini-1's two sessions, each extracted from Ana's side and from Ben's
    calls = rows(pack / "memory/writer/calls.jsonl")
    assert len(calls) == len(run.writer_requests) == 4 and all(c["ok"] for c in calls)
    assert [c["role"] for c in calls] == ["memos:extract"] * 4
    assert all(c["request"]["messages"][0]["content"].startswith(PROMPT_START) for c in calls)
    assert all(len(c["request"]["messages"]) == 1 for c in calls)  # MemOS sends its prompt as one user message
    assert all(c["template"] == "library:memos/extract" for c in calls)
    assert all(body.get("response_format") is None for body in run.writer_requests)  # as MemOS sent it (no json_schema)
    # each session from each speaker's side: that speaker's lines are `user`
    sides = [conversation_of(body).splitlines() for body in run.writer_requests]
    assert sides[0][0] == "user:[1:56 pm on 8 May, 2023]: Ana: Hi Ben! I started pottery last week."
    assert sides[1][0] == "assistant:[1:56 pm on 8 May, 2023]: Ana: Hi Ben! I started pottery last week."
    assert (pack / "prompts" / PROMPT_FILE).is_file() and (pack / "prompts" / STORE_WORDS_FILE).is_file()
    prompt = (pack / "prompts" / PROMPT_FILE).read_text("utf-8")
    assert PROMPT_START in prompt and "${conversation}" in prompt and "${custom_tags_prompt}" not in prompt
    embeds = rows(pack / "memory/memos/embed_calls.jsonl")
    assert embeds and all(e["texts"] and e["dimensions"] > 0 for e in embeds)
    assert len([e for e in embeds if e["question_id"]]) == 3  # each question's search embeds the query through us

    # the build cost counts them
    (cost,) = rows(pack / "memory/build_cost.jsonl")
    assert cost["writer"]["calls"] == len(calls)
    assert cost["embedder"]["texts"] >= sum(len(e["texts"]) for e in embeds if e["question_id"] is None)

    # the store lives in the pack: Qdrant's embedded store and MemOS's own log
    sid = cost["sample_id"]
    store = pack / f"memory/library_stores/memos/{sid}"
    assert (store / "qdrant" / "collection" / sid / "storage.sqlite").is_file()
    assert (store / ".memos" / "logs" / "memos.log").is_file()
    stored = json.loads((pack / f"memory/memos/{sid}.json").read_text("utf-8"))
    items = stored["items"]
    assert len(items) == 5 and all(i["sources"] for i in items)  # one memory per line of its speaker's side
    assert {i["text"] for i in items} >= {
        "Ana said: Hi Ben! I started pottery last week.",
        "Ben said: Biscuit is 3 years old now.",
    }
    assert all(s.startswith("D1:") for i in items if "pottery" in i["text"] for s in i["sources"])
    library = stored["metadata"]["library"]
    assert library["endpoint_rows"]["chat"] == len(calls) and library["extraction_tasks"] == 4
    assert library["memory_type"] == "general_text" and library["perspectives"] == ["Ana", "Ben"]
    assert library["extraction_failed"] == [] and library["schema_requests"] == 0

    # run_meta.json: the MemOS environment's versions (its wrapped_versions()) beside the plugin's
    meta = json.loads((pack / "run_meta.json").read_text("utf-8"))
    (plugin,) = [p for p in meta["plugins"] if p["name"] == "memos"]
    assert plugin["wraps"] == {"MemoryOS": "2.0.33", "qdrant-client": "1.20.0", "openai": plugin["wraps"]["openai"]}
    assert plugin["wraps"]["openai"].startswith("1.")  # the MemOS environment's, not ours
    assert any("MemOS's own general_text memory" in note for note in meta["notes"])

    # MemOS's process connected only to the recording endpoint (its audit refuses the rest) ...
    (endpoint_at,) = library["connections"]
    assert endpoint_at.startswith("127.0.0.1:")
    # ... and in this process only the endpoint's threads called the writer
    assert_only_the_endpoint(run.seen, run.writer_port)

    # `show` walks a question through the pack: the store, what MemOS retrieved, the writer calls
    shown, out = qa.show(pack, rows(pack / "predictions.jsonl")[0]["question_id"])
    assert shown == 0 and "method memos" in out and "retrieved for this question" in out
    assert f"memory/library_stores/memos/{sid}/" in out and "memos:extract" in out


def test_a_resumed_run_searches_the_store_in_the_pack_and_a_rerun_builds_nothing(run):
    """The reader failed on the second question: the first run stopped with the memory
    committed; the second opened MemOS again over the pack's store (no writer call) and
    searched it; the third, of a finished run id, built and asked nothing."""
    assert run.codes[0] != 0 and run.first["predictions"] == 1 and not run.first["success"]
    assert len(run.writer_requests) == run.first["writer_calls"] == 4  # nothing rebuilt
    assert (run.pack / "_SUCCESS").exists()
    predictions = rows(run.pack / "predictions.jsonl")
    retrievals = rows(run.pack / "memory/memos/retrievals.jsonl")
    assert len(predictions) == 3 and {r["question_id"] for r in retrievals} == {p["question_id"] for p in predictions}
    items = {i["item_id"] for i in json.loads((run.pack / "memory/memos/mini-1.json").read_text("utf-8"))["items"]}
    assert all(r["hits"] and {h["item_id"] for h in r["hits"]} <= items for r in retrievals)  # MemOS's ids, the dump's
    assert all(r["returned"] == 5 for r in retrievals)  # top_k 10 over 5 memories: all of them, best first
    assert len(run.reader_requests) == 4  # q1, q2 refused, then q2 and q3: the third run asked nothing


def test_its_declared_writer_calls_meet_the_calls_memos_makes(run):
    """`writer_calls`: one extraction per session and speaker, its prompt exactly MemOS's."""
    (role,) = [r for r in json.loads((run.pack / "estimate.json").read_text("utf-8"))["roles"] if r["role"] == "writer"]
    assert role["calls"] == len(rows(run.pack / "memory/writer/calls.jsonl")) == 4
    from mb_memos._core import MemosMemory
    from omegaconf import OmegaConf

    from memorybench.data.source import load_dataset

    (mini,) = [c for c in load_dataset(MINI, "locomo10") if c.sample_id == "mini-1"]
    (task,) = MemosMemory.writer_calls(mini, OmegaConf.create({"memory": {}})).tasks
    assert task.exact and task.prompts == [body["messages"][0]["content"] for body in run.writer_requests]


def test_no_canary_key_reaches_the_pack_or_a_request(run):
    """An OPENAI_API_KEY in the environment (the openai client reads it) reaches no file of
    the pack and no request; the dead OPENAI_BASE_URL was never connected to (the audit)."""
    sent = json.dumps(run.writer_requests) + json.dumps(run.reader_requests)
    assert CANARY not in sent
    assert [p for p in run.tmp.rglob("*") if p.is_file() and CANARY.encode() in p.read_bytes()] == []


def test_the_store_words_are_an_empty_store_s_and_leave_the_rest_of_a_store_scanned(run):
    """MemOS's store holds words of its own in every conversation (Qdrant's pickled classes,
    MemOS's item fields, its log's fixed lines). The pack's store-words file, read from empty
    stores the installed MemOS made, holds them, and no word of a conversation or an id; with
    the pack's prompt files as verify reads them, the shared run's store holds no LoCoMo gold
    of any conversation but what its own conversation's text holds (its ids and timestamps aside)."""
    locomo = pinned_dataset("the check reads LoCoMo's golds")
    from memorybench.data.source import load_dataset
    from memorybench.memory.venv_store_words import HEX_ONLY, WORD
    from memorybench.pack.verify.contamination import _text_of
    from memorybench.pack.verify.needles import Needles, date_forms

    text = (run.pack / "prompts" / STORE_WORDS_FILE).read_text("utf-8")
    head, *words = text.splitlines()
    assert head.startswith("# the words every MemOS store holds") and "MemoryOS 2.0.33" in head
    assert {"qdrant_client.http.models.models", "pointstruct", "updated_at", "activated"} <= set(words)
    assert all(WORD.fullmatch(w) and len(w) >= 4 and not HEX_ONLY.match(w) for w in words)
    (mini,) = [c for c in load_dataset(MINI, "locomo10") if c.sample_id == "mini-1"]
    assert not {w for w in words if w in WORD.findall(mini.text_blob().lower())} - {
        "last",
        "week",
        "love",
        "look",
        "this",
    }  # words of MemOS's prompt (in its log) that mini-1 also says

    conversations = load_dataset(locomo, "locomo10")
    own = (mini.text_blob() + "\n" + "\n".join(f for s in mini.sessions for f in date_forms(s.date_time))).lower()
    prompts = "\n".join(p.read_text("utf-8") for p in sorted((run.pack / "prompts").rglob("*.txt")))
    words_file = run.pack / "prompts" / STORE_WORDS_FILE
    others = "\n".join(p.read_text("utf-8") for p in sorted((run.pack / "prompts").rglob("*.txt")) if p != words_file)
    scanned, bare = Needles(conversations, with_summaries=False, instructions=prompts), Needles(conversations, False)
    prompt_only = Needles(conversations, with_summaries=False, instructions=others)
    store = run.pack / "memory/library_stores/memos/mini-1"
    leaks: set[tuple[str, str]] = set()
    without: set[str] = set()
    without_words: set[str] = set()
    for path in (p for p in store.rglob("*") if p.is_file()):
        low = RANDOM_DIGITS.sub(" ", _text_of(path.read_bytes()).lower())
        for c in conversations:
            leaks |= {(path.relative_to(store).as_posix(), g) for g in scanned.scan(c.sample_id, low) if g not in own}
            without |= set(bare.scan(c.sample_id, low))
            without_words |= {g for g in prompt_only.scan(c.sample_id, low) if g not in own}
    assert leaks == set()
    # what the store words answer: verify's findings with MemOS's prompt file but without them
    # ("running": Qdrant's "running in local mode" warning in MemOS's log, a LoCoMo gold)
    assert "running" in without_words and without_words <= set(words)
    assert without >= without_words


def test_a_reply_memos_cannot_use_is_a_counted_failure_with_its_words(tmp_path):
    """The writer's first extraction is no JSON: MemOS logs that it failed to parse it and its
    `extract` raises (no `memory list`); that task's memories are lost, the call is a counted
    failure with MemOS's words, and the build goes on. With memory.max_sessions=1, the build is
    a prefix: session 2 is never sent."""
    seen: list[int] = []

    def prose_once(body: dict[str, Any]) -> Reply:
        if is_extraction(body) and not seen:
            seen.append(1)
            return Reply(text="Sure! Here are the memories: Ana started pottery.")
        return memos_responder(body)

    with scripted_servers(prose_once) as (reader, writer):
        assert qa(tmp_path, reader, writer, "memory.max_failed_share=1.0", "memory.max_sessions=1") == 0
    pack = the_pack(tmp_path)
    calls = rows(pack / "memory/writer/calls.jsonl")
    assert [c["ok"] for c in calls] == [False, True]
    assert "Failed to parse LLM response as JSON" in calls[0]["error"]
    reports = [r for r in rows(pack / "memory/memos/library_reports.jsonl") if r["failure"]]
    assert [r["counted"] for r in reports] == [True, False]  # MemOS's warning counted it; the worker's line is journaled
    assert "GeneralTextMemory.extract raised KeyError" in reports[1]["message"]
    (failure,) = rows(pack / "memory/writer/failures.jsonl")
    assert "reported by the library" in failure["action"] and "Failed to parse" in failure["error"]
    findings = verify_pack(pack)
    assert [f.code for f in findings] == ["memory.writer_failures"] and findings[0].warning
    stored = json.loads((pack / "memory/memos/mini-1.json").read_text("utf-8"))
    assert stored["metadata"]["library"]["extraction_failed"] == ["session_1/Ana"]
    assert {i["text"] for i in stored["items"]} == {"Ben said: Nice! I adopted a dog called Biscuit."}
    assert stored["metadata"]["prefix"] == {"max_sessions": 1, "sessions_built": 1, "sessions": 2}
    assert not any("Lisbon" in conversation_of(body) for body in writer.requests)


def test_the_budget_top_k_is_memos_top_k_and_a_schema_writer_gets_the_reply_s_schema(tmp_path, servers):
    """A run's budget.top_k replaces memory.top_k: MemOS's search is asked for that many.
    With writer.json_schema (as writer=local has it) the extraction is sent with the schema of
    the reply MemOS's prompt describes, bounded, each free string kept to characters JSON takes raw."""
    reader, writer = servers
    assert qa(tmp_path, reader, writer, "budget.top_k=2", "memory.max_sessions=1", "writer.json_schema=true") == 0
    pack = the_pack(tmp_path)
    retrievals = rows(pack / "memory/memos/retrievals.jsonl")
    assert retrievals and all(r["top_k"] == 2 and r["returned"] == 2 and len(r["hits"]) == 2 for r in retrievals)
    assert json.loads((pack / "memory/budget.json").read_text("utf-8"))["held"] is True
    assert all(body["response_format"]["type"] == "json_object" for body in writer.requests)
    schema = writer.requests[0]["response_format"]["schema"]
    item = schema["properties"]["memory list"]["items"]
    assert item["required"] == ["key", "memory_type", "value", "tags"] and schema["properties"]["memory list"]["maxItems"] >= 1
    assert item["properties"]["value"]["pattern"].startswith('^[^"\\\\\\x00-\\x1F]{0,')
    stored = json.loads((pack / "memory/memos/mini-1.json").read_text("utf-8"))
    assert stored["metadata"]["library"]["schema_requests"] == 2 and "extract" in stored["metadata"]["library"]["json_bounds"]
    assert verify_pack(pack) == []


def test_a_connection_elsewhere_is_refused_and_stops_the_run(tmp_path, servers, capsys, monkeypatch):
    """The worker's socket audit allows only the recording endpoint's address: told another
    port, MemOS's first call is refused in its process, and the run stops with one line."""
    from memorybench.memory import venv_method

    monkeypatch.setattr(venv_method, "host_port", lambda base_url: ("127.0.0.1", 9))
    reader, writer = servers
    assert qa(tmp_path, reader, writer, "memory.max_sessions=1") != 0
    line = error_line(capsys.readouterr().err)
    assert "MemOS tried to connect to 127.0.0.1:" in line and "only the recording endpoint" in line
    assert writer.requests == []


# -- every way it can fail to start: one line ---------------------------------------------------


def test_a_missing_environment_or_other_memos_is_one_line(monkeypatch, tmp_path):
    from mb_memos import _core

    monkeypatch.setenv(_env.PYTHON_ENV, str(tmp_path / "nowhere" / "bin" / "python"))
    with pytest.raises(UserError) as missing:
        _core.check_installed()
    message = str(missing.value)
    assert "no MemOS environment at" in message and "bash plugins/memos/install.sh" in message and "\n" not in message
    assert _env.PYTHON_ENV in message
    monkeypatch.delenv(_env.PYTHON_ENV)

    monkeypatch.setitem(_core.PINNED, "MemoryOS", "9.9.9")
    with pytest.raises(UserError) as other:
        _core.check_installed()
    message = str(other.value)
    assert "written for MemoryOS 9.9.9" in message and "MemoryOS 2.0.33 is installed" in message and "\n" not in message


def test_qa_refuses_another_memos_before_any_call(tmp_path, servers, monkeypatch, capsys):
    from mb_memos import _core

    reader, writer = servers
    monkeypatch.setitem(_core.PINNED, "qdrant-client", "0.0.1")
    assert qa(tmp_path, reader, writer) != 0
    err = capsys.readouterr().err
    assert "memory=memos was written for qdrant-client 0.0.1" in err and "Traceback" not in err
    assert writer.requests == [] and reader.requests == []


def test_a_worker_that_dies_is_one_line(tmp_path, servers, capsys, monkeypatch):
    """The MemOS environment's Python is not a Python that can run the worker: one line with its last words."""
    fake = broken_python(tmp_path, "MemOS environment is broken")
    from mb_memos import _core

    monkeypatch.setattr(_core, "check_installed", lambda: None)
    prompt = _env.prompt()  # read from the real environment before its interpreter is replaced
    monkeypatch.setattr(_env, "prompt", lambda name=_env.EXTRACT_PROMPT: prompt)
    monkeypatch.setenv(_env.PYTHON_ENV, str(fake))
    reader, writer = servers
    assert qa(tmp_path, reader, writer, "memory.max_sessions=1") != 0
    line = error_line(capsys.readouterr().err)
    assert "MemOS's worker exited (code 3)" in line and "MemOS environment is broken" in line


def test_an_environment_without_memos_is_one_line(tmp_path, servers, capsys, monkeypatch):
    """A Python that runs the worker but cannot import MemOS (memorybench's own): one line
    naming the import error."""
    from mb_memos import _core

    monkeypatch.setattr(_core, "check_installed", lambda: None)
    prompt = _env.prompt()  # read from the real environment before its interpreter is replaced
    monkeypatch.setattr(_env, "prompt", lambda name=_env.EXTRACT_PROMPT: prompt)
    monkeypatch.setenv(_env.PYTHON_ENV, sys.executable)
    from mb_memos import _store_words

    monkeypatch.setattr(
        _store_words, "store_words", lambda: "# (not read: this Python has no MemOS)\n"
    )  # the worker's open fails
    reader, writer = servers
    assert qa(tmp_path, reader, writer, "memory.max_sessions=1") != 0
    line = error_line(capsys.readouterr().err)
    assert "MemOS stopped during open of mini-1: ModuleNotFoundError: No module named 'memos'" in line
    assert writer.requests == []


# -- pieces --------------------------------------------------------------------------------------


def test_the_extraction_schema_is_the_reply_memos_prompt_describes_and_reads():
    """The schema sent with writer.json_schema names what MemOS's prompt asks for and what its
    `extract` reads (`memory list`; each item's key, value and tags); the prompt's fixed size
    is within FIXED_PROMPT_TOKENS in every local model's tokens."""
    from mb_memos._core import EXTRACT_SCHEMA, FIXED_PROMPT_TOKENS, extract_prompt

    prompt = extract_prompt()
    structure = prompt.split("Return a single valid JSON object with the following structure:", 1)[1].split("Language rules:")[0]
    item = EXTRACT_SCHEMA["properties"]["memory list"]["items"]["properties"]
    assert all(f'"{key}"' in structure for key in [*item, *EXTRACT_SCHEMA["properties"]])
    source = (_env.site_packages() / "memos" / "memories" / "textual" / "general.py").read_text("utf-8")
    assert all(f'memory_dict["{key}"]' in source for key in ("value", "key", "tags")) and 'response_json["memory list"]' in source
    from memorybench.llm.local.models import LOCAL_MODELS, count_tokens

    assert max(count_tokens(prompt, spec) for spec in LOCAL_MODELS.values()) <= FIXED_PROMPT_TOKENS


def test_a_session_is_two_sides_of_memos_messages():
    from mb_memos._core import extraction_text, session_messages

    from memorybench.data.records import Session, Turn

    session = Session(1, "1:56 pm on 8 May, 2023", (Turn("Ana", "D1:1", "Hi"), Turn("Ben", "D1:2", "Hello")))
    assert session_messages(session, "Ana") == [
        {"role": "user", "content": "[1:56 pm on 8 May, 2023]: Ana: Hi"},
        {"role": "assistant", "content": "[1:56 pm on 8 May, 2023]: Ben: Hello"},
    ]
    assert [m["role"] for m in session_messages(session, "Ben")] == ["assistant", "user"]
    text = extraction_text(session_messages(session, "Ana"))
    assert text.startswith(PROMPT_START) and text.endswith(
        "user:[1:56 pm on 8 May, 2023]: Ana: Hi\nassistant:[1:56 pm on 8 May, 2023]: Ben: Hello\n\nYour Output:"
    )


@pytest.mark.local_model
def test_memos_smoke_on_the_embedded_model(tmp_path):
    """conv-26's first session on the embedded models (SmolLM2 writes under the extraction
    schema as a grammar, Gemma reads), 5 questions: answers, a pack that verifies, every library
    call a row."""
    started = time.perf_counter()
    pack = smoke_qa(
        tmp_path,
        "memos-smoke",
        "memory=memos",
        "writer=local",
        "reader=local",
        "memory.max_sessions=1",
        "max_questions=5",
        timeout=1800,
    )
    findings = verify_pack(pack)  # a warning at most: the small writer's failed tasks, counted
    assert all(f.warning for f in findings), [f.format() for f in findings]
    (cost,) = rows(pack / "memory/build_cost.jsonl")
    stored = json.loads((pack / f"memory/memos/{cost['sample_id']}.json").read_text("utf-8"))
    calls = rows(pack / "memory/writer/calls.jsonl")
    library = stored["metadata"]["library"]
    assert library["endpoint_rows"]["chat"] == len(calls) == cost["writer"]["calls"] == 2
    assert library["schema_requests"] == 2 and all(c.startswith("127.0.0.1:") for c in library["connections"])
    predictions = rows(pack / "predictions.jsonl")
    assert len(predictions) == 5 and all(p["prediction"].strip() for p in predictions)
    failed = [c for c in calls if not c["ok"]]
    print(
        f"memos smoke: {time.perf_counter() - started:.0f} s, {len(stored['items'])} items, {len(calls)} chat calls "
        f"({len(failed)} failed)"
    )
