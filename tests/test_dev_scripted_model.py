"""`memorybench dev scripted-model`: the scripted OpenAI-compatible server alone, without the
cloud emulators (issue 30, item 9): its environment printed, a judge request answered with a
parsable label, SIGTERM stops it."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import urllib.request


def test_scripted_model_starts_alone_answers_and_stops(tmp_path):
    proc = subprocess.Popen(
        [sys.executable, "-m", "memorybench.cli", "dev", "scripted-model", "--env-file", str(tmp_path / "env")],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        lines = []
        for line in proc.stdout:
            if line.startswith("# ready"):
                break
            lines.append(line.strip())
        env = dict(line.removeprefix("export ").split("=", 1) for line in lines)
        assert set(env) == {"READER", "JUDGE"} and env["READER"].startswith("http://127.0.0.1:")
        assert (tmp_path / "env").read_text("utf-8").splitlines() == lines
        body = {
            "model": "scripted",
            "messages": [{"role": "user", "content": "judge"}],
            "response_format": {"type": "json_object"},
        }
        request = urllib.request.Request(
            f"{env['JUDGE']}/chat/completions", json.dumps(body).encode(), {"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            reply = json.load(response)
        assert json.loads(reply["choices"][0]["message"]["content"]) == {"label": "CORRECT"}
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0 and "scripted model stopped" in err and "Traceback" not in err
