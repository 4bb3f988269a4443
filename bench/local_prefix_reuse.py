"""Prefix reuse of the embedded model: the first question on a memory pays the prefill,
the next ones (same system message and memory, another question) only the suffix.

    python bench/local_prefix_reuse.py                      # both memories, model auto
    python bench/local_prefix_reuse.py --memory full_context --questions 6
    python bench/local_prefix_reuse.py --prefix-reuse exact token   # both reuse modes
    python bench/local_prefix_reuse.py --compare-models     # + answer quality of each model

Renders the first LoCoMo conversation's memory the way memorybench does (full_context:
one ``DATE | SPEAKER: TEXT [image: CAPTION]`` line per turn; session_summaries:
``[Session N]`` blocks of the released summaries), fills ``prompts/readers/qa_v1.txt``,
and asks the first questions in order through the openai SDK (max_tokens 32,
temperature 0). The first question, which pays the prefill, is the yardstick measured in
the same server (issue 45): prints its latency, the median of the rest and their ratio
(target: at least 20x), the server's start time and memory, and writes the
figures to ``bench/results/local_prefix_reuse.json``.

``--compare-models`` also asks the first N questions of that conversation (categories
1-4) of every local model on the session_summaries memory and reports LoCoMo F1 per model
(written to ``bench/results/local_model_quality.json``): the figures behind ``AUTO_ORDER``
in ``memorybench/llm/local/models.py``. ``--memory`` with no value skips the latency runs.

A benchmark, not a test: it prints figures and never fails on time.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import openai

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

sys.path.insert(0, str(REPO / "bench"))

from _common import machine  # noqa: E402

from memorybench.llm.local import LOCAL_MODELS, LocalServer, choose_local_model, count_tokens  # noqa: E402

SYSTEM = "You answer questions using only the provided memory."


def locomo_path() -> Path:
    pins = Path(os.environ.get("MEMORYBENCH_PINS", REPO.parent / "shared" / "pins"))
    return pins / "data" / "locomo10.json"


def session_numbers(conv: dict[str, Any]) -> list[int]:
    return sorted(int(m.group(1)) for k, v in conv.items() if (m := re.fullmatch(r"session_(\d+)", k)) and isinstance(v, list))


def full_context(sample: dict[str, Any]) -> str:
    conv = sample["conversation"]
    lines = []
    for n in session_numbers(conv):
        date = conv[f"session_{n}_date_time"]
        for turn in conv[f"session_{n}"]:
            line = f"{date} | {turn['speaker']}: {turn['text']}"
            if turn.get("blip_caption"):
                line += f" [image: {turn['blip_caption']}]"
            lines.append(line)
    return "\n".join(lines)


def session_summaries(sample: dict[str, Any]) -> str:
    summaries = sample["session_summary"]
    numbered = sorted((int(re.search(r"\d+", k).group()), v) for k, v in summaries.items())  # type: ignore[union-attr]
    return "\n\n".join(f"[Session {n}]\n{text}" for n, text in numbered)


MEMORIES = {"full_context": full_context, "session_summaries": session_summaries}


def user_message(template: str, memory: str, question: str) -> str:
    return template.replace("{memory}", memory).replace("{question}", question)


def ask(client: openai.OpenAI, model: str, user: str, max_tokens: int = 32) -> tuple[float, str, Any]:
    t0 = time.perf_counter()
    reply = client.chat.completions.create(
        model=model,
        messages=[{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}],
        max_tokens=max_tokens,
        temperature=0,
        seed=0,
    )
    return time.perf_counter() - t0, (reply.choices[0].message.content or "").strip(), reply.usage


def prefix_hits(log: Path) -> list[int]:
    try:
        text = log.read_text("utf-8", "replace")
    except OSError:
        return []
    return [int(m.group(1)) for m in re.finditer(r"Llama\.generate: (\d+) prefix-match hit", text)]


def run_prefix_reuse(
    sample: dict[str, Any],
    memory_name: str,
    model: str,
    n_questions: int,
    template: str,
    results_dir: Path,
    prefix_reuse: str = "exact",
) -> dict[str, Any]:
    memory = MEMORIES[memory_name](sample)
    questions = [q["question"] for q in sample["qa"][:n_questions]]
    longest = max((user_message(template, memory, q) for q in questions), key=len)
    spec, n_ctx, reason = choose_local_model(SYSTEM + "\n\n" + longest, model)
    log = Path(tempfile.gettempdir()) / f"local_prefix_reuse.{memory_name}.{prefix_reuse}.server.log"
    log.unlink(missing_ok=True)
    print(
        f"\n== {memory_name}, prefix_reuse={prefix_reuse}: {len(memory)} chars, {count_tokens(memory, spec)} {spec.name} tokens; {reason}"
    )
    rows = []
    with LocalServer(spec, n_ctx, log_path=log, prefix_reuse=prefix_reuse) as server:
        print(f"server up in {server.startup_s:.1f}s (pid {server.pid}, {server.base_url})")
        rss_idle = server.rss_bytes()
        client = openai.OpenAI(base_url=server.base_url, api_key="local", max_retries=0, timeout=1800)
        for i, q in enumerate(questions):
            latency, answer, usage = ask(client, server.model_id, user_message(template, memory, q))
            rows.append(
                {
                    "question": q,
                    "latency_s": round(latency, 3),
                    "answer": answer,
                    "prompt_tokens": usage.prompt_tokens if usage else None,
                    "completion_tokens": usage.completion_tokens if usage else None,
                }
            )
            print(f"  q{i}: {latency:7.2f}s  {usage.prompt_tokens if usage else '?'} prompt tok  {q!r} -> {answer!r}")
        rss_after = server.rss_bytes()
        startup = server.startup_s
    first = rows[0]["latency_s"]
    rest = statistics.median(r["latency_s"] for r in rows[1:]) if len(rows) > 1 else None
    ratio = first / rest if rest else None
    hits = prefix_hits(log)
    print(
        f"first {first:.2f}s, median of the rest {rest:.2f}s, ratio {ratio:.1f}x; "
        f"server RSS {rss_after / 2**20:.0f} MiB; prefix-match hits {hits}"
    )
    return {
        "memory": memory_name,
        "prefix_reuse": prefix_reuse,
        "memory_chars": len(memory),
        "memory_tokens": count_tokens(memory, spec),
        "model": spec.name,
        "n_ctx": n_ctx,
        "reason": reason,
        "server_start_s": round(startup or 0.0, 2),
        "server_rss_mib_idle": round((rss_idle or 0) / 2**20, 1),
        "server_rss_mib_after": round((rss_after or 0) / 2**20, 1),
        "first_latency_s": first,
        "rest_median_latency_s": rest,
        "ratio": round(ratio, 1) if ratio else None,
        "prefix_match_hits": hits,
        "load_avg_after": [round(x, 2) for x in os.getloadavg()],
        "server_log": str(log),
        "questions": rows,
    }


def compare_models(sample: dict[str, Any], n_questions: int, template: str, memory_name: str) -> dict[str, Any]:
    from memorybench.benchmarks.locomo.score import locomo_score

    memory = MEMORIES[memory_name](sample)
    qa = [q for q in sample["qa"] if q.get("category") in (1, 2, 3, 4)][:n_questions]
    out: dict[str, Any] = {"memory": memory_name, "questions": len(qa), "models": {}}
    for name, spec in LOCAL_MODELS.items():
        users = [user_message(template, memory, q["question"]) for q in qa]
        try:
            spec, n_ctx, _ = choose_local_model(SYSTEM + "\n\n" + max(users, key=len), name)
        except Exception as e:  # noqa: BLE001 - a model whose context is too short
            print(f"{name}: skipped ({e})")
            out["models"][name] = {"skipped": str(e)}
            continue
        scores, answers, t0 = [], [], time.perf_counter()
        with LocalServer(spec, n_ctx) as server:
            client = openai.OpenAI(base_url=server.base_url, api_key="local", max_retries=0, timeout=1800)
            for q, user in zip(qa, users):
                _, answer, _ = ask(client, server.model_id, user)
                answers.append(answer)
                scores.append(locomo_score(answer, q["answer"], int(q["category"])))
        f1 = statistics.mean(scores)
        print(f"{name}: LoCoMo F1 {f1:.3f} over {len(qa)} questions ({time.perf_counter() - t0:.0f}s)")
        out["models"][name] = {
            "locomo_f1": round(f1, 4),
            "n_ctx": n_ctx,
            "seconds": round(time.perf_counter() - t0, 1),
            "answers": [
                {"q": q["question"], "gold": str(q["answer"]), "pred": a, "f1": round(s, 3)}
                for q, a, s in zip(qa, answers, scores)
            ],
        }
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--memory", nargs="*", choices=sorted(MEMORIES), default=["session_summaries", "full_context"])
    p.add_argument("--model", default="auto", help="auto or one of: " + ", ".join(LOCAL_MODELS))
    p.add_argument("--questions", type=int, default=6)
    p.add_argument(
        "--prefix-reuse",
        nargs="+",
        choices=["exact", "token"],
        default=["exact"],
        help="LocalServer(prefix_reuse=...): exact (default) and/or token",
    )
    p.add_argument("--conversation", type=int, default=0)
    p.add_argument("--compare-models", action="store_true")
    p.add_argument("--compare-questions", type=int, default=40)
    p.add_argument("--compare-memory", choices=sorted(MEMORIES), default="session_summaries")
    p.add_argument("--out", type=Path, default=REPO / "bench" / "results" / "local_prefix_reuse.json")
    args = p.parse_args()

    data = json.loads(locomo_path().read_text("utf-8"))
    sample = data[args.conversation]
    template = (REPO / "prompts" / "readers" / "qa_v1.txt").read_text("utf-8")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    results: dict[str, Any] = {
        "schema": "bench.local_prefix_reuse.v1",
        "sample_id": sample["sample_id"],
        # other work on the machine slows every figure: the load (at the start) beside them
        "machine": machine(),
        "runs": [],
    }
    for memory_name in args.memory:
        for mode in args.prefix_reuse:
            results["runs"].append(
                run_prefix_reuse(sample, memory_name, args.model, args.questions, template, args.out.parent, mode)
            )
            args.out.write_text(json.dumps(results, indent=2) + "\n")
    if results["runs"]:
        args.out.write_text(json.dumps(results, indent=2) + "\n")
        print(f"\nwrote {args.out}")
    if args.compare_models:
        quality = {
            "schema": "bench.local_model_quality.v1",
            "sample_id": sample["sample_id"],
            "machine": results["machine"],
            **compare_models(sample, args.compare_questions, template, args.compare_memory),
        }
        quality_out = args.out.with_name("local_model_quality.json")
        quality_out.write_text(json.dumps(quality, indent=2) + "\n")
        print(f"wrote {quality_out}")


if __name__ == "__main__":
    main()
