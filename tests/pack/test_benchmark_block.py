"""A record every benchmark shares keeps one benchmark's own block under the key that
benchmark's module names (`WithBenchmarkBlock`), without the core naming the benchmark."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from memorybench.answer.imported import Reproduction
from memorybench.benchmark import benchmarks, block_keys, imported
from memorybench.benchmarks.beam import figures as beam_figures
from memorybench.benchmarks.longmemeval import autorater as lme_autorater
from memorybench.benchmarks.longmemeval import importer as lme_importer

BASE = {"schema": "reproduction.v1", "run_id": "r", "format": "f", "results_sha256": "0" * 64, "metrics": {}}


def test_the_keys_are_the_benchmarks_modules_own():
    assert {lme_autorater.FIELD, lme_importer.FIELD, beam_figures.FIELD} <= block_keys()


def test_each_record_names_the_blocks_its_modules_write():
    """A record's `blocks` are exactly the `FIELD`s of its `judge_figures` and `importer` modules,
    so a block is read without importing any benchmark's code."""
    for bench in benchmarks().values():
        fields = {getattr(imported(m), "FIELD", None) for m in (bench.judge_figures, bench.importer) if m}
        assert set(bench.blocks) == fields - {None}, bench.name


def test_reading_a_block_imports_no_benchmark_module(tmp_path):
    import subprocess
    import sys

    code = (
        "import sys, json; from memorybench.answer.imported import Reproduction; "
        f"Reproduction.model_validate({{**{BASE!r}, {lme_importer.FIELD!r}: {{}}}}); "
        "print(sorted(m for m in sys.modules if m.startswith('memorybench.benchmarks.') and m.count('.') > 2))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_a_block_reads_and_writes_back_under_its_key_after_the_fields():
    block = {
        "dataset": "longmemeval_s",
        "authors_report": "x\n",
        "report": "x\n",
        "equal": True,
        "comparable": False,
        "comparability": "no",
    }
    plain = json.loads(Reproduction.model_validate({**BASE, "notes": ["n"]}).dump())
    text = json.dumps({**plain, lme_importer.FIELD: block}, indent=2, ensure_ascii=False) + "\n"
    rep = Reproduction.model_validate_json(text)
    assert rep.block(lme_importer.FIELD) == block and rep.block("other") is None
    assert rep.dump() == text  # byte for byte: the block last, as the file had it
    assert lme_importer.LongMemEvalReproduction.model_validate(rep.block(lme_importer.FIELD)).equal


def test_a_key_no_benchmark_declares_is_refused():
    with pytest.raises(ValidationError, match="longmemevall"):
        Reproduction.model_validate({**BASE, "longmemevall": {"equal": True}})


def test_a_record_without_a_block_keeps_its_bytes():
    rep = Reproduction.model_validate(BASE)
    assert json.loads(rep.dump()) == {**BASE, "judge_id": None, "notes": [], "partial": None}
    assert rep.blocks == {}
