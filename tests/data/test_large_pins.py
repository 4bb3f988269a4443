"""A large pinned file (LongMemEval's) is fetched by a streamed download over real HTTP that
resumes a partial file, checks size and sha256 before the file is in place, and says both
hashes in one line on a mismatch."""

from __future__ import annotations

import hashlib
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from memorybench.data import large_pins
from memorybench.data.large_pins import LargePin, fetch_large, verify_large
from memorybench.errors import UserError

BODY = bytes(range(256)) * 4096  # 1 MiB


class Server:
    """Serves BODY at any path; honours `Range: bytes=N-` with a 206 unless `ranges` is off."""

    def __init__(self, ranges: bool = True) -> None:
        self.ranges, self.requests = ranges, []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802
                server.requests.append(self.headers.get("Range"))
                start = int(self.headers["Range"].split("=")[1].rstrip("-")) if server.ranges and self.headers.get("Range") else 0
                body = BODY[start:]
                self.send_response(206 if start else 200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)

    def __enter__(self):
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()


def pin(sha: str | None = None, size: int = len(BODY)) -> LargePin:
    return LargePin(
        "longmemeval/test.json", "owner/data", "rev1", "test.json", size, sha or hashlib.sha256(BODY).hexdigest(), "MIT"
    )


def test_a_partial_download_resumes_and_the_file_is_verified(tmp_path, monkeypatch):
    with Server() as server:
        monkeypatch.setattr(large_pins, "_HF", f"http://127.0.0.1:{server.httpd.server_port}")
        part = tmp_path / "longmemeval" / "test.json.part"
        part.parent.mkdir()
        part.write_bytes(BODY[:300_000])  # a killed download
        path = fetch_large(pin(), tmp_path, log=lambda line: None)
    assert path.read_bytes() == BODY and not part.exists()
    assert server.requests == ["bytes=300000-"]
    assert verify_large(pin(), path) == path


def test_a_server_without_ranges_starts_over(tmp_path, monkeypatch):
    with Server(ranges=False) as server:
        monkeypatch.setattr(large_pins, "_HF", f"http://127.0.0.1:{server.httpd.server_port}")
        part = tmp_path / "longmemeval" / "test.json.part"
        part.parent.mkdir()
        part.write_bytes(b"x" * 1000)
        lines: list[str] = []
        path = fetch_large(pin(), tmp_path, log=lines.append)
    assert path.read_bytes() == BODY and any("starting over" in line for line in lines)


def test_a_wrong_hash_is_one_line_with_both_and_keeps_nothing(tmp_path, monkeypatch):
    with Server() as server:
        monkeypatch.setattr(large_pins, "_HF", f"http://127.0.0.1:{server.httpd.server_port}")
        with pytest.raises(UserError) as info:
            fetch_large(pin(sha="0" * 64), tmp_path, log=lambda line: None)
    message = str(info.value)
    assert "0" * 64 in message and hashlib.sha256(BODY).hexdigest() in message and "\n" not in message
    assert not (tmp_path / "longmemeval" / "test.json").exists() and not (tmp_path / "longmemeval" / "test.json.part").exists()


def test_a_file_of_the_wrong_size_in_the_pins_folder_is_refused(tmp_path):
    path = tmp_path / "test.json"
    path.write_bytes(BODY[:10])
    with pytest.raises(UserError, match=r"is 10 bytes, expected 1,048,576; delete it and run `memorybench fetch"):
        verify_large(pin(), path)
