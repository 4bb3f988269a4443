"""No secret in any output: a whole pipeline runs with a fake API key and a fake bearer token
in its environment, then every byte it wrote is searched for them.

qa (the reader sends the key), rescore, autorater (the judge sends the token), verify,
aggregate and track (MLflow to a sqlite store under tmp) run as real subprocesses. The
scripted servers echo the credential back in an error body once each, as real endpoints
do ("Incorrect API key provided: ..."), so the error paths that write attempts to traces
and one-line errors to stderr are exercised too. The test has teeth: the servers must
have received both credentials in their Authorization headers.

The second pipeline holds its credentials in the endpoint URLs instead (the reader's key in
the userinfo, the judge's user and password in the userinfo and a token in the query
string) and both servers echo the Authorization header into every answer; a sweep and a
failed sweep add Hydra's own files and lines, `plan` its listing.
"""

from __future__ import annotations

import base64
import json
import os
import secrets
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
from conftest import scripted_reader
from faultkit import MINI, MINI_IDS, PerQuestion

from memorybench.cli import main
from memorybench.secrets import CREDENTIAL_ENV
from memorybench.testing.scripted_server import Reply, ScriptedOpenAIServer, Status


def run(
    tmp: Path, env: dict[str, str], log: list[tuple[str, subprocess.CompletedProcess]], *args: str
) -> subprocess.CompletedProcess:
    """`memorybench ARGS` in a subprocess whose environment holds the fake credentials."""
    done = subprocess.run([sys.executable, "-m", "memorybench.cli", *args], cwd=tmp, env=env, capture_output=True, timeout=240)
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
        common = [
            *scripted_reader(reader.base_url),
            "reader.api_key_env=OPENAI_API_KEY",
            "reader.retry_max_wait_s=0.05",
            f"dataset.path={MINI}",
            f"paths.packs={packs}",
            f"paths.cache={work / 'cache'}",
        ]
        assert run(work, env, log, "qa", *common, "name=secret").returncode == 0, log[-1][1].stderr
        (pack,) = (packs / "secret" / "runs").iterdir()
        # a run that fails on the echoed key: its one-line error goes to stderr
        reader.script(*[echoes(key)] * 2)
        failed = run(work, env, log, "qa", *common, "name=failing", "reader.max_retries=1")
        assert failed.returncode == 3 and b"[REDACTED]" in failed.stderr, failed.stderr
        assert run(work, env, log, "rescore", str(pack)).returncode == 0, log[-1][1].stderr
        judged = run(
            work,
            env,
            log,
            "autorater",
            str(pack),
            "judge=openai_compatible",
            f"judge.base_url={judge.base_url}",
            "judge.model=judge-x",
            "judge.api_key_env=JUDGE_API_TOKEN",
            f"paths.cache={work / 'cache'}",
            "--quiet",
        )
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
    assert {
        "work/mlflow.db",
        f"work/packs/secret/runs/{pack.name}/autorater/{judge_dir.name}/autorater_verdicts.jsonl",
    } <= written
    assert any(p.startswith("work/out/collected/") for p in written), sorted(written)
    assert any("/artifacts/" in p for p in written), sorted(written)
    assert len(files) > 40
    # the random parts alone too: a credential cut or wrapped would still be found
    needles = [key.encode(), token.encode(), key[len("sk-test-") :].encode(), token[4:-4].encode()]
    hits = [p for p in files for needle in needles if needle in p.read_bytes()]
    hits += [f"{name} stdout/stderr" for name, done in log for needle in needles if needle in done.stdout + done.stderr]
    assert hits == [], hits


# -- credentials in URLs and in replies ------------------------------------------------
class PathServer(ScriptedOpenAIServer):
    """The scripted server, also recording each request's path (query included)."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.paths: list[str] = []

    def _post(self, handler) -> None:
        self.paths.append(handler.path)
        super()._post(handler)


def _hostport(server: ScriptedOpenAIServer) -> str:
    return f"127.0.0.1:{server.port}"


def test_url_credentials_are_sent_as_credentials():
    """A key in the userinfo is the bearer key, a user and password are basic auth, query
    parameters travel as query parameters; the base URL the client keeps is clean."""
    from memorybench.llm.client import ChatClient
    from memorybench.llm.records import ChatRequest

    key = f"sk-test-{secrets.token_urlsafe(18)}"
    password = secrets.token_hex(10)
    request = ChatRequest(model="m", messages=({"role": "user", "content": "hi"},), temperature=0.0, max_tokens=4)
    with PathServer() as server:
        cases = [
            (f"http://user:{key}@{_hostport(server)}/v1", f"Bearer {key}", "/v1/chat/completions"),
            (f"http://{key}@{_hostport(server)}/v1", f"Bearer {key}", "/v1/chat/completions"),
            (
                f"http://alice:{password}%40x@{_hostport(server)}/v1/",
                "Basic " + base64.b64encode(f"alice:{password}@x".encode()).decode(),
                "/v1/chat/completions",
            ),
            (
                f"http://{_hostport(server)}/v1?api-version=2024-06-01&api-key={password}",
                "Bearer no-key",
                f"/v1/chat/completions?api-version=2024-06-01&api-key={password}",
            ),
        ]
        for url, authorization, path in cases:
            client = ChatClient(base_url=url, api_key=None, max_retries=0)
            try:
                client.complete(request)
            finally:
                client.close()
            assert server.headers[-1]["authorization"] == authorization, url
            assert server.paths[-1] == path, url
            assert key not in client.base_url and password not in client.base_url, client.base_url
    assert client.base_url == f"http://{_hostport(server)}/v1?api-version=2024-06-01&api-key=***"


def test_clean_url_and_scrub():
    from memorybench import secrets as known

    plain = "http://127.0.0.1:8080/v1?api-version=2024-06-01"
    assert known.clean_url(plain) is plain  # a URL without secrets is part of a run id: untouched
    assert known.clean_url("https://u:p4ssw0rd-long@h.example/v1?key=abc12345&x=1") == "https://h.example/v1?key=***&x=1"
    assert known.clean_config({"reader": {"base_url": plain}}) == {"reader": {"base_url": plain}}
    token = secrets.token_hex(12)
    known.register([token])
    line = f"error from http://me:{token}@host/v1: echoed {token}"
    assert known.scrub(line) == "error from http://host/v1: echoed ***"
    assert known.scrub_bytes(b"\xff" + token.encode()) == b"\xff***"


def test_a_component_key_it_does_not_declare_fails_in_one_line(capsys):
    code = main(
        ["plan", "reader=openai_compatible", "reader.base_url=http://127.0.0.1:9/v1", "reader.model=m", "+reader.temprature=1.5"]
    )
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1, err
    assert "unknown key reader.temprature" in err and "Did you mean 'temperature'?" in err, err
    # a key the component's own schema declares is taken (`++` adds or overrides), and so is
    # any key under a free-form dict (`memory.prompts`, `pricing`)
    assert (
        main(
            [
                "plan",
                "memory=rag",
                "++memory.top_k=2",
                "+memory.prompts.extra=readers/qa_v1.txt",
                "+pricing.m={input: 1.0, cached_input: 0.5, output: 2.0}",
            ]
        )
        == 0
    ), capsys.readouterr().err
    assert main(["plan", "+memory.top_k=2"]) == 2  # full_context has no top_k
    assert "unknown key memory.top_k" in capsys.readouterr().err


def test_no_credential_in_a_url_or_a_reply_reaches_any_output(tmp_path):
    """The reader's key sits in its URL's userinfo, the judge's user and password and a token
    in its URL's userinfo and query string; both servers echo the Authorization header (and
    the judge its path) in every answer. qa, a sweep of it (Hydra's multirun.yaml), plan,
    autorater, verify, aggregate and track run; no byte of any credential is anywhere."""
    key = f"sk-test-{secrets.token_urlsafe(24)}"
    judge_password = secrets.token_hex(12)
    query_token = secrets.token_hex(16)
    basic = base64.b64encode(f"judgeuser:{judge_password}".encode()).decode()
    env = {k: v for k, v in os.environ.items() if not CREDENTIAL_ENV.search(k.upper())}
    env.update({"PYTHONUNBUFFERED": "1", "HOME": str(tmp_path / "home")})
    work = tmp_path / "work"
    work.mkdir()
    log: list[tuple[str, subprocess.CompletedProcess]] = []

    reader = PathServer(responder=lambda body: Reply(f"my key is {reader.headers[-1].get('authorization')}"))
    judge = PathServer(
        responder=lambda body: Reply(
            json.dumps({"label": "CORRECT", "reason": f"{judge.headers[-1].get('authorization')} at {judge.paths[-1]}"}),
            model="judge-x",
        )
    )
    with reader, judge:
        packs = work / "packs"
        reader_url = f"http://user:{key}@{_hostport(reader)}/v1"
        common = [
            "reader=openai_compatible",
            f"reader.base_url={reader_url}",
            "reader.model=scripted",
            "reader.retry_max_wait_s=0.05",
            f"dataset.path={MINI}",
            f"paths.packs={packs}",
            f"paths.cache={work / 'cache'}",
        ]
        assert run(work, env, log, "qa", *common, "name=secret").returncode == 0, log[-1][1].stderr
        (pack,) = (packs / "secret" / "runs").iterdir()
        # the same run as a sweep (finished: nothing to do) and a failing sweep: Hydra writes
        # multirun.yaml and prints the failed job's overrides itself
        assert run(work, env, log, "qa", "-m", *common, "name=secret").returncode == 0, log[-1][1].stderr
        reader.script(Status(500, message=f"Incorrect API key provided: {key}"))
        failed = run(work, env, log, "qa", "-m", *common, "name=failing", "reader.max_retries=0")
        assert failed.returncode != 0 and b"memorybench: error: " in failed.stderr, failed.stderr
        assert b"Error executing job with overrides: " in failed.stderr, failed.stderr  # Hydra's own line
        planned = run(work, env, log, "plan", *common, "name=secret")
        assert planned.returncode == 0 and pack.name.encode() in planned.stdout, planned.stderr
        judge_url = f"http://judgeuser:{judge_password}@{_hostport(judge)}/v1?api-version=1&access_token={query_token}"
        judged = run(
            work,
            env,
            log,
            "autorater",
            str(pack),
            "judge=openai_compatible",
            f"judge.base_url='{judge_url}'",  # quoted: '=' in an override value
            "judge.model=judge-x",
            f"paths.cache={work / 'cache'}",
            "--quiet",
        )
        assert judged.returncode == 0, judged.stderr
        verified = run(work, env, log, "verify", str(pack))
        assert verified.returncode == 0 and verified.stdout.decode().strip() == f"ok {pack}", verified.stdout
        assert run(work, env, log, "aggregate", str(packs), "--out", str(work / "out")).returncode == 0, log[-1][1].stderr
        tracked = run(work, env, log, "track", str(pack), "--uri", f"sqlite:///{work / 'mlflow.db'}")
        assert tracked.returncode == 0, tracked.stderr

    # teeth: each credential was sent as one, to the right path, and came back in the answers
    assert {h.get("authorization") for h in reader.headers} == {f"Bearer {key}"}
    assert set(reader.paths) == {"/v1/chat/completions"}
    assert {h.get("authorization") for h in judge.headers} == {f"Basic {basic}"}
    assert set(judge.paths) == {f"/v1/chat/completions?api-version=1&access_token={query_token}"}
    predictions = [json.loads(line) for line in (pack / "predictions.jsonl").read_text().splitlines()]
    assert {p["prediction"] for p in predictions} == {"my key is Bearer ***"}
    assert f"http://{_hostport(reader)}/v1" in (pack / "config.resolved.yaml").read_text()
    sweeps = sorted((work / "sweeps").glob("*/multirun.yaml"))  # beside the packs root, never in the cwd
    assert len(sweeps) == 2 and all(f"reader.base_url=http://{_hostport(reader)}/v1" in s.read_text() for s in sweeps), sweeps
    examples = pq.read_table(work / "out" / "collected" / "examples.parquet").to_pandas().to_csv()
    assert "my key is Bearer ***" in examples

    files = every_file(tmp_path)
    written = {p.relative_to(tmp_path).as_posix() for p in files}
    assert "work/out/collected/examples.parquet" in written and any("/artifacts/" in p for p in written), sorted(written)
    needles = [
        key.encode(),
        key[len("sk-test-") :].encode(),
        judge_password.encode(),
        basic.encode(),
        query_token.encode(),
        query_token[4:-4].encode(),
    ]
    hits = [str(p) for p in files for needle in needles if needle in p.read_bytes()]
    hits += [f"examples.parquet ({needle!r})" for needle in needles if needle.decode() in examples]
    hits += [f"{name} stdout/stderr" for name, done in log for needle in needles if needle in done.stdout + done.stderr]
    assert hits == [], hits
