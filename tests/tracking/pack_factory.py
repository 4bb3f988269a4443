"""Small real packs for the aggregate / collect / report / tracking tests.

`make_packs` runs the real `memorybench qa` (in process) on the mini fixture against the
scripted server, once per memory method, and can add an autorater folder in the format
the autorater stage writes (only the fields those stages read are relied upon).
"""

from __future__ import annotations

import atexit
import json
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path

from conftest import FIXTURES, scripted_reader

from memorybench.cli import main
from memorybench.testing.scripted_server import Reply, ScriptedOpenAIServer

MINI = FIXTURES / "mini_locomo.json"
#: the judge template's sha256 in a made-up autorater (no template is read)
PROMPT_SHA256 = "0" * 64


def lookup_responder(body: dict) -> Reply:
    """Plumbing, not an answer: the memory line that shares a word with the question."""
    user = body["messages"][-1]["content"]
    question = user.rsplit("Question:", 1)[-1].split("\n")[0].lower()
    words = [w.strip("?.'s") for w in question.split()[2:] if len(w.strip("?.'s")) > 3]
    memory = user.split("Answer the question", 1)[0]
    for line in memory.splitlines():
        if words and any(w in line.lower() for w in words):
            return Reply(text=line.split(": ", 1)[-1][:80], prompt_tokens=len(user.split()), completion_tokens=12)
    return Reply(text="Not mentioned in the conversation", prompt_tokens=len(user.split()), completion_tokens=5)


_MADE: dict[tuple, Path] = {}


def make_packs(
    root: Path, memories: Sequence[str] = ("full_context", "session_summaries"), name: str = "mini", extra: Sequence[str] = ()
) -> list[Path]:
    """Finished packs under `root/packs/<name>/runs/`, one per memory method.

    The runs happen once per test process; later calls copy the packs (same bytes).
    """
    key = (tuple(memories), name, tuple(extra))
    if key not in _MADE:
        made = Path(tempfile.mkdtemp(prefix="memorybench-packs-"))
        atexit.register(shutil.rmtree, made, True)
        with ScriptedOpenAIServer(responder=lookup_responder) as server:
            for memory in memories:
                args = [
                    "qa",
                    *scripted_reader(server.base_url),
                    f"dataset.path={MINI}",
                    f"paths.packs={made / 'packs'}",
                    f"paths.cache={made / 'cache'}",
                    f"name={name}",
                    f"memory={memory}",
                    *extra,
                ]
                assert main(args) == 0
        _MADE[key] = made / "packs" / name / "runs"
    runs = root / "packs" / name / "runs"
    runs.mkdir(parents=True, exist_ok=True)
    for pack in sorted(_MADE[key].iterdir()):
        shutil.copytree(pack, runs / pack.name)
    return sorted(runs.iterdir())


def add_autorater(pack: Path, passes: int = 2, model: str = "scripted-judge", threshold: float = 0.0) -> str:
    """`autorater/<judge id>/` as the autorater stage writes it: its meta, verdicts per
    (question, pass), the metrics the stage computes from them (`autorater_metrics`), each a
    valid record, and its `_SUCCESS`; returns the judge id.

    Pass 1 marks a row CORRECT when its LoCoMo F1 > `threshold`; pass 2 flips the first
    judged row, and the second judged row of pass 2 is a FAILED parse. Another `model` is
    another judge (its own folder).
    """
    from memorybench.llm.records import ModelIdentity
    from memorybench.pack import layout
    from memorybench.pack.autorater_schemas import AutoraterMeta, AutoraterVerdict, JudgeIdentity
    from memorybench.pack.success import write_success
    from memorybench.stages.autorater_metrics import autorater_metrics

    rows = [json.loads(line) for line in (pack / "predictions.jsonl").read_bytes().split(b"\n") if line.strip()]
    scores = {r["question_id"]: float(r["locomo_f1"]) for r in _csv_rows(pack)}
    verdicts = []
    for n in range(1, passes + 1):
        judged = 0
        for i, row in enumerate(rows):
            base = dict(
                question_id=row["question_id"],
                sample_id=row["sample_id"],
                index=i,
                category=row["category"],
                pass_=n,
                judge_prompt_sha256=PROMPT_SHA256,
            )
            if row["category"] == 5:
                verdicts.append(AutoraterVerdict(**base, status="SKIPPED"))
                continue
            judged += 1
            score = 1 if scores[row["question_id"]] > threshold else 0
            if n == 2 and judged == 1:
                score = 1 - score
            if n == 2 and judged == 2:
                verdicts.append(
                    AutoraterVerdict(
                        **base,
                        status="FAILED",
                        failure="parse",
                        error="no JSON object in the reply",
                        mem0_f1=0.25,
                        mem0_bleu1=0.5,
                    )
                )
                continue
            verdicts.append(
                AutoraterVerdict(
                    **base,
                    status="CORRECT" if score else "WRONG",
                    label_raw="CORRECT" if score else "WRONG",
                    label_standard=True,
                    score=score,
                    mem0_f1=0.25,
                    mem0_bleu1=0.5,
                )
            )
    judge = {
        "name": "scripted",
        "provider": "openai_compatible",
        "model": model,
        "temperature": 0.0,
        "max_tokens": 256,
        "seed": None,
    }
    identity = JudgeIdentity(
        protocol="mem0", model=model, prompt_sha256=PROMPT_SHA256, temperature=0.0, response_format={"type": "json_object"}
    )
    meta = AutoraterMeta(
        judge_id=identity.judge_id,
        identity=identity,
        run_id=json.loads((pack / "run_meta.json").read_text())["run_id"],
        passes=passes,
        judge_config=judge,
        judge_settings={"max_tokens": 256, "seed": None},
        judge_model_sent=model,
        judge=ModelIdentity(role="judge", provider="openai_compatible", requested=model),
        prompt={"name": "mem0 ACCURACY_PROMPT", "sha256": PROMPT_SHA256},
        response_format={"type": "json_object"},
        package_versions={},
        started_at="2025-01-01T00:00:00+00:00",
        ended_at="2025-01-01T00:00:01+00:00",
    )
    out = pack / layout.autorater_dir(identity.judge_id)
    out.mkdir(parents=True, exist_ok=True)
    (out / layout.JUDGE_META).write_text(meta.dump())
    (out / layout.JUDGE_VERDICTS).write_text("".join(v.model_dump_json(by_alias=True) + "\n" for v in verdicts))
    (out / layout.JUDGE_METRICS).write_text(autorater_metrics(pack, identity.judge_id).dump())
    write_success(pack, under=layout.autorater_dir(identity.judge_id))
    return identity.judge_id


def _csv_rows(pack: Path) -> list[dict]:
    import csv

    with (pack / "predictions.csv").open(newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def unfinished_copy(pack: Path, run_id: str = "unfinished-run-000000000000") -> Path:
    """A copy of `pack` without `_SUCCESS`: readers must leave it out."""
    target = pack.parent / run_id
    shutil.copytree(pack, target)
    (target / "_SUCCESS").unlink()
    return target


# -- a judged LongMemEval pack --------------------------------------------------------
_LME_CITIES = ("Lisbon", "Oslo", "Quito", "Hanoi", "Perth", "Tunis", "Lima", "Riga")


def _lme_reader(body: dict) -> Reply:
    """Plumbing, not an answer: the city the memory says the user moved to (a wrong one beside a
    beagle or in Hanoi, so the types' accuracies differ), the sister's days, else a refusal."""
    user = body["messages"][-1]["content"]
    question = user.rsplit("Question:", 1)[-1]
    if "sister" in question:
        days = user.split("visited for ", 1)[1].split(" ", 1)[0] if "visited for " in user else "none"
        return Reply(f"{days} days")
    if "city" in question:
        city = next((c for c in _LME_CITIES if f"moved to {c}" in user), "none")
        return Reply("Oslo" if ("a beagle" in user or city == "Hanoi") and city != "Oslo" else city)
    return Reply("Not mentioned in the conversation")


def _lme_judge(body: dict) -> Reply:
    """A mechanical judge (plumbing, not a result) in LongMemEval's yes/no: yes when the response
    holds the correct answer, or for an abstention question says it is not mentioned."""
    user = body["messages"][-1]["content"]
    response = user.split("\n\nModel Response: ", 1)[1].split("\n\n", 1)[0]
    if user.startswith("I will give you an unanswerable question"):
        return Reply("Yes." if "not mentioned" in response.lower() else "No.")
    head = next(h for h in ("Correct Answer: ", "Rubric: ") if f"\n\n{h}" in user)
    answer = user.split(f"\n\n{head}", 1)[1].split("\n\nModel Response: ", 1)[0]
    return Reply("yes" if answer.lower() in response.lower() else "no")


def make_longmemeval_pack(root: Path, questions: int = 20, judged: bool = True, name: str = "lme") -> Path:
    """One finished LongMemEval pack (`dataset=longmemeval_oracle` over the made file of
    `tests/fixtures/make_longmemeval.py`) under `root/packs/<name>/runs/`, answered by the scripted
    reader and, when `judged`, judged by the real autorater with `judge.protocol=longmemeval` on a
    scripted judge. Made once per test process; later calls copy it."""
    import sys

    from memorybench.stages.autorater import autorater_main

    key = ("longmemeval", questions, judged, name)
    if key not in _MADE:
        sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fixtures"))
        from make_longmemeval import make_longmemeval

        made = Path(tempfile.mkdtemp(prefix="memorybench-lme-"))
        atexit.register(shutil.rmtree, made, True)
        data = make_longmemeval(made / "lme.json", questions=questions)
        with ScriptedOpenAIServer(responder=_lme_reader) as server:
            assert (
                main(
                    [
                        "qa",
                        "dataset=longmemeval_oracle",
                        f"dataset.path={data}",
                        *scripted_reader(server.base_url),
                        f"paths.packs={made / 'packs'}",
                        f"paths.cache={made / 'cache'}",
                        f"name={name}",
                    ]
                )
                == 0
            )
        (pack,) = (made / "packs" / name / "runs").iterdir()
        if judged:
            with ScriptedOpenAIServer(responder=_lme_judge) as judge:
                assert (
                    autorater_main(
                        [
                            str(pack),
                            "--quiet",
                            "judge=openai_compatible",
                            "judge.protocol=longmemeval",
                            f"judge.base_url={judge.base_url}",
                            "judge.model=judge-x",
                            f"paths.cache={made / 'cache'}",
                        ]
                    )
                    == 0
                )
        _MADE[key] = pack
    target = root / "packs" / name / "runs" / _MADE[key].name
    if not target.exists():
        shutil.copytree(_MADE[key], target)
    return target
