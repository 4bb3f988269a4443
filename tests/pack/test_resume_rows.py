"""What a resumed run keeps of each journal (`RunPack.resume`): a row of an answered question,
a row of a built conversation, and a conversation's build rows that carry a `question_id` of
null (a wrapped library's embedding calls during the build, `memory/<method>/embed_calls.jsonl`)
with it; work cut off by the kill (a question not answered, a conversation not built) is dropped."""

from __future__ import annotations

from memorybench.pack.run_pack import RunPack


def test_a_resume_keeps_a_built_conversations_rows_whose_question_id_is_null(tmp_path):
    pack = RunPack(tmp_path / "pack")
    pack.open()
    pack.predictions.append({"question_id": "conv-1-q-0", "sample_id": "conv-1"})
    pack.memory_manifest.append({"sample_id": "conv-1", "method": "lib"})
    calls = pack.journal("memory/lib/embed_calls.jsonl")
    rows = [
        {"sample_id": "conv-1", "question_id": None, "texts": ["built"]},  # the build's call: kept
        {"sample_id": "conv-1", "question_id": "conv-1-q-0", "texts": ["asked"]},  # answered: kept
        {"sample_id": "conv-1", "question_id": "conv-1-q-1", "texts": ["cut off"]},  # not answered: dropped
        {"sample_id": "conv-2", "question_id": None, "texts": ["half built"]},  # not built: dropped
    ]
    for row in rows:
        calls.append(row)
    answered, built = RunPack(tmp_path / "pack").resume()
    assert (answered, built) == ({"conv-1-q-0"}, {"conv-1"})
    kept = [r["texts"][0] for r in RunPack(tmp_path / "pack").journal("memory/lib/embed_calls.jsonl").rows()]
    assert kept == ["built", "asked"]
