"""BEAM's pins and its loader (issue 42, item 1): the 128K tier read from the pinned files into
conversations of dated batches and 400 questions, the gold-like fields kept scorer-side, and
every malformed input refused in one line naming the file and the key."""

from __future__ import annotations

import json
import shutil
from collections import Counter

import pytest
from conftest import PINS

from memorybench.benchmark import benchmark_of, datasets
from memorybench.benchmarks.beam import BENCHMARK
from memorybench.benchmarks.beam.data import ABILITIES, REFERENCE_KEY, SUBTYPE_KEY, beam_questions, load_beam, read_tier
from memorybench.benchmarks.beam.pins import CHATS_128K, CODE_PINS, PINS as BEAM_PINS, QUESTIONS_128K, TIER_128K
from memorybench.data.pins import pin_path
from memorybench.errors import DataError
from memorybench.hashing import sha256_text

ROOT = PINS / "beam"
TIER = ROOT / "chats" / "100K"


def sums() -> dict[str, str]:
    """../shared/pins/beam/SHA256SUMS: path (without ./) -> sha256."""
    out = {}
    for line in (ROOT / "SHA256SUMS").read_text().splitlines():
        sha, path = line.split()
        out[path.removeprefix("./")] = sha
    return out


@pytest.fixture(scope="module")
def tier():
    return read_tier(TIER)


def raw(n: int) -> tuple[list, dict]:
    return (
        json.loads((TIER / str(n) / "chat.json").read_text("utf-8")),
        json.loads((TIER / str(n) / "probing_questions" / "probing_questions.json").read_text("utf-8")),
    )


def test_every_pin_is_the_file_shasum_lists_and_verifies():
    listed = sums()
    assert len(CHATS_128K) == len(QUESTIONS_128K) == 20 and BEAM_PINS == CODE_PINS
    for pin in (*TIER_128K.members, *BEAM_PINS):
        assert pin.sha256 == listed[pin.source_path], pin.source_path
        assert pin.relpath == f"beam/{pin.source_path}"
        assert pin.repository == "mohammadtavakoli78/BEAM" and pin.commit == "b2a3ee8ba12d68f83143dda191097dc3e028ddd3"
        assert pin_path(pin).resolve() == (PINS / pin.relpath).resolve()  # the pins folder may be reached by a link
    assert {p.source_path for p in CODE_PINS} >= {
        "src/prompts.py",
        "src/evaluation/compute_metrics.py",
        "src/evaluation/report_results.py",
        "src/answer_probing_questions/answer_generation.py",
    }


def test_the_tier_is_one_dataset_record_whose_sha256_covers_its_forty_files():
    assert benchmark_of("beam_128k") is BENCHMARK and datasets()["beam_128k"].pinned() is TIER_128K
    assert TIER_128K.verify().resolve() == TIER.resolve() and TIER_128K.tier == "100K"
    # sha256sum's own lines for the tier, run inside chats/100K, sorted by path
    lines = sorted((path.removeprefix("chats/100K/"), sha) for path, sha in sums().items() if path.startswith("chats/100K/"))
    assert len(lines) == 40
    assert TIER_128K.manifest() == "".join(f"{sha}  {path}\n" for path, sha in lines)
    provenance = datasets()["beam_128k"].provenance()
    assert provenance["sha256"] == sha256_text(TIER_128K.manifest()) and provenance["source_path"] == "chats/100K"
    assert set(BENCHMARK.own_pins()) == set(BEAM_PINS)
    # `memorybench fetch` downloads the tier's files with the other pins: the dataset's, not the benchmark's own
    assert datasets()["beam_128k"].fetched_with_pins and datasets()["beam_128k"].folder


def test_the_pinned_tier_has_the_counts_pins_md_states(tier):
    assert [c.sample_id for c in tier.conversations] == [f"beam-100K-{n}" for n in range(1, 21)]
    questions = [q for c in tier.conversations for q in c.questions]
    assert len(questions) == 400 and tier.turn_count == 5732 and len(tier.questions) == 400
    assert sum(len(c.sessions) for c in tier.conversations) == 90
    assert Counter(q.category for q in questions) == {n: 40 for n in range(1, 11)}
    for c in tier.conversations:  # two per ability, ids counting through the file
        assert Counter(q.category for q in c.questions) == {n: 2 for n in range(1, 11)}
        assert [q.question_id for q in c.questions] == [f"{c.sample_id}-q-{i}" for i in range(20)]
    assert BENCHMARK.category_names == dict(enumerate(ABILITIES, 1))
    assert load_beam(TIER) == list(tier.conversations)


def test_a_batch_is_a_session_dated_by_its_time_anchor_and_its_turns_keep_their_ids(tier):
    for n, conversation in enumerate(tier.conversations, 1):
        batches, _ = raw(n)
        assert len(conversation.sessions) == len(batches)
        for session, batch in zip(conversation.sessions, batches):
            flat = [t for chat in batch["turns"] for t in chat]
            assert batch["time_anchor"] is None  # the 128K tier dates a batch on its first turn
            assert session.date_time == flat[0]["time_anchor"] and session.session_id == f"batch-{batch['batch_number']}"
            assert [(t.speaker, t.dia_id, t.text) for t in session.turns] == [
                (t["role"], str(t["id"]), t["content"]) for t in flat
            ]
    assert tier.conversations[0].sessions[0].date_time == "March-15-2024"


def test_the_gold_like_fields_stay_scorer_side(tier):
    for n, conversation in enumerate(tier.conversations, 1):
        _, questions = raw(n)
        items = [(ability, i, item) for ability, rows in questions.items() for i, item in enumerate(rows)]
        for question, (ability, index, item) in zip(conversation.questions, items):
            record = tier.questions[question.question_id]
            assert (record.ability, record.index, question.category) == (ability, index, ABILITIES.index(ability) + 1)
            assert record.ideal_response == item[REFERENCE_KEY[ability]] == question.answer
            assert record.rubric == tuple(item["rubric"]) and record.difficulty == item["difficulty"]
            assert record.subtype == item[SUBTYPE_KEY[ability]] == question.question_type
            assert set(record.details) == set(item) - {
                "question",
                REFERENCE_KEY[ability],
                "difficulty",
                "rubric",
                SUBTYPE_KEY[ability],
                "source_chat_ids",
            }
            assert question.evidence == tuple(str(i) for i in record.source_chat_ids)
            # what a model is given: the question, nothing of its reference or rubric
            asked = question.asked()
            assert asked.question == item["question"] and not hasattr(asked, "answer")
            assert set(record.rubric) <= set(record.gold_strings()) and record.ideal_response in record.gold_strings()
            assert not any(g in asked.question for g in (record.ideal_response, *record.rubric))
            assert not any(g in asked.question for g in record.gold_strings())
    difficulties = Counter(q.difficulty for q in tier.questions.values())
    assert difficulties == {"medium": 193, "easy": 124, "hard": 42, "clear": 40, "": 1}
    assert beam_questions(TIER) == dict(tier.questions)


def test_a_local_copy_of_the_tier_folder_reads_the_same(tmp_path, tier):
    copy = tmp_path / "copy" / "100K"
    for n in (1, 2):
        shutil.copytree(TIER / str(n), copy / str(n))
    (copy / "notes").mkdir()  # a folder without a number is not a conversation
    local = read_tier(copy)
    assert local.conversations == tier.conversations[:2]
    assert all(local.questions[q] == tier.questions[q] for q in local.questions)


def test_the_10m_shape_a_list_of_plans_reads_batch_by_batch(tmp_path):
    batches, questions = raw(1)
    plans = [{"plan-1": batches[:2]}, {"plan-2": batches[2:]}]
    folder = tmp_path / "10M" / "1"
    (folder / "probing_questions").mkdir(parents=True)
    (folder / "chat.json").write_text(json.dumps(plans))
    (folder / "probing_questions" / "probing_questions.json").write_text(json.dumps(questions))
    (conversation,) = load_beam(tmp_path / "10M")
    assert conversation.sample_id == "beam-10M-1" and conversation.questions[0].question_id == "beam-10M-1-q-0"
    assert [s.session_id for s in conversation.sessions] == ["plan-1/batch-1", "plan-1/batch-2", "plan-2/batch-3"]
    assert [s.index for s in conversation.sessions] == [1, 2, 3] and conversation.turn_count == sum(
        len(chat) for b in batches for chat in b["turns"]
    )


def _mutate_chat(fn):
    def apply(folder):
        path = folder / "1" / "chat.json"
        data = json.loads(path.read_text())
        path.write_text(json.dumps(fn(data)) if callable(fn) else fn)

    return apply


def _mutate_questions(fn):
    def apply(folder):
        path = folder / "1" / "probing_questions" / "probing_questions.json"
        data = json.loads(path.read_text())
        path.write_text(json.dumps(fn(data)))

    return apply


def _set(container, key, value):
    container[key] = value
    return container


def _turn(data, **change):
    data[0]["turns"][0][1].update(change)
    return data


BAD = {
    "not JSON": (_mutate_chat("[{"), "chat.json", "not valid JSON"),
    "not a list": (_mutate_chat(lambda d: {"batches": d}), "chat.json", "non-empty JSON list of batches"),
    "a batch without turns": (_mutate_chat(lambda d: [{"batch_number": 1}] + d[1:]), "chat.json[0]", "'turns'"),
    "a batch number that is text": (
        _mutate_chat(lambda d: [_set(d[0], "batch_number", "1")] + d[1:]),
        "chat.json[0]",
        "'batch_number'",
    ),
    "a chat that is no list": (_mutate_chat(lambda d: [_set(d[0], "turns", [{"role": "user"}])] + d[1:]), "turns[0]", "'turns'"),
    "a turn id that is text": (_mutate_chat(lambda d: _turn(d, id="1")), "chat.json[0].turns[0][1]", "'id'"),
    "a repeated turn id": (_mutate_chat(lambda d: _turn(d, id=0)), "chat.json[0].turns[0][1]", "'id' 0 occurs twice"),
    "content that is no text": (_mutate_chat(lambda d: _turn(d, content=3)), "chat.json[0].turns[0][1]", "'content'"),
    "a role missing": (_mutate_chat(lambda d: (d[0]["turns"][0][1].pop("role"), d)[1]), "turns[0][1]", "'role'"),
    "a batch without a time anchor": (
        _mutate_chat(lambda d: (d[0]["turns"][0][0].pop("time_anchor"), d)[1]),
        "chat.json[0]",
        "'time_anchor'",
    ),
    "a batch with two anchors": (_mutate_chat(lambda d: _turn(d, time_anchor="May-01-2024")), "chat.json[0]", "'time_anchor'"),
    "questions not an object": (_mutate_questions(lambda d: list(d.values())), "probing_questions.json", "abilities"),
    "an unknown ability": (_mutate_questions(lambda d: _set(d, "humour", [])), "probing_questions.json", "'humour'"),
    "an ability that is no list": (
        _mutate_questions(lambda d: _set(d, "abstention", {})),
        "probing_questions.json",
        "'abstention'",
    ),
    "an empty rubric": (
        _mutate_questions(lambda d: (_set(d["abstention"][0], "rubric", []), d)[1]),
        "probing_questions.json.abstention[0]",
        "'rubric'",
    ),
    "a rubric item that is no text": (
        _mutate_questions(lambda d: (_set(d["event_ordering"][1], "rubric", ["a", 2]), d)[1]),
        "probing_questions.json.event_ordering[1]",
        "'rubric'",
    ),
    "the reference missing": (
        _mutate_questions(lambda d: (d["summarization"][0].pop("ideal_summary"), d)[1]),
        "probing_questions.json.summarization[0]",
        "'ideal_summary'",
    ),
    "a difficulty that is no text": (
        _mutate_questions(lambda d: (_set(d["abstention"][1], "difficulty", 2), d)[1]),
        "probing_questions.json.abstention[1]",
        "'difficulty'",
    ),
    "a source turn that is not there": (
        _mutate_questions(lambda d: (_set(d["information_extraction"][0], "source_chat_ids", [99999]), d)[1]),
        "probing_questions.json.information_extraction[0]",
        "'source_chat_ids'",
    ),
    "source ids that are text": (
        _mutate_questions(lambda d: (_set(d["information_extraction"][0], "source_chat_ids", ["28"]), d)[1]),
        "information_extraction[0].source_chat_ids",
        "turn ids",
    ),
    "the questions file missing": (
        lambda f: (f / "1" / "probing_questions" / "probing_questions.json").unlink(),
        "probing_questions.json",
        "does not exist",
    ),
    "the chat file missing": (lambda f: (f / "1" / "chat.json").unlink(), "chat.json", "does not exist"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_every_malformed_input_is_one_line_naming_the_file_and_the_key(tmp_path, case):
    folder = tmp_path / "100K"
    shutil.copytree(TIER / "1", folder / "1")
    mutate, where, what = BAD[case]
    mutate(folder)
    with pytest.raises(DataError) as raised:
        read_tier(folder)
    message = str(raised.value)
    assert "\n" not in message and where in message and what in message, message
    assert str(folder / "1") in message


def test_a_path_that_is_not_a_tier_folder_says_what_to_point_at(tmp_path):
    with pytest.raises(DataError, match="does not exist"):
        read_tier(tmp_path / "100K")
    (tmp_path / "file.json").write_text("[]")
    with pytest.raises(DataError, match="is a file; BEAM's dataset is a folder: point it at BEAM's tier folder"):
        read_tier(tmp_path / "file.json")
    shutil.copytree(TIER / "1", tmp_path / "mine" / "1")
    with pytest.raises(DataError, match=r"must keep its tier's name \(100K, 500K, 1M, 10M\)"):
        read_tier(tmp_path / "mine")
    (tmp_path / "500K").mkdir()
    with pytest.raises(DataError, match="no numbered conversation folders"):
        read_tier(tmp_path / "500K")


def test_what_a_comparison_covers_names_its_abilities_in_the_plural():
    """`compare` says which kinds a figure covers in the benchmark's own word: BEAM's are
    abilities (its `kind_word` "ability"), never "abilitys"."""
    from memorybench.compare.conditions import PackScores, _covers
    from memorybench.score.rows import covers_label

    kinds = sorted(BENCHMARK.category_names)
    scores = PackScores(
        root="p",
        run_id=None,
        config={},
        question_ids=["a", "b"],
        categories={"a": kinds[0], "b": kinds[1]},
        conversations={"a": "s", "b": "s"},
        lexical={"a": 1.0, "b": 0.0},
        benchmark=BENCHMARK.name,
    )
    assert BENCHMARK.kinds_word == "abilities"
    assert _covers(scores, ["a", "b"]) == f"abilities {kinds[0]}, {kinds[1]}"
    assert covers_label(kinds, BENCHMARK) == f"abilities {kinds[0]}-{kinds[-1]}"
