"""The gateway's upstream side: a small pool of keep-alive connections to the upstream base
URL, through the environment's proxy, and how long a retry waits.

Proxies are chosen as curl, requests and httpx choose them, with the standard library's own
reading of the environment (`urllib.request.getproxies_environment`,
`proxy_bypass_environment`): `HTTPS_PROXY` / `HTTP_PROXY` (lower case first), `NO_PROXY`
entries matching the host or a domain it is in, on a dot boundary (`example.com` covers
`api.example.com`, never `badexample.com`), and `NO_PROXY=*` for no proxy at all; a loopback
upstream never goes through one. Credentials in the proxy URL (`http://user:pass@proxy:3128`)
are sent as `Proxy-Authorization: Basic` on the tunnel's CONNECT, never to the upstream.

A retry waits what the upstream asked (`Retry-After` in seconds or as an HTTP date,
`retry-after-ms`), capped at RETRY_MAX_WAIT_S, else full jitter (`memorybench.llm.retry`).
"""

from __future__ import annotations

import base64
import http.client
import threading
import urllib.parse
import urllib.request
from typing import Any

from memorybench.llm.retry import retry_after_seconds, retry_wait

__all__ = ["BACKOFF_BASE_S", "RETRY_MAX_WAIT_S", "Upstream", "proxy_for", "retry_delay"]

RETRY_MAX_WAIT_S = 30.0
#: the ceiling of the first jittered wait; it doubles with each retry
BACKOFF_BASE_S = 0.5
_LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})


def retry_delay(resp: http.client.HTTPResponse | None, retries: int) -> tuple[float, bool]:
    """Seconds before retry number `retries` (1-based) of a request `resp` answered (None: no
    answer), and whether they are the upstream's `Retry-After` (else our jittered backoff)."""
    asked = retry_after_seconds(resp.headers) if resp is not None else None
    return retry_wait(retries, base_s=BACKOFF_BASE_S, max_s=RETRY_MAX_WAIT_S, asked=asked), asked is not None


def proxy_for(scheme: str, host: str) -> urllib.parse.SplitResult | None:
    """The proxy URL the environment names for `scheme://host`, or None (no proxy, a loopback
    host, or one `NO_PROXY` covers)."""
    proxies = urllib.request.getproxies_environment()
    url = proxies.get(scheme)
    if not url or host.lower() in _LOOPBACK or urllib.request.proxy_bypass_environment(host, proxies):
        return None
    proxy = urllib.parse.urlsplit(url if "://" in url else f"http://{url}")
    return proxy if proxy.hostname else None


class Upstream:
    """Keep-alive connections to the upstream base URL (a small pool; one request per connection at a time)."""

    def __init__(self, base_url: str, timeout_s: float) -> None:
        url = urllib.parse.urlsplit(base_url)
        if url.scheme not in ("http", "https") or not url.hostname:
            raise SystemExit(f"gateway: upstream {base_url!r} is not an http(s) URL")
        self.https = url.scheme == "https"
        self.host, self.port = url.hostname, url.port or (443 if self.https else 80)
        self.base_path = url.path.rstrip("/")
        self.timeout_s = timeout_s
        self._idle: list[http.client.HTTPConnection] = []
        self._lock = threading.Lock()
        self.proxy = proxy_for(url.scheme, self.host)
        self._tunnel_headers: dict[str, str] = {}
        if self.proxy is not None and self.proxy.username is not None:
            user = urllib.parse.unquote(self.proxy.username)
            password = urllib.parse.unquote(self.proxy.password or "")
            token = base64.b64encode(f"{user}:{password}".encode()).decode("ascii")
            self._tunnel_headers["Proxy-Authorization"] = f"Basic {token}"

    def path(self, suffix: str) -> str:
        return self.base_path + suffix

    def get(self) -> tuple[http.client.HTTPConnection, bool]:
        """A connection and whether it was reused (a reused one may have been closed by the server)."""
        with self._lock:
            if self._idle:
                return self._idle.pop(), True
        conn: Any
        if self.proxy is not None:
            cls = http.client.HTTPSConnection if self.https else http.client.HTTPConnection
            conn = cls(self.proxy.hostname, self.proxy.port or 8080, timeout=self.timeout_s)
            conn.set_tunnel(self.host, self.port, headers=dict(self._tunnel_headers))
        elif self.https:
            conn = http.client.HTTPSConnection(self.host, self.port, timeout=self.timeout_s)
        else:
            conn = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout_s)
        return conn, False

    def put(self, conn: http.client.HTTPConnection) -> None:
        with self._lock:
            self._idle.append(conn)
