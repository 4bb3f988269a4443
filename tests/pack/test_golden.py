"""A tiny golden pack: the two-conversation fixture on the scripted server, file for file.

Timestamps, latencies, ports, absolute paths, versions and the git state are normalized;
everything else must match byte for byte. `_SUCCESS` is compared with every sha256
scrubbed, and the size of every file that normalization changed. Regenerate after an
intended change with `MEMORYBENCH_REGEN_GOLDEN=1 pytest tests/pack/test_golden.py` and
review the diff.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path
from typing import Any

from conftest import FIXTURES, REPO, scripted_reader

from memorybench.cli import main

GOLDEN = Path(__file__).resolve().parent / "golden_mini_pack"
VOLATILE_KEYS = {"latency_s", "started_at", "ended_at", "git_commit", "git_dirty", "package_versions"}


def _scrub(value: Any, key: str | None = None) -> Any:
    if key in VOLATILE_KEYS:
        return f"<{key}>"
    if isinstance(value, dict):
        return {k: _scrub(v, k) for k, v in value.items()}
    if isinstance(value, list):
        return [_scrub(v) for v in value]
    return value


def normalize(text: str, tmp: Path, run_id: str, config_sha: str) -> str:
    text = text.replace(str(tmp), "<tmp>").replace(str(REPO), "<repo>")
    text = text.replace(run_id, "<run_id>").replace(config_sha, "<config_sha256>")
    text = re.sub(r"127\.0\.0\.1:\d+", "127.0.0.1:<port>", text)
    text = re.sub(r"latency [0-9.e-]+ s", "latency <t> s", text)
    return text


def normalized_pack(pack: Path, tmp: Path) -> dict[str, str]:
    meta = json.loads((pack / "run_meta.json").read_text())
    out = {}
    #: files whose normalization changed something: their size varies from run to run too
    volatile = set()
    for path in sorted(p for p in pack.rglob("*") if p.is_file()):
        rel = str(path.relative_to(pack))
        if rel == "_SUCCESS":
            continue  # below: it records the other files' hashes and sizes
        raw = path.read_text("utf-8")
        text = raw
        scrubbed = False
        if rel.endswith(".json"):
            doc = json.loads(text)
            scrubbed = _scrub(doc) != doc
            text = json.dumps(_scrub(doc), indent=2, ensure_ascii=False)
        elif rel.endswith(".jsonl"):
            rows = [json.loads(line) for line in text.splitlines()]
            scrubbed = any(_scrub(row) != row for row in rows)
            text = "".join(json.dumps(_scrub(row), ensure_ascii=False) + "\n" for row in rows)
        out[rel] = normalize(text, tmp, meta["run_id"], meta["config_sha256"])
        if scrubbed or normalize(raw, tmp, meta["run_id"], meta["config_sha256"]) != raw:
            volatile.add(rel)
    if (pack / "_SUCCESS").is_file():
        # every sha256 is scrubbed (each file is compared in full above); a size only where the file is volatile
        record = json.loads((pack / "_SUCCESS").read_text("utf-8"))
        record["files"] = {
            rel: {"sha256": "<sha256>", "bytes": "<bytes>" if rel in volatile else closed["bytes"]}
            for rel, closed in record["files"].items()
        }
        out["_SUCCESS"] = json.dumps(record, indent=2, ensure_ascii=False) + "\n"
    return out


def test_mini_pack_matches_golden(tmp_path, scripted_server):
    args = [
        "qa",
        *scripted_reader(scripted_server.base_url),
        f"dataset.path={FIXTURES / 'mini_locomo.json'}",
        f"paths.packs={tmp_path / 'packs'}",
        f"paths.cache={tmp_path / 'cache'}",
        "name=golden",
    ]
    assert main(args) == 0
    (pack,) = (tmp_path / "packs" / "golden" / "runs").iterdir()
    got = normalized_pack(pack, tmp_path)
    if os.environ.get("MEMORYBENCH_REGEN_GOLDEN"):
        shutil.rmtree(GOLDEN, ignore_errors=True)
        for rel, text in got.items():
            (GOLDEN / rel).parent.mkdir(parents=True, exist_ok=True)
            (GOLDEN / rel).write_text(text, "utf-8")
    expected = {str(p.relative_to(GOLDEN)): p.read_text("utf-8") for p in GOLDEN.rglob("*") if p.is_file()}
    assert sorted(got) == sorted(expected)
    for rel in expected:
        assert got[rel] == expected[rel], rel
