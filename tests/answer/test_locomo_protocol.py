"""LoCoMo's own question protocol (`reader.prompt=locomo`): its three prompt literals pinned
and fetched like Mem0's; each request body is, byte for byte, what LoCoMo's
task_eval/gpt_utils.py sends (built here from the pinned files and LoCoMo's own code);
category 5 is posed as the two-way choice with its `adversarial_answer`, the letter mapped
back as `get_cat_5_answer` maps it (a malformed reply too) and recorded per row; the mapped
answer is scored under LoCoMo's rules; verify knows the trap from the gold."""

from __future__ import annotations

import ast
import hashlib
import json
import random
import re
import shutil
from pathlib import Path

import pytest
import yaml
from conftest import FIXTURES, PINS, scripted_reader

from memorybench.answer.prompt import question_protocol
from memorybench.benchmarks.locomo.data import load_locomo
from memorybench.cli import main
from memorybench.data import pins
from memorybench.errors import UserError
from memorybench.pack.success import reclose
from memorybench.pack.verify import verify_pack
from memorybench.plan import plan_runs
from memorybench.benchmarks.locomo.score import locomo_score
from memorybench.benchmark import LOCOMO
from memorybench.benchmarks.locomo import pins as locomo_pins
from memorybench.benchmarks.locomo import reader as locomo_reader
from memorybench.benchmarks.locomo.reader import cat5_answer as locomo_cat5_answer
from memorybench.testing.scripted_server import Reply, ScriptedOpenAIServer, echo_responder

MINI = FIXTURES / "mini_locomo.json"
GPT_UTILS = PINS / "locomo" / "gpt_utils.py"
LITERALS = {
    "CONV_START_PROMPT": "prompts/locomo_conv_start_prompt.txt",
    "QA_PROMPT": "prompts/locomo_qa_prompt.txt",
    "QA_PROMPT_CAT_5": "prompts/locomo_qa_prompt_cat5.txt",
}
NOT_MENTIONED = "Not mentioned in the conversation"
#: a trap absent from mini-1's text (the fixture's own, "Biscuit", is a name in it)
TRAP = "Marmalade"


def pinned(relpath: str) -> str:
    return (PINS / relpath).read_bytes().decode("utf-8")


def rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]


def sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def locomo_function(name: str):
    """A function of LoCoMo's gpt_utils.py, taken out of the pinned file and run as it is."""
    tree = ast.parse(GPT_UTILS.read_text("utf-8"))
    (node,) = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name]
    scope: dict = {}
    exec(compile(ast.Module(body=[node], type_ignores=[]), str(GPT_UTILS), "exec"), scope)  # noqa: S102 (pinned file)
    return scope[name]


def locomo_query(
    conv_start: str, speakers: tuple[str, str], context: str, question: str, category: int, answer_key: dict | None
) -> str:
    """LoCoMo's `get_gpt_answers` with batch size 1, written out from the pinned file: the
    question with its category suffix or choice, then start prompt + context + '\\n\\n' + QA prompt."""
    if category == 2:
        question = question + " Use DATE of CONVERSATION to answer with an approximate date."
    elif category == 5:
        question = (question + " Select the correct answer: (a) {} (b) {}. ").format(answer_key["a"], answer_key["b"])
    start_prompt = conv_start.format(*speakers)
    qa = pinned(LITERALS["QA_PROMPT_CAT_5"] if category == 5 else LITERALS["QA_PROMPT"])
    return start_prompt + context + "\n\n" + qa.format(question)


# -- the pins ----------------------------------------------------------------------------------


def test_the_three_literals_are_pinned_with_the_hashes_of_pins_md():
    table = {}
    for line in (PINS / "PINS.md").read_text("utf-8").splitlines():
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line)]
        if len(cells) > 3 and cells[1].startswith("prompts/locomo_"):
            table[cells[1]] = cells[3]
    assert {p.relpath for p in locomo_pins.PROMPT_PINS} == set(LITERALS.values()) == set(table)
    for pin in locomo_pins.PROMPT_PINS:
        assert pin.sha256 == table[pin.relpath] and pin in LOCOMO.own_pins()  # fetched with every pin
        assert (pin.repository, pin.commit) == (locomo_pins.LOCOMO10.repository, locomo_pins.LOCOMO10.commit)
        assert pin.url.endswith(f"/{pin.commit}/task_eval/gpt_utils.py")
        assert pins.pin_path(pin) == (PINS / pin.relpath).resolve()


def test_fetch_takes_each_literal_out_of_locomos_gpt_utils(tmp_path, monkeypatch):
    fetched: list[str] = []

    def download(url: str) -> bytes:
        fetched.append(url)
        return GPT_UTILS.read_bytes()

    monkeypatch.setattr(pins, "_download", download)
    monkeypatch.setattr(pins, "ALL_PINS", ())
    log: list[str] = []
    root = pins.fetch_pins(tmp_path, log=log.append, extra=locomo_pins.PROMPT_PINS)
    assert log == [f"fetched  {p.relpath}" for p in locomo_pins.PROMPT_PINS] and len(fetched) == 1
    for pin in locomo_pins.PROMPT_PINS:
        assert (root / pin.relpath).read_bytes() == (PINS / pin.relpath).read_bytes()


def test_the_phrases_around_the_literals_are_locomos():
    from memorybench import templates

    source = GPT_UTILS.read_text("utf-8")
    for phrase in (locomo_reader.CAT2_SUFFIX, locomo_reader.CAT5_CHOICE, locomo_reader.NOT_MENTIONED):
        assert repr(phrase)[1:-1] in source or phrase in source, phrase
    assert "query_conv + '\\n\\n' + QA_PROMPT.format(questions[0])" in source
    assert not list(Path(templates.PROMPTS_DIR).rglob("locomo*"))  # the literals are never committed


# -- the category-5 choice ---------------------------------------------------------------------


REPLIES = [
    "a",
    "A",
    " b ",
    "(a)",
    "(B)",
    "c",
    "Yes",
    "(c)",
    "",
    "ab",
    "B.",
    "(a) Not mentioned in the conversation",
    "Marmalade",
    "  Not Mentioned  ",
]


@pytest.mark.parametrize("options", [{"a": NOT_MENTIONED, "b": TRAP}, {"a": TRAP, "b": NOT_MENTIONED}])
def test_a_reply_is_mapped_as_locomos_get_cat_5_answer_maps_it(options):
    get_cat_5_answer = locomo_function("get_cat_5_answer")
    for reply in REPLIES:
        read = locomo_cat5_answer(reply, options)
        assert read.answer == get_cat_5_answer(reply, options).strip(), reply
        assert read.malformed == (reply.strip().lower() not in {"a", "b", "(a)", "(b)"}), reply
        assert read.choice == (
            {"a": "a", "b": "b"}.get(reply.strip().lower().strip("()"))
            if not read.malformed
            else ("b" if len(reply.strip()) in (1, 3) else None)
        ), reply


def test_the_option_order_is_seeded_from_the_question_id(locomo_path):
    from memorybench.benchmarks.locomo.reader import options_of as locomo_options

    questions = [q for c in load_locomo(locomo_path) for q in c.questions if q.category == 5]
    assert len(questions) == 446 and sum(q.answer is None for q in questions) == 444  # the trap, not `answer`
    first = 0
    for q in questions:
        options = locomo_options(q.question_id, q.adversarial_answer)
        assert sorted(options.values()) == sorted([NOT_MENTIONED, q.adversarial_answer])
        # LoCoMo's `random.random() < 0.5` puts "Not mentioned" first; the draw is seeded by the id
        assert (options["a"] == NOT_MENTIONED) == (random.Random(q.question_id).random() < 0.5)
        assert locomo_options(q.question_id, q.adversarial_answer) == options
        first += options["a"] == NOT_MENTIONED
    assert 180 < first < 266  # both orders, as a fair draw gives


# -- a run against the scripted server ---------------------------------------------------------


def _responder(body: dict) -> Reply:
    """Category 5: mini-1 picks "Not mentioned" by its letter, in capitals and parentheses;
    mini-2 answers "c" (neither option: LoCoMo reads a one-character reply as (b)). Else the echo."""
    content = body["messages"][-1]["content"]
    choice = re.search(r"Select the correct answer: \(a\) (.*) \(b\) (.*)\. ", content)
    if choice is None:
        return echo_responder(body)
    if "Ana" in content:
        return Reply("(A)" if choice.group(1) == NOT_MENTIONED else "(B)")
    return Reply("c")


@pytest.fixture(scope="module")
def server():
    with ScriptedOpenAIServer(responder=_responder) as reader:
        yield reader


def _dataset(tmp: Path) -> Path:
    data = json.loads(MINI.read_text("utf-8"))
    data[0]["qa"][4]["adversarial_answer"] = TRAP
    path = tmp / "trap.json"
    path.write_text(json.dumps(data), "utf-8")
    return path


def qa(tmp: Path, server, *extra: str) -> Path:
    server.requests.clear()
    code = main(
        [
            "qa",
            *scripted_reader(server.base_url),
            f"dataset.path={_dataset(tmp)}",
            f"paths.packs={tmp / 'packs'}",
            f"paths.cache={tmp / 'cache'}",
            "name=locomo",
            "memory=full_context",
            *extra,
        ]
    )
    assert code == 0
    (pack,) = (tmp / "packs" / "locomo" / "runs").iterdir()
    return pack


@pytest.fixture(scope="module")
def locomo_pack(tmp_path_factory, server) -> tuple[Path, list[dict]]:
    tmp = tmp_path_factory.mktemp("locomo")
    pack = qa(tmp, server, "reader.prompt=locomo")
    return pack, [dict(body) for body in server.requests]


def test_locomo_sends_locomos_exact_bytes(locomo_pack, tmp_path):
    pack, bodies = locomo_pack
    conversations = {c.sample_id: c for c in load_locomo(_dataset(tmp_path))}
    dumps = {p.stem: p.read_text("utf-8") for p in (pack / "memory/dumps").iterdir()}
    predictions = {r["question_id"]: r for r in rows(pack / "predictions.jsonl")}
    traces = rows(pack / "reader/traces.jsonl")
    assert len(traces) == len(bodies) == 10
    conv_start = pinned(LITERALS["CONV_START_PROMPT"])
    for trace, body in zip(traces, bodies):
        c = conversations[trace["sample_id"]]
        (q,) = [q for q in c.questions if q.question_id == trace["question_id"]]
        row = predictions[q.question_id]
        expected = locomo_query(
            conv_start, (c.speaker_a, c.speaker_b), dumps[c.sample_id], q.question, q.category, row.get("options")
        )
        assert body["messages"] == [{"role": "user", "content": expected}]  # the only message, as LoCoMo sends a gpt-4 prompt
        assert trace["reader_payload_sha256"] == sha(expected) == row["reader_payload_sha256"]
        assert (
            trace["request"]["renderer"] == "locomo"
            and "system" not in trace["request"]
            and "payload_role" not in trace["request"]
        )
        if q.category == 2:
            assert expected.endswith(
                f"Question: {q.question} Use DATE of CONVERSATION to answer with an approximate date. Short answer:\n"
            )
        if q.category == 5:
            assert expected.endswith(
                f"Select the correct answer: (a) {row['options']['a']} (b) {row['options']['b']}.  Short answer:\n"
            )
            assert expected.startswith(conv_start.format(c.speaker_a, c.speaker_b))
            assert "Answer with exact words" not in expected  # QA_PROMPT_CAT_5, not QA_PROMPT
    meta = json.loads((pack / "run_meta.json").read_text("utf-8"))
    bundle = (pack / "prompts/locomo").read_text("utf-8")
    assert json.loads(bundle) == {key: pinned(relpath) for key, relpath in LITERALS.items()}
    assert meta["prompts"] == {"locomo": sha(bundle)}
    assert verify_pack(pack) == []  # the trap in its own choice is no leak


def test_category_5_is_a_choice_with_the_letter_mapped_back_and_recorded(locomo_pack):
    pack, _ = locomo_pack
    predictions = rows(pack / "predictions.jsonl")
    five = {r["sample_id"]: r for r in predictions if r["category"] == 5}
    picked, malformed = five["mini-1"], five["mini-2"]
    # mini-1 replied "(A)" or "(B)": the letter of "Not mentioned", mapped back to its text
    assert picked["options"] == {"a": NOT_MENTIONED, "b": TRAP} or picked["options"] == {"a": TRAP, "b": NOT_MENTIONED}
    assert picked["reply"] in ("(A)", "(B)") and picked["prediction"] == NOT_MENTIONED
    assert picked["options"][picked["choice"]] == NOT_MENTIONED and picked["malformed_reply"] is False
    assert picked["adversarial_answer"] == TRAP and picked["gold"] is None
    # mini-2 replied "c": LoCoMo's get_cat_5_answer reads any one-character reply but "a" as (b)
    assert malformed["reply"] == "c" and malformed["choice"] == "b" and malformed["malformed_reply"] is True
    assert malformed["prediction"] == malformed["options"]["b"]
    # rows of categories 1-4 keep the fields they always had, in the same order
    for row in predictions:
        if row["category"] != 5:
            assert list(row) == [
                "schema",
                "question_id",
                "sample_id",
                "index",
                "category",
                "question",
                "prediction",
                "gold",
                "adversarial_answer",
                "reader_payload_sha256",
                "memory_sha256",
                "answerer",
            ]


def test_the_mapped_answer_is_scored_under_locomos_rules(locomo_pack):
    pack, _ = locomo_pack
    predictions = {r["question_id"]: r for r in rows(pack / "predictions.jsonl")}
    scored = {r["question_id"]: r for r in _csv(pack / "predictions.csv")}
    for qid, row in predictions.items():
        assert float(scored[qid]["locomo_f1"]) == locomo_score(row["prediction"], row["gold"], row["category"])
    five = {r["sample_id"]: r for r in predictions.values() if r["category"] == 5}
    assert float(scored[five["mini-1"]["question_id"]]["locomo_f1"]) == 1.0  # "Not mentioned in the conversation"
    expected = 1.0 if five["mini-2"]["prediction"] == NOT_MENTIONED else 0.0  # (b) of its seeded order
    assert float(scored[five["mini-2"]["question_id"]]["locomo_f1"]) == expected


def _csv(path: Path) -> list[dict]:
    import csv

    return list(csv.DictReader(path.open(encoding="utf-8")))


def test_the_question_protocol_is_named_from_the_config(locomo_pack):
    pack, _ = locomo_pack
    config = yaml.safe_load((pack / "config.resolved.yaml").read_text("utf-8"))
    assert config["reader"]["prompt"] == "locomo" and question_protocol(config) == "locomo"
    golden = yaml.safe_load(
        (Path(__file__).resolve().parents[1] / "pack/golden_mini_pack/config.resolved.yaml").read_text("utf-8")
    )
    assert question_protocol(golden) == "open-ended"
    (spec,) = plan_runs(SCRIPTED + ["reader.prompt=locomo"])
    assert question_protocol(spec.cfg) == "locomo"
    (default,) = plan_runs(SCRIPTED)
    assert question_protocol(default.cfg) == "open-ended" and default.run_id != spec.run_id
    assert question_protocol({"answerer": {"name": "imported", "format": "mem0_evals"}}) == "imported"


SCRIPTED = ["reader=openai_compatible", "reader.base_url=http://127.0.0.1:9/v1", "reader.model=r", "embedder=hashing"]


def test_locomo_needs_the_one_call_reader():
    with pytest.raises(UserError) as info:
        plan_runs([*SCRIPTED, "answerer=codex", "reader.prompt=locomo"])
    assert "reader.prompt=locomo is LoCoMo's own question protocol for answerer=reader" in str(info.value)
    assert "\n" not in str(info.value)


# -- verify: the trap is not the gold ----------------------------------------------------------


def _copy(pack: Path, tmp: Path) -> Path:
    target = tmp / "packs" / pack.parent.parent.name / "runs" / pack.name
    shutil.copytree(pack, target)
    return target


def _edit_row(pack: Path, relpath: str, question_id: str, change) -> None:
    path = pack / relpath
    lines = path.read_text("utf-8").splitlines(keepends=True)
    for i, line in enumerate(lines):
        row = json.loads(line)
        if row["question_id"] == question_id:
            change(row)
            lines[i] = json.dumps(row, ensure_ascii=False) + "\n"
    path.write_text("".join(lines), "utf-8")
    reclose(pack, [relpath])


def _findings(pack: Path) -> list[tuple[str, str]]:
    return [(f.code, f.message) for f in verify_pack(pack)]


def test_verify_finds_the_gold_posed_as_an_option(locomo_pack, tmp_path):
    pack = _copy(locomo_pack[0], tmp_path)
    # "Lisbon; travel", the gold of mini-1-q-3, posed instead of the trap of mini-1-q-4
    _edit_row(
        pack,
        "reader/traces.jsonl",
        "mini-1-q-4",
        lambda r: r["request"]["slots"][
            next(k for k in ("option_a", "option_b") if r["request"]["slots"][k]["text"] == TRAP)
        ].update(text="Lisbon; travel"),
    )
    found = _findings(pack)
    assert any(c == "gold.leak" and "'lisbon; travel'" in m and "mini-1-q-4" in m for c, m in found), found
    assert any(c == "row.mismatch" and "options of mini-1-q-4" in m for c, m in found), found


def test_verify_finds_a_trap_outside_its_own_choice(locomo_pack, tmp_path):
    pack = _copy(locomo_pack[0], tmp_path)
    _edit_row(
        pack,
        "reader/traces.jsonl",
        "mini-1-q-0",
        lambda r: r["request"]["slots"]["question"].update(text=r["request"]["slots"]["question"]["text"] + f" {TRAP}"),
    )
    found = _findings(pack)
    assert any(c == "gold.leak" and f"'{TRAP.lower()}'" in m and "mini-1-q-0" in m for c, m in found), found


def test_a_trap_in_a_qa_v1_prompt_is_still_a_leak(server, tmp_path):
    pack = qa(tmp_path, server)  # reader.prompt=readers/qa_v1.txt: no trap reaches a prompt
    assert "options" not in json.dumps(rows(pack / "predictions.jsonl")) and verify_pack(pack) == []
    _edit_row(
        pack,
        "reader/traces.jsonl",
        "mini-1-q-4",
        lambda r: r["request"]["slots"]["question"].update(text=r["request"]["slots"]["question"]["text"] + f" {TRAP}"),
    )
    found = _findings(pack)
    assert any(c == "gold.leak" and f"'{TRAP.lower()}'" in m for c, m in found), found


def test_verify_finds_a_prediction_that_is_not_the_mapped_reply(locomo_pack, tmp_path):
    pack = _copy(locomo_pack[0], tmp_path)
    _edit_row(pack, "predictions.jsonl", "mini-2-q-4", lambda r: r.update(prediction=NOT_MENTIONED, choice=None))
    found = _findings(pack)
    assert any(c == "row.mismatch" and "get_cat_5_answer" in m and "mini-2-q-4" in m for c, m in found), found


def test_a_category_5_row_with_no_adversarial_answer_is_a_one_line_error(server, tmp_path, capsys):
    data = json.loads(MINI.read_text("utf-8"))
    del data[0]["qa"][4]["adversarial_answer"]
    path = tmp_path / "no_trap.json"
    path.write_text(json.dumps(data), "utf-8")
    with pytest.raises(SystemExit) as exit_:
        main(
            [
                "qa",
                *scripted_reader(server.base_url),
                f"dataset.path={path}",
                f"paths.packs={tmp_path / 'packs'}",
                f"paths.cache={tmp_path / 'cache'}",
                "name=locomo",
                "memory=full_context",
                "reader.prompt=locomo",
            ]
        )
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and "mini-1-q-4 is category 5 with no adversarial_answer" in err and "Traceback" not in err


def test_only_an_answerer_that_poses_the_choice_is_given_the_trap():
    from memorybench.answer.base import AskedChoice
    from memorybench.data.records import AskedQuestion

    assert not hasattr(AskedQuestion("q", "s", 5, "?"), "adversarial_answer")  # the plain question: no trap, no gold
    assert set(AskedChoice.__slots__) == {"adversarial_answer"} and issubclass(AskedChoice, AskedQuestion)
