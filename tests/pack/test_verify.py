"""`verify_pack`: fresh packs verify; each kind of tampering fails with its own code.

Packs are made once per module over real HTTP (the scripted server), then copied into
`tmp_path` before a test changes them. An edit records the file's new bytes in `_SUCCESS`
(as if the pack had been written that way), so a test sees the finding it is about and
not also `success.hash_mismatch`; test_verify_by_content.py is about `_SUCCESS` itself.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import FIXTURES, scripted_reader

from memorybench.cli import main
from memorybench.errors import UserError
from memorybench.pack.success import reclose, write_success
from memorybench.pack.verify import CODES, Finding, credential_values, verify_main, verify_pack
from memorybench.pack.verify.needles import Needles
from memorybench.testing.scripted_server import ScriptedOpenAIServer

MINI = FIXTURES / "mini_locomo.json"
FAKE_KEY = "sk-proj-" + "Zx9" * 12


def _make_pack(root: Path, server: ScriptedOpenAIServer, name: str, *extra: str) -> Path:
    args = [
        "qa",
        *scripted_reader(server.base_url),
        f"paths.packs={root / 'packs'}",
        f"paths.cache={root / 'cache'}",
        f"name={name}",
        *extra,
    ]
    assert main(args) == 0
    (pack,) = (root / "packs" / name / "runs").iterdir()
    return pack


@pytest.fixture(scope="module")
def packs(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("verify_packs")
    with ScriptedOpenAIServer() as server:
        return {
            "mini_full": _make_pack(root, server, "mini_full", f"dataset.path={MINI}"),
            "mini_summaries": _make_pack(root, server, "mini_summaries", f"dataset.path={MINI}", "memory=session_summaries"),
            "real_full": _make_pack(root, server, "real_full", "max_questions=60"),
            "real_summaries": _make_pack(root, server, "real_summaries", "max_questions=60", "memory=session_summaries"),
        }


def copy_pack(pack: Path, tmp_path: Path) -> Path:
    """A copy with the same layout and mtimes (copy2), safe to change."""
    target = tmp_path / "packs" / pack.parent.parent.name / "runs" / pack.name
    shutil.copytree(pack, target)
    return target


def reclosed(path: Path) -> None:
    """Record a changed or added file in the `_SUCCESS` of its pack (the folder with run_meta.json)."""
    pack = next(p for p in path.parents if (p / "run_meta.json").is_file())
    reclose(pack, [path.relative_to(pack).as_posix()])


def edit(path: Path, change: Callable[[bytes], bytes]) -> None:
    """Change a file's bytes, recorded in _SUCCESS."""
    path.write_bytes(change(path.read_bytes()))
    reclosed(path)


def edit_lines(path: Path, change: Callable[[list[bytes]], list[bytes]]) -> None:
    edit(path, lambda data: b"".join(change(data.splitlines(keepends=True))))


def edit_json_line(path: Path, number: int, change: Callable[[dict], None]) -> None:
    def apply(lines: list[bytes]) -> list[bytes]:
        row = json.loads(lines[number - 1])
        change(row)
        lines[number - 1] = (json.dumps(row, ensure_ascii=False, separators=(",", ":")) + "\n").encode()
        return lines

    edit_lines(path, apply)


def edit_json(path: Path, change: Callable[[dict], None]) -> None:
    def apply(data: bytes) -> bytes:
        doc = json.loads(data)
        change(doc)
        return (json.dumps(doc, indent=2, ensure_ascii=False) + "\n").encode()

    edit(path, apply)


def plant(path: Path, text: str) -> None:
    """A new file, recorded in _SUCCESS like the pack's own files."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    reclosed(path)


def codes(findings: list[Finding]) -> set[str]:
    return {f.code for f in findings}


def writer_call(sample_id: str, messages: list[dict], reply: str, **request) -> dict:
    """A `writer_call.v1` row that matches its schema (every row of a pack is validated)."""
    return {
        "schema": "writer_call.v1",
        "sample_id": sample_id,
        "method": "graph",
        "role": "graph",
        "call": 1,
        "attempt": "first",
        "template": "memory/graph_v1.txt",
        "template_sha256": "0" * 64,
        "request": {"model": "scripted-writer", "messages": messages, "temperature": 0.0, "max_tokens": 64, **request},
        "response": {"text": reply, "model_requested": "scripted-writer", "request_sha256": "1" * 64},
        "ok": True,
    }


# -- fresh packs ---------------------------------------------------------------------------


@pytest.mark.parametrize("which", ["mini_full", "mini_summaries", "real_full", "real_summaries"])
def test_a_fresh_pack_verifies(packs, which):
    assert verify_pack(packs[which]) == []


def test_every_code_is_documented(packs):
    assert all(CODES[c] for c in CODES)
    assert {
        "schema",
        "count",
        "hash.config",
        "hash.prompt",
        "hash.payload",
        "hash.data",
        "hash.reference",
        "success.missing",
        "success.unhashed",
        "success.hash_mismatch",
        "success.file_missing",
        "success.unclosed_file",
        "duplicate.row",
        "order",
        "gold.leak",
        "secret",
    } <= set(CODES)


def test_the_gold_scan_has_teeth_on_the_real_data(conversations):
    needles = Needles(conversations, with_summaries=False)
    # per conversation, many gold strings are absent from its source text: those are searched for
    assert min(len(needles.by_sample[c.sample_id]) for c in conversations) > 50
    conv26 = {n for n, _ in needles.by_sample["conv-26"]}
    planted = sorted(conv26)[0]
    assert planted in needles.scan("conv-26", f"memory line ... {planted.upper()} ...".lower())
    assert needles.scan("conv-26", conversations[0].text_blob().lower()) == ()


# -- tampering: one code each ------------------------------------------------------------------

TRACES = "reader/traces.jsonl"


def _swap(lines: list[bytes], i: int, j: int) -> list[bytes]:
    lines[i], lines[j] = lines[j], lines[i]
    return lines


def _set(key: str, value) -> Callable[[dict], None]:
    def change(doc: dict) -> None:
        doc[key] = value

    return change


TAMPERS: dict[str, tuple[Callable[[Path], None], str, set[str]]] = {
    # name: (tamper, the code it must raise, other codes it may also raise)
    "prompt file changed": (
        lambda p: edit(p / "prompts/readers/qa_v1.txt", lambda b: b.replace(b"short phrase", b"long essay")),
        "hash.prompt",
        set(),
    ),
    "system prompt changed": (lambda p: edit(p / "prompts/system.txt", lambda b: b + b" Be brief."), "hash.prompt", set()),
    "gold planted in a memory dump": (
        lambda p: edit(p / "memory/dumps/mini-1.txt", lambda b: b + b"\n10:00 am on 20 May, 2023 | Ben: Lisbon; travel"),
        "gold.leak",
        {"hash.memory", "hash.reference"},
    ),
    "gold planted in a trace's inline text": (
        lambda p: edit_json_line(
            p / TRACES,
            4,
            lambda r: r["request"]["slots"]["question"].update(
                text=r["request"]["slots"]["question"]["text"] + " (hint: Lisbon; travel)"
            ),
        ),
        "gold.leak",
        {"row.mismatch", "hash.payload"},
    ),
    "key planted in run_meta": (lambda p: edit_json(p / "run_meta.json", _set("notes", [f"key {FAKE_KEY}"])), "secret", set()),
    "key planted in a trace": (
        lambda p: edit_json_line(
            p / TRACES, 2, lambda r: r["response"]["attempts"][0].update(error=f"401 Incorrect API key provided: {FAKE_KEY}")
        ),
        "secret",
        set(),
    ),
    "bearer token in a log": (
        lambda p: plant(p / "reader/server.log", "GET /v1 Authorization: Bearer abcDEF0123456789ghiJKL\n"),
        "secret",
        set(),
    ),
    "_SUCCESS missing": (lambda p: (p / "_SUCCESS").unlink(), "success.missing", set()),
    "file changed after _SUCCESS": (
        lambda p: (p / "TRACE.md").write_bytes((p / "TRACE.md").read_bytes() + b"\nedited\n"),
        "success.hash_mismatch",
        set(),
    ),
    "file added after _SUCCESS": (lambda p: (p / "notes.txt").write_text("later\n"), "success.unclosed_file", set()),
    "closed file deleted": (
        lambda p: (p / "memory/dumps/mini-2.txt").unlink(),
        "success.file_missing",
        {"hash.memory", "hash.reference"},
    ),
    "duplicated prediction row": (
        lambda p: edit_lines(p / "predictions.jsonl", lambda ls: ls[:3] + [ls[2]] + ls[3:]),
        "duplicate.row",
        {"metrics"},
    ),
    "dropped prediction row": (lambda p: edit_lines(p / "predictions.jsonl", lambda ls: ls[:3] + ls[4:]), "count", {"metrics"}),
    "dropped last prediction row": (lambda p: edit_lines(p / "predictions.jsonl", lambda ls: ls[:-1]), "count", {"metrics"}),
    "reordered prediction rows": (
        lambda p: edit_lines(p / "predictions.jsonl", lambda ls: _swap(ls, 1, 2)),
        "order",
        {"metrics"},
    ),
    "reordered traces": (lambda p: edit_lines(p / TRACES, lambda ls: _swap(ls, 6, 7)), "order", set()),
    "changed config.resolved.yaml": (
        lambda p: edit(p / "config.resolved.yaml", lambda b: b.replace(b"max_tokens: 64", b"max_tokens: 65", 1)),
        "hash.config",
        set(),
    ),
    "prediction schema bumped": (
        lambda p: edit_json_line(p / "predictions.jsonl", 1, _set("schema", "prediction.v9")),
        "schema",
        set(),
    ),
    "run_meta schema bumped": (lambda p: edit_json(p / "run_meta.json", _set("schema", "run_meta.v2")), "schema", set()),
    "trace schema bumped": (lambda p: edit_json_line(p / TRACES, 3, _set("schema", "reader_trace.v0")), "schema", set()),
    "lineage row missing a field": (
        lambda p: edit_json_line(p / "memory/lineage.jsonl", 1, lambda r: r.pop("sources")),
        "schema",
        set(),
    ),
    "unknown top-level JSON file": (lambda p: plant(p / "extra.json", '{"schema": "extra.v1"}'), "schema", set()),
    "autorater row without schema": (lambda p: plant(p / "autorater/notes.jsonl", '{"x": 1}\n'), "schema", set()),
    "corrupt JSON line in the middle": (
        lambda p: edit_lines(p / "predictions.jsonl", lambda ls: ls[:4] + [b'{"schema": "prediction.v1", "quest\n'] + ls[5:]),
        "json",
        set(),
    ),
    "prediction gold changed": (
        lambda p: edit_json_line(p / "predictions.jsonl", 1, _set("gold", "clay")),
        "row.mismatch",
        {"metrics"},
    ),
    "trace reply changed": (
        lambda p: edit_json_line(p / TRACES, 5, lambda r: r["response"].update(text="Oslo")),
        "row.mismatch",
        set(),
    ),
    "prediction changed": (
        lambda p: edit_json_line(p / "predictions.jsonl", 5, _set("prediction", "Not mentioned")),
        "row.mismatch",
        {"metrics"},
    ),
    "prediction payload hash changed": (
        lambda p: edit_json_line(p / "predictions.jsonl", 2, _set("reader_payload_sha256", "0" * 64)),
        "hash.payload",
        set(),
    ),
    "trace payload hash changed": (
        lambda p: edit_json_line(p / TRACES, 2, _set("reader_payload_sha256", "0" * 64)),
        "hash.payload",
        set(),
    ),
    "trace question changed": (
        lambda p: edit_json_line(p / TRACES, 1, lambda r: r["request"]["slots"]["question"].update(text="What did Ana stop?")),
        "row.mismatch",
        {"hash.payload"},
    ),
    "memory dump changed": (
        lambda p: edit(p / "memory/dumps/mini-2.txt", lambda b: b.replace(b"rowing", b"rafting")),
        "hash.memory",
        {"hash.reference"},
    ),
    "prediction memory hash changed": (
        lambda p: edit_json_line(p / "predictions.jsonl", 6, _set("memory_sha256", "f" * 64)),
        "hash.memory",
        set(),
    ),
    "reference pin points at the wrong file": (
        lambda p: edit_json(
            p / "REFERENCE_PIN.json", lambda d: [v.update(path="memory/dumps/mini-2.txt") for v in d["refs"].values()]
        ),
        "hash.reference",
        set(),
    ),
    "question_count changed": (lambda p: edit_json(p / "run_meta.json", _set("question_count", 9)), "count", set()),
    "is_prefix changed": (lambda p: edit_json(p / "run_meta.json", _set("is_prefix", True)), "count", {"metrics"}),
    "metrics changed": (
        lambda p: edit_json(p / "metrics.json", lambda d: d["scores"]["locomo_f1"]["overall"].update(value=0.99)),
        "metrics",
        set(),
    ),
    "data hash changed": (
        lambda p: edit_json(p / "run_meta.json", lambda d: d["data"].update(sha256="0" * 64)),
        "hash.data",
        set(),
    ),
    "TRACE.md missing": (lambda p: (p / "TRACE.md").unlink(), "file.missing", set()),
    "leftover .part file": (lambda p: plant(p / "metrics.json.part", "{"), "file.partial", set()),
}


@pytest.mark.parametrize("name", list(TAMPERS))
def test_a_tampered_pack_fails_with_its_code(name, packs, tmp_path):
    tamper, code, allowed = TAMPERS[name]
    pack = copy_pack(packs["mini_full"], tmp_path)
    tamper(pack)
    findings = verify_pack(pack)
    assert code in codes(findings), findings
    assert codes(findings) <= {code, *allowed}, findings
    for f in findings:
        assert "\n" not in f.message and f.path and not f.path.startswith("/")


def test_gold_leak_names_the_file_and_line(packs, tmp_path):
    pack = copy_pack(packs["mini_full"], tmp_path)
    TAMPERS["gold planted in a trace's inline text"][0](pack)
    (leak,) = [f for f in verify_pack(pack) if f.code == "gold.leak"]
    assert leak.path == f"{TRACES}:4" and "'lisbon; travel'" in leak.message and "mini-1-q-3" in leak.message


def test_a_question_may_name_another_questions_gold(tmp_path, scripted_server):
    # the asked question's own text is removed before the scan ("When is Melanie's daughter's
    # birthday?" names a gold of another question); a copy anywhere else is still a leak
    data = json.loads(MINI.read_text())
    data[0]["qa"][0]["question"] = "What did Ana start before Lisbon; travel?"
    path = tmp_path / "named.json"
    path.write_text(json.dumps(data))
    pack = _make_pack(tmp_path, scripted_server, "named", f"dataset.path={path}")
    assert verify_pack(pack) == []
    edit_json_line(
        pack / TRACES,
        2,
        lambda r: r["request"]["slots"]["question"].update(text=r["request"]["slots"]["question"]["text"] + " Lisbon; travel"),
    )
    leaks = [f for f in verify_pack(pack) if f.code == "gold.leak"]
    assert [f.path for f in leaks] == [f"{TRACES}:2"]


def test_gold_planted_in_the_real_memory_is_found(packs, tmp_path, conversations):
    pack = copy_pack(packs["real_full"], tmp_path)
    needles = Needles(conversations, with_summaries=False)
    gold = next(n for n, _ in needles.by_sample["conv-26"] if needles.gold_of[n].startswith("conv-26-"))
    edit(pack / "memory/dumps/conv-26.txt", lambda b: b + f"\n{gold}".encode())
    leaks = [f for f in verify_pack(pack) if f.code == "gold.leak"]
    assert leaks and leaks[0].path.startswith("memory/dumps/conv-26.txt:"), leaks


def test_writer_input_is_scanned_and_its_reply_is_not(packs, tmp_path):
    pack = copy_pack(packs["mini_full"], tmp_path)
    row = writer_call("mini-1", [{"role": "user", "content": "x"}], 'Ana may like "Oslo; travel"')
    plant(pack / "memory/writer/calls.jsonl", json.dumps(row) + "\n")
    assert verify_pack(pack) == []  # a model's reply is output, not input
    row["request"]["messages"][0]["content"] = 'Summarize. Hint: "Lisbon; travel"'
    plant(pack / "memory/writer/calls.jsonl", json.dumps(row) + "\n")
    (leak,) = verify_pack(pack)
    assert (leak.code, leak.path) == ("gold.leak", "memory/writer/calls.jsonl:1") and "'lisbon; travel'" in leak.message


def test_a_repair_turns_own_reply_and_the_task_schema_are_not_writer_input(packs, tmp_path):
    pack = copy_pack(packs["mini_full"], tmp_path)
    row = writer_call(
        "mini-1",
        [
            {"role": "user", "content": "Summarize."},
            {"role": "assistant", "content": 'Maybe "Lisbon; travel"'},  # the model's first reply
            {"role": "user", "content": "That reply could not be used."},
        ],
        "{}",
        response_format={"type": "json_object", "schema": {"description": "Lisbon; travel"}},
    )
    plant(pack / "memory/writer/calls.jsonl", json.dumps(row) + "\n")
    assert verify_pack(pack) == []
    row["request"]["messages"][2]["content"] = 'Hint: "Lisbon; travel"'  # the harness's own turn is input
    plant(pack / "memory/writer/calls.jsonl", json.dumps(row) + "\n")
    assert [(f.code, f.path) for f in verify_pack(pack)] == [("gold.leak", "memory/writer/calls.jsonl:1")]


def test_gold_the_writer_wrote_itself_is_not_a_leak_where_its_memory_carries_it(packs, tmp_path):
    pack = copy_pack(packs["mini_full"], tmp_path)
    plant(pack / "memory/graph/mini-1.json", json.dumps({"edges": [{"when": "Lisbon; travel"}]}))

    def leaks() -> list[str]:
        return [f.path for f in verify_pack(pack) if f.code == "gold.leak"]

    assert leaks() == ["memory/graph/mini-1.json"]  # in memory, from nowhere: a leak
    # ... unless the writer wrote it, from clean input
    call = writer_call("mini-1", [{"role": "user", "content": "Extract."}], '{"when": "Lisbon; travel"}')
    plant(pack / "memory/writer/calls.jsonl", json.dumps(call) + "\n")
    assert leaks() == []
    call["sample_id"] = "mini-2"  # another conversation's writer output explains nothing here
    plant(pack / "memory/writer/calls.jsonl", json.dumps(call) + "\n")
    assert leaks() == ["memory/graph/mini-1.json"]


def test_a_writer_input_may_carry_an_earlier_reply_but_not_a_gold_seen_first_in_an_input(packs, tmp_path):
    pack = copy_pack(packs["mini_full"], tmp_path)

    def call(prompt: str, reply: str) -> str:
        return json.dumps(writer_call("mini-1", [{"role": "user", "content": prompt}], reply)) + "\n"

    extract = call("Extract facts.", '{"facts": ["Lisbon; travel"]}')  # the model wrote it, from clean input
    update = call('New fact: "Lisbon; travel". Stored: none.', '{"event": "ADD"}')  # mem0's update carries it
    plant(pack / "memory/writer/calls.jsonl", extract + update)
    assert verify_pack(pack) == []
    plant(pack / "memory/writer/calls.jsonl", update + extract)  # in an input before any reply wrote it
    assert [(f.code, f.path) for f in verify_pack(pack)] == [("gold.leak", "memory/writer/calls.jsonl:1")]


def test_a_local_servers_log_is_not_scanned_for_gold(packs, tmp_path):
    pack = copy_pack(packs["mini_full"], tmp_path)
    plant(pack / "memory/writer/llama_server_writer.log", "eval time = 20212.26 ms; Lisbon; travel\n")
    assert verify_pack(pack) == []


def test_agent_workspace_files_are_scanned(packs, tmp_path):
    pack = copy_pack(packs["mini_full"], tmp_path)
    # the question's own text in its task file is not a leak; another gold of that conversation is
    plant(pack / "agent/workspaces/mini-2/questions/mini-2-q-3.md", "What might Cleo enjoy?\n")
    assert verify_pack(pack) == []
    plant(pack / "agent/workspaces/mini-2/notes.md", "# notes\nCleo: Oslo; travel\n")
    (leak,) = verify_pack(pack)
    assert (leak.code, leak.path) == ("gold.leak", "agent/workspaces/mini-2/notes.md:2")


def test_released_summaries_are_source_text_only_for_session_summaries(tmp_path, scripted_server):
    # a gold phrase that only a released summary holds is memory under memory=session_summaries...
    data = json.loads(MINI.read_text())
    data[0]["session_summary"]["session_2_summary"] = "Ana moved; she likes Lisbon; travel."
    path = tmp_path / "summaries.json"
    path.write_text(json.dumps(data))
    pack = _make_pack(tmp_path, scripted_server, "summaries", f"dataset.path={path}", "memory=session_summaries")
    assert verify_pack(pack) == []
    # ...and a leak when the memory is the transcript, which does not hold it
    full = _make_pack(tmp_path, scripted_server, "full", f"dataset.path={path}")
    edit(full / "memory/dumps/mini-1.txt", lambda b: b + b"\nAna moved; she likes Lisbon; travel.")
    assert "gold.leak" in codes(verify_pack(full))


def test_given_secret_values_are_found_and_not_echoed(packs, tmp_path):
    pack = copy_pack(packs["mini_full"], tmp_path)
    value = "hunter2-plain-credential"
    edit(pack / "TRACE.md", lambda b: b + f"\ncredential: {value}\n".encode())
    assert verify_pack(pack) == []
    (finding,) = verify_pack(pack, secrets=[value, "short"])
    assert finding.code == "secret" and finding.path.startswith("TRACE.md:")
    assert value not in finding.message


def test_credential_values_come_from_key_and_token_variables():
    env = {
        "OPENAI_API_KEY": "sk-aaaaaaaaaaaa",
        "HF_TOKEN": "hf_bbbbbbbbbbbb",
        "MY_SECRET": "cccccccccccc",
        "HOME": "/root/longer-than-eight",
        "GITHUB_TOKEN": "x",
    }
    assert credential_values(env) == ["cccccccccccc", "hf_bbbbbbbbbbbb", "sk-aaaaaaaaaaaa"]


def test_autorater_files_are_judged_by_their_own_marker(packs, tmp_path):
    pack = copy_pack(packs["mini_full"], tmp_path)
    (pack / "autorater").mkdir()
    verdict = {
        "schema": "autorater_verdict.v1",
        "question_id": "mini-1-q-0",
        "sample_id": "mini-1",
        "index": 0,
        "category": 1,
        "pass": 1,
        "status": "SKIPPED",
        "judge_prompt_sha256": "0" * 64,
    }
    (pack / "autorater/autorater_verdicts.jsonl").write_text(json.dumps(verdict) + "\n")
    assert verify_pack(pack) == []  # added after _SUCCESS, with a schema: fine
    (pack / "autorater/_SUCCESS").write_text("")  # the autorater's marker before it hashed its files: not checked
    assert verify_pack(pack) == []
    (pack / "autorater/_SUCCESS").unlink()
    write_success(pack, under="autorater")
    assert verify_pack(pack) == []
    (pack / "autorater/autorater_verdicts.jsonl").write_text(json.dumps({**verdict, "judge_prompt_sha256": "1" * 64}) + "\n")
    assert codes(verify_pack(pack)) == {"success.hash_mismatch"}


def test_pinned_data_missing_is_reported_not_raised(packs, tmp_path):
    pack = copy_pack(packs["real_full"], tmp_path)
    findings = verify_pack(pack, pins_dir=tmp_path / "no-pins")
    assert codes(findings) == {"data.missing"}
    assert "--pins" in findings[0].message


def test_not_a_pack_is_a_user_error(tmp_path):
    with pytest.raises(UserError, match="does not exist"):
        verify_pack(tmp_path / "nothing")
    (tmp_path / "file.txt").write_text("x")
    with pytest.raises(UserError, match="is a file"):
        verify_pack(tmp_path / "file.txt")
    (tmp_path / "empty").mkdir()
    with pytest.raises(UserError, match="is not a pack"):
        verify_pack(tmp_path / "empty")


def test_a_design_folder_with_one_pack_is_that_pack(packs, capsys):
    """An experiment folder that holds one pack stands for it (issue 30, item 8)."""
    design = packs["mini_full"].parent.parent
    assert verify_main([str(design)]) == 0
    assert capsys.readouterr().out.splitlines() == [f"ok {packs['mini_full'].resolve()}"]


# -- command line ---------------------------------------------------------------------------------


def test_verify_main_exit_codes_and_lines(packs, tmp_path, capsys):
    good = packs["mini_full"]
    assert verify_main([str(good), str(packs["mini_summaries"])]) == 0
    assert capsys.readouterr().out.splitlines() == [f"ok {good}", f"ok {packs['mini_summaries']}"]
    bad = copy_pack(good, tmp_path)
    (bad / "_SUCCESS").unlink()
    assert verify_main([str(good), str(bad)]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines == [f"ok {good}", f"success.missing {bad}/_SUCCESS: " + verify_pack(bad)[0].message]


def test_verify_main_json(packs, tmp_path, capsys):
    bad = copy_pack(packs["mini_full"], tmp_path)
    TAMPERS["duplicated prediction row"][0](bad)
    assert verify_main(["--json", str(bad)]) == 1
    out = json.loads(capsys.readouterr().out)
    assert {"pack", "code", "path", "message"} == set(out[0])
    assert out[0]["pack"] == str(bad) and "duplicate.row" in {f["code"] for f in out}
    assert verify_main([str(packs["mini_full"]), "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == []


def test_verify_main_usage_errors_are_one_line(tmp_path):
    with pytest.raises(UserError, match="the following arguments are required: PACK"):
        verify_main([])
    with pytest.raises(UserError, match="unrecognized arguments: --frobnicate"):
        verify_main([str(tmp_path), "--frobnicate"])


def test_any_file_cut_in_half_is_reported_never_raised(packs, tmp_path):
    base = packs["mini_full"]
    files = sorted(p.relative_to(base).as_posix() for p in base.rglob("*") if p.is_file())
    assert len(files) >= 14
    for i, rel in enumerate(files):
        pack = copy_pack(base, tmp_path / str(i))
        edit(pack / rel, lambda b: b[: len(b) // 2])
        findings = verify_pack(pack)  # never an exception, whatever the file
        # every file verify recomputes something from (others, like TRACE.md, are free text)
        checked = rel.endswith((".json", ".jsonl", ".txt", ".csv", ".yaml")) and (
            not rel.startswith("memory/")
            or rel.startswith("memory/dumps/")
            or rel in ("memory/manifest.jsonl", "memory/lineage.jsonl")
        )
        if checked:
            assert findings, rel


def test_a_resumed_pack_verifies(tmp_path, scripted_server):
    pack = _make_pack(tmp_path, scripted_server, "resumed", f"dataset.path={MINI}")
    # as if killed after the fourth answer: later rows and the end-of-run files never written
    for rel in ("_SUCCESS", "REFERENCE_PIN.json", "metrics.json", "predictions.csv", "TRACE.md"):
        (pack / rel).unlink()
    for rel in ("predictions.jsonl", TRACES):
        lines = (pack / rel).read_bytes().splitlines(keepends=True)
        (pack / rel).write_bytes(b"".join(lines[:4]) + lines[4][:30])  # and a torn fifth line
    assert {"success.missing", "json", "file.missing"} <= codes(verify_pack(pack))
    assert _make_pack(tmp_path, scripted_server, "resumed", f"dataset.path={MINI}") == pack
    assert json.loads((pack / "run_meta.json").read_text())["resumed"] == 1
    assert verify_pack(pack) == []


# -- JSON keys and numbers are not text; launcher provenance is a record -------------------------


def test_gold_scan_reads_json_string_values_not_keys_or_numbers(tmp_path, scripted_server):
    # a short gold ("sage") sits inside the key "messages" of every writer call, a numeric gold
    # (2031, no year next to a session's: verify counts those as the conversation's) in any count:
    # neither is text a model read, so neither is a leak
    data = json.loads(MINI.read_text())
    data[0]["qa"][0]["answer"] = "sage"
    data[1]["qa"][0]["answer"] = 2031
    path = tmp_path / "short_gold.json"
    path.write_text(json.dumps(data))
    pack = _make_pack(tmp_path, scripted_server, "short_gold", f"dataset.path={path}")
    assert verify_pack(pack) == []
    call = writer_call("mini-1", [{"role": "user", "content": "Summarize the session."}], "ok", max_tokens=2031)
    plant(pack / "memory/writer/calls.jsonl", json.dumps(call) + "\n")
    store = {
        "schema": "memory_store.v1",
        "sample_id": "mini-2",
        "method": "graph",
        "items": [{"messages": 2031, "nodes": ["Cleo"]}],
    }
    plant(pack / "memory/graph/mini-2.json", json.dumps(store))
    assert verify_pack(pack) == []
    # the same gold in a string value is still found, in a JSONL row and in a JSON file
    call["request"]["messages"][0]["content"] = "Summarize. Hint: sage"
    plant(pack / "memory/writer/calls.jsonl", json.dumps(call) + "\n")
    store["items"] = [{"nodes": ["Cleo", "born 2031"]}]
    plant(pack / "memory/graph/mini-2.json", json.dumps(store))
    leaks = sorted((f.path, f.message) for f in verify_pack(pack) if f.code == "gold.leak")
    assert [p for p, _ in leaks] == ["memory/graph/mini-2.json", "memory/writer/calls.jsonl:1"], leaks
    assert "'2031'" in leaks[0][1] and "'sage'" in leaks[1][1]


@pytest.fixture(scope="module")
def cloud_pack(tmp_path_factory) -> Path:
    """A pack as a Cloud Run task publishes it (the local twin): with provenance/cloudrun.json."""
    root = tmp_path_factory.mktemp("cloud_pack")
    with ScriptedOpenAIServer() as server:
        args = [
            "qa",
            "-m",
            *scripted_reader(server.base_url),
            f"dataset.path={MINI}",
            f"paths.packs={root / 'packs'}",
            f"paths.cache={root / 'cache'}",
            f"hydra.sweep.dir={root / 'multirun'}",
            "hydra/launcher=cloudrun_local",
        ]
        assert main(args) == 0
    (pack,) = (root / "packs" / "default" / "runs").iterdir()
    assert (pack / "provenance/cloudrun.json").is_file()
    return pack


def test_a_pack_a_cloud_run_task_published_verifies(cloud_pack):
    assert verify_pack(cloud_pack) == []


@pytest.mark.parametrize(
    ("field", "value", "code"),
    [
        ("run_id", "full_context-reader-scripted-000000000000", "hash.config"),
        ("config_sha256", "0" * 64, "hash.config"),
        ("resolved_sha256", "0" * 64, "hash.config"),
        ("task_index", "first", "schema"),
        ("schema", "cloudrun_provenance.v0", "schema"),
    ],
)
def test_a_provenance_record_of_another_run_is_a_finding(cloud_pack, tmp_path, field, value, code):
    pack = copy_pack(cloud_pack, tmp_path)
    edit_json(pack / "provenance/cloudrun.json", _set(field, value))
    findings = verify_pack(pack)
    assert codes(findings) == {code}, findings
    assert findings[0].path == "provenance/cloudrun.json"


def test_other_files_under_provenance_are_not_records(cloud_pack, tmp_path):
    pack = copy_pack(cloud_pack, tmp_path)
    plant(pack / "provenance/slurm.json", json.dumps({"schema": "slurm_provenance.v1"}))
    assert [(f.code, f.path) for f in verify_pack(pack)] == [("schema", "provenance/slurm.json")]


def test_a_rescored_pack_verifies_and_a_changed_score_is_still_found(packs, tmp_path):
    from memorybench.stages.rescore import rescore

    pack = copy_pack(packs["mini_full"], tmp_path)
    for path in pack.rglob("*"):  # finished long ago; rescore runs any time after
        os.utime(path, ns=(0, 2 * 10**9 if path.name == "_SUCCESS" else 10**9))
    rescore(pack)
    assert (pack / "metrics.json").stat().st_mtime_ns == 10**9  # the same scores: the file is left as it was
    assert verify_pack(pack) == []
    for name in ("metrics.json", "predictions.csv"):  # rewritten after _SUCCESS with the same content
        os.utime(pack / name, ns=(0, 3 * 10**9))
    assert verify_pack(pack) == []  # judged by content, not by date
    edit_json(pack / "metrics.json", lambda m: m["scores"]["locomo_f1"]["overall"].update(value=0.99))
    assert codes(verify_pack(pack)) == {"metrics"}


# -- every row of every record file, against the schema registry ---------------------------------


def test_every_row_of_an_other_journal_is_validated_one_finding_per_file(packs, tmp_path):
    pack = copy_pack(packs["mini_full"], tmp_path)
    good = writer_call("mini-1", [{"role": "user", "content": "Summarize."}], "ok")
    bad = {k: v for k, v in good.items() if k != "template_sha256"}
    plant(pack / "memory/writer/calls.jsonl", "".join(json.dumps(r) + "\n" for r in (good, bad, good, bad)))
    (finding,) = verify_pack(pack)
    assert (finding.code, finding.path) == ("schema", "memory/writer/calls.jsonl:2")
    assert "writer_call.v1: template_sha256: Field required" in finding.message and "2 of 4 rows" in finding.message


def test_a_schema_no_record_declares_is_a_finding_unless_allowed(packs, tmp_path, monkeypatch):
    from memorybench.pack.verify import rows

    pack = copy_pack(packs["mini_full"], tmp_path)
    plant(pack / "memory/future/items.jsonl", '{"schema": "writer_cal.v1", "sample_id": "mini-1"}\n')
    (finding,) = verify_pack(pack)
    assert (finding.code, finding.path) == ("schema", "memory/future/items.jsonl:1")
    assert "'writer_cal.v1' is not declared" in finding.message and "did you mean 'writer_call.v1'" in finding.message
    monkeypatch.setattr(rows, "UNDECLARED_SCHEMAS", rows.UNDECLARED_SCHEMAS | {"writer_cal.v1"})
    assert verify_pack(pack) == []


def test_a_json_file_with_a_schema_is_validated_and_one_without_is_left_alone(packs, tmp_path):
    pack = copy_pack(packs["mini_full"], tmp_path)
    edit_json(pack / "metrics.json", lambda d: d.pop("labels"))  # metrics.json has no record check of its own
    assert {(f.code, f.path) for f in verify_pack(pack)} == {("schema", "metrics.json"), ("metrics", "metrics.json")}
    pack = copy_pack(packs["mini_full"], tmp_path / "other")
    plant(pack / "agent/summary.json", json.dumps({"schema": "agent_notes.v1", "notes": 3}))
    assert [(f.code, f.path) for f in verify_pack(pack)] == [("schema", "agent/summary.json")]


def test_rows_are_framed_by_newline_only(packs, tmp_path):
    # a journal writes U+2028 raw inside a JSON string; str.splitlines() would cut the row there
    pack = copy_pack(packs["mini_full"], tmp_path)
    row = writer_call("mini-1", [{"role": "user", "content": "one\u2028two\u0085three"}], "ok")
    plant(pack / "memory/writer/calls.jsonl", json.dumps(row, ensure_ascii=False) + "\n")
    assert "\u2028" in (pack / "memory/writer/calls.jsonl").read_text("utf-8")
    assert verify_pack(pack) == []


def test_gold_inside_a_binary_store_is_found_among_its_zero_pages(packs, tmp_path):
    """A wrapped library's database (mostly zero pages) is scanned by its runs of text: a gold
    stored as text in it is still a leak, named with the file."""
    pack = copy_pack(packs["mini_full"], tmp_path)
    store = pack / "memory" / "library_stores" / "somelib" / "mini-1" / "graph.db"
    store.parent.mkdir(parents=True)
    store.write_bytes(b"\x00" * 65536 + b"\x07\x01node:Lisbon; travel\x00\x02" + b"\x00" * 65536)
    leaks = [f for f in verify_pack(pack) if f.code == "gold.leak"]
    assert [f.path.split(":")[0] for f in leaks] == ["memory/library_stores/somelib/mini-1/graph.db"]
    assert "'lisbon; travel'" in leaks[0].message
