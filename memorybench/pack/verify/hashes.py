"""Stored-once texts and memory files hash to the keys the pack records for them."""

from __future__ import annotations

from memorybench.hashing import sha256_bytes
from memorybench.pack.verify.context import Context
from memorybench.pack.verify.findings import Findings

__all__ = ["check_memory", "check_references"]


def check_references(ctx: Context, out: Findings) -> None:
    """Every REFERENCE_PIN.json entry: its file is in the pack and hashes to its key (into `ctx.ref_texts`)."""
    ctx.ref_texts = {}
    if ctx.pin is None:
        return
    for sha, ref in ctx.pin["refs"].items():
        path = ctx.inside(ref["path"])
        if path is None:
            out.add("hash.reference", "REFERENCE_PIN.json", f"ref {sha[:12]}… points outside the pack ({ref['path']!r})")
            continue
        if not path.is_file():
            out.add("hash.reference", "REFERENCE_PIN.json", f"{ref['path']} (ref {sha[:12]}…) is missing")
            continue
        data = path.read_bytes()
        if sha256_bytes(data) != sha:
            out.add(
                "hash.reference",
                ref["path"],
                f"hashes to {sha256_bytes(data)[:12]}…, REFERENCE_PIN.json maps ref {sha[:12]}… to it: the file or the pin was changed",
            )
            continue
        if len(data) != ref["bytes"]:
            out.add(
                "hash.reference", "REFERENCE_PIN.json", f"{ref['path']} has {len(data)} bytes, the pin records {ref['bytes']}"
            )
        ctx.ref_texts[sha] = data.decode("utf-8")


def check_memory(ctx: Context, out: Findings) -> None:
    """Each manifest row's memory file hashes to its memory_sha256; each prediction names its conversation's memory."""
    ctx.dump_samples = {}
    ctx.manifest_sha = {}
    for line, row in ctx.rows["memory/manifest.jsonl"]:
        if row.get("memory_path"):
            ctx.dump_samples[row["memory_path"]] = row["sample_id"]
        if row.get("memory_sha256"):
            ctx.manifest_sha.setdefault(row["sample_id"], row["memory_sha256"])
        if not (row.get("memory_sha256") and row.get("memory_path")):
            continue
        path = ctx.inside(row["memory_path"])
        if path is None:
            out.add("hash.memory", "memory/manifest.jsonl", f"memory_path {row['memory_path']!r} points outside the pack", line)
        elif not path.is_file():
            out.add(
                "hash.memory", "memory/manifest.jsonl", f"{row['memory_path']} (memory of {row['sample_id']}) is missing", line
            )
        elif sha256_bytes(path.read_bytes()) != row["memory_sha256"]:
            out.add(
                "hash.memory",
                row["memory_path"],
                f"does not hash to the manifest's memory_sha256 {row['memory_sha256'][:12]}… (memory/manifest.jsonl line {line})",
            )
    for line, row in ctx.rows["predictions.jsonl"]:
        want = ctx.manifest_sha.get(row["sample_id"])
        if want is not None and row["memory_sha256"] != want:
            out.grouped(
                "hash.memory",
                "predictions.jsonl",
                line,
                f"memory_sha256 of {row['question_id']} is not its conversation's memory in memory/manifest.jsonl",
                "manifest",
            )
