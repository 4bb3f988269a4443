"""No secret in any output: a whole pipeline runs with a fake API key and a fake bearer token
in its environment, then every byte it wrote is searched for them.

qa (the reader sends the key), rescore, autorater (the judge sends the token), verify,
aggregate and track (MLflow to a sqlite store under tmp) run as real subprocesses. The
scripted servers echo the credential back in an error body once each, as real endpoints
do ("Incorrect API key provided: ..."), so the error paths that write attempts to traces
and one-line errors to stderr are exercised too. The test has teeth: the servers must
have received both credentials in their Authorization headers.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
from pathlib import Path

from faultkit import MINI, MINI_IDS, PerQuestion
from conftest import scripted_reader
from memorybench.testing.scripted_server import Reply, ScriptedOpenAIServer, Status


def run(tmp: Path, env: dict[str, str], log: list[tuple[str, subprocess.CompletedProcess]], *args: str) -> subprocess.CompletedProcess:
    """`memorybench ARGS` in a subprocess whose environment holds the fake credentials."""
    done = subprocess.run(
        [sys.executable, "-m", "memorybench.cli", *args], cwd=tmp, env=env, capture_output=True, timeout=240
    )
    log.append((" ".join(args[:1]), done))
    return done


def every_file(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file())


def test_no_credential_reaches_any_output(tmp_path):
    key = f"sk-test-{secrets.token_urlsafe(24)}"
    token = secrets.token_hex(20)
    env = {**os.environ, "OPENAI_API_KEY": key, "JUDGE_API_TOKEN": token, "PYTHONUNBUFFERED": "1"}
    # (a child's own HOME, so that no tool writes beside the user's real files where we do not look)
    env["HOME"] = str(tmp_path / "home")
    work = tmp_path / "work"
    work.mkdir()
    log: list[tuple[str, subprocess.CompletedProcess]] = []

    def echoes(credential: str) -> Status:
        return Status(500, message=f"Incorrect API key provided: {credential}. You can find your API key at ...")

    reader = ScriptedOpenAIServer(responder=PerQuestion({1: [echoes(key)]}))

    def judge_reply(body: dict) -> Reply:
        return Reply(json.dumps({"label": "CORRECT"}), model="judge-x")

    judge = ScriptedOpenAIServer(responder=judge_reply)
    with reader, judge:
        judge.script(echoes(token))
        packs = work / "packs"
        common = [*scripted_reader(reader.base_url), "reader.api_key_env=OPENAI_API_KEY", "reader.retry_max_wait_s=0.05",
                  f"dataset.path={MINI}", f"paths.packs={packs}", f"paths.cache={work / 'cache'}"]
        assert run(work, env, log, "qa", *common, "name=secret").returncode == 0, log[-1][1].stderr
        (pack,) = (packs / "secret" / "runs").iterdir()
        # a run that fails on the echoed key: its one-line error goes to stderr
        reader.script(*[echoes(key)] * 2)
        failed = run(work, env, log, "qa", *common, "name=failing", "reader.max_retries=1")
        assert failed.returncode == 3 and b"[REDACTED]" in failed.stderr, failed.stderr
        assert run(work, env, log, "rescore", str(pack)).returncode == 0, log[-1][1].stderr
        judged = run(work, env, log, "autorater", str(pack), "judge=openai_compatible", f"judge.base_url={judge.base_url}",
                     "judge.model=judge-x", "judge.api_key_env=JUDGE_API_TOKEN", f"paths.cache={work / 'cache'}", "--quiet")
        assert judged.returncode == 0, judged.stderr
        # verify searches the pack for the values of the credential variables it finds in its environment
        verified = run(work, env, log, "verify", str(pack))
        assert verified.returncode == 0 and verified.stdout.decode().strip() == f"ok {pack}", verified.stdout
        assert run(work, env, log, "aggregate", str(packs), "--out", str(work / "out")).returncode == 0, log[-1][1].stderr
        tracked = run(work, env, log, "track", str(pack), "--uri", f"sqlite:///{work / 'mlflow.db'}")
        assert tracked.returncode == 0, tracked.stderr

    # teeth: both credentials were sent, and both came back in an error body
    assert {h.get("authorization") for h in reader.headers} == {f"Bearer {key}"}
    assert {h.get("authorization") for h in judge.headers} == {f"Bearer {token}"}
    traces = [json.loads(line) for line in (pack / "reader/traces.jsonl").read_text().splitlines()]
    assert [t["question_id"] for t in traces] == MINI_IDS
    assert "Incorrect API key provided: [REDACTED]" in traces[1]["response"]["attempts"][0]["error"]
    (judge_dir,) = (m.parent for m in (pack / "autorater").glob("*/autorater_meta.json"))  # the judge's folder
    judge_traces = (judge_dir / "traces.jsonl").read_text()
    assert "Incorrect API key provided: [REDACTED]" in judge_traces

    files = every_file(tmp_path)
    written = {p.relative_to(tmp_path).as_posix() for p in files}
    # every output is here: the pack, the judge's files, the collected tables, the MLflow store and artifacts
    assert {"work/mlflow.db", f"work/packs/secret/runs/{pack.name}/autorater/{judge_dir.name}/autorater_verdicts.jsonl"} <= written
    assert any(p.startswith("work/out/collected/") for p in written), sorted(written)
    assert any("/artifacts/" in p for p in written), sorted(written)
    assert len(files) > 40
    # the random parts alone too: a credential cut or wrapped would still be found
    needles = [key.encode(), token.encode(), key[len("sk-test-") :].encode(), token[4:-4].encode()]
    hits = [p for p in files for needle in needles if needle in p.read_bytes()]
    hits += [f"{name} stdout/stderr" for name, done in log for needle in needles if needle in done.stdout + done.stderr]
    assert hits == [], hits
