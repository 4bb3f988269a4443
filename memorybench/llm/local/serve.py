"""Entry point of the embedded model's server process (started by `LocalServer`).

    python -m memorybench.llm.local.serve --model FILE.gguf --alias NAME --n-ctx N --port P \
        --parent-pid PID [--pdeathsig] [--chat-format memorybench-completion]

It registers our completion chat format, then runs llama-cpp-python's OpenAI-compatible
app (``llama_cpp.server.app.create_app``) under uvicorn on 127.0.0.1, as
``python -m llama_cpp.server`` would, with the settings that matter on a CPU:

- ``logits_all=False``: the default (True) keeps n_ctx x vocab floats (32k x 262k for
  Gemma: tens of GB);
- ``flash_attn=True``: a large prefill speedup on long prompts;
- ``n_batch=n_ubatch=512``; threads = the CPUs this process may run on;
- no prompt cache (``cache=False``): llama-cpp-python keeps the last request's tokens in
  its single KV slot and re-evaluates only the suffix after the common prefix
  (``Llama.generate: N prefix-match hit`` in the log), which is what makes the second
  question on the same memory fast; the RAM prompt cache would only add a copy of the
  whole state per request. Gemma 3's sliding-window layers need the full-size SWA cache
  for that (llama.cpp's default ``swa_full=true``); we pass it explicitly.
- ``--prefix-reuse exact`` (default): the prompt is evaluated in chunks that depend on
  the prompt alone, and only whole shared chunks are reused, so an answer never depends
  on the previous request (see :mod:`memorybench.llm.local.prefix_reuse`).
- ``--prefill-dir DIR`` (exact reuse only): a memory prefix's KV state is kept under DIR
  and restored by the next server process instead of evaluated (see
  :mod:`memorybench.llm.local.prefill_store`); a completion served from a restored state
  says so in ``usage.restored_tokens`` (added to the JSON reply by `_RestoredTokens`).

The process never outlives memorybench: with ``--pdeathsig`` the kernel SIGKILLs it
when the thread that started it dies (Linux prctl), and a watcher thread exits it as
soon as its parent pid changes (the second guard, and the only one elsewhere).
"""

from __future__ import annotations

import argparse
import ctypes
import errno
import os
import signal
import socket
import sys
import threading
import time
from pathlib import Path

EXIT_PORT_TAKEN = 98
EXIT_ORPHANED = 97
PR_SET_PDEATHSIG = 1


def _set_pdeathsig() -> None:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):  # not Linux: the watcher thread remains
        pass


def _watch_parent(parent_pid: int, interval_s: float = 0.5) -> None:
    def loop() -> None:
        while True:
            if os.getppid() != parent_pid:
                os._exit(EXIT_ORPHANED)
            time.sleep(interval_s)

    threading.Thread(target=loop, name="parent-watch", daemon=True).start()


def _check_port(host: str, port: int) -> None:
    """Exit with EXIT_PORT_TAKEN before loading the model if the port is in use."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn does
    try:
        sock.bind((host, port))
    except OSError as e:
        if e.errno == errno.EADDRINUSE:
            print(f"memorybench-serve: port {port} on {host} is already in use", file=sys.stderr, flush=True)
            sys.exit(EXIT_PORT_TAKEN)
        raise
    finally:
        sock.close()


def _scrub_settings_env(field_names: set[str]) -> None:
    """pydantic-settings would read MODEL, PORT, API_KEY, CACHE, ... from the environment."""
    lowered = {n.lower() for n in field_names} | {"config_file"}
    for key in list(os.environ):
        if key.lower() in lowered:
            del os.environ[key]


#: completion id -> prompt tokens restored from the prefill store (read once by _RestoredTokens)
_RESTORED: dict[str, int] = {}


def _answer_with_alias(alias: str) -> None:
    """Completions name the model `alias`, whatever the request asked for; a completion
    served from a restored prefill state is noted in `_RESTORED` by its id."""
    import llama_cpp

    for name in ("create_chat_completion", "create_completion"):
        original = getattr(llama_cpp.Llama, name)

        def patched(self, *args, __original=original, **kwargs):  # type: ignore[no-untyped-def]
            kwargs["model"] = alias
            self._memorybench_restored = 0
            result = __original(self, *args, **kwargs)
            restored = getattr(self, "_memorybench_restored", 0)
            if restored and isinstance(result, dict) and isinstance(result.get("id"), str):
                if len(_RESTORED) > 1000:
                    _RESTORED.clear()
                _RESTORED[result["id"]] = int(restored)
            return result

        setattr(llama_cpp.Llama, name, patched)


class _RestoredTokens:
    """ASGI wrapper: adds ``usage.restored_tokens`` to a JSON completion served from a
    restored prefill (the server's response model would drop a key set on the dict)."""

    def __init__(self, app) -> None:  # type: ignore[no-untyped-def]
        self.app = app

    async def __call__(self, scope, receive, send) -> None:  # type: ignore[no-untyped-def]
        if scope.get("type") != "http" or not str(scope.get("path", "")).endswith("completions"):
            await self.app(scope, receive, send)
            return
        start: dict = {}
        body: list[bytes] = []

        async def wrapped(message) -> None:  # type: ignore[no-untyped-def]
            if message["type"] == "http.response.start":
                headers = dict(message.get("headers") or [])
                if b"application/json" not in headers.get(b"content-type", b""):
                    start["pass"] = True
                    await send(message)
                    return
                start["message"] = message
                return
            if message["type"] != "http.response.body" or start.get("pass"):
                await send(message)
                return
            body.append(message.get("body", b""))
            if message.get("more_body"):
                return
            await send_all(b"".join(body))

        async def send_all(data: bytes) -> None:
            import json

            try:
                payload = json.loads(data)
                restored = _RESTORED.pop(payload.get("id"), 0) if isinstance(payload, dict) else 0
                if restored and isinstance(payload.get("usage"), dict):
                    payload["usage"]["restored_tokens"] = restored
                    data = json.dumps(payload, ensure_ascii=False).encode("utf-8")
            except (ValueError, TypeError):
                pass
            message = dict(start["message"])
            message["headers"] = [(k, v) for k, v in message.get("headers") or [] if k.lower() != b"content-length"]
            message["headers"].append((b"content-length", str(len(data)).encode()))
            await send(message)
            await send({"type": "http.response.body", "body": data, "more_body": False})

        await self.app(scope, receive, wrapped)


def _prefill_store(args: argparse.Namespace, threads: int):  # type: ignore[no-untyped-def]
    """The on-disk prefill store for these settings, or None (no folder, or bound 0)."""
    if not args.prefill_dir or args.prefix_reuse != "exact" or args.prefill_max_mb <= 0 or not args.model_sha256:
        return None
    from memorybench.llm.local.prefill_store import PrefillStore, settings

    context = {
        "n_ctx": args.n_ctx,
        "n_batch": args.n_batch,
        "n_ubatch": args.n_batch,
        "n_threads": threads,
        "n_threads_batch": threads,
        "flash_attn": not args.no_flash_attn,
        "swa_full": True,
        "chat_format": args.chat_format,
        "logits_all": False,
        "n_gpu_layers": 0,
    }
    return PrefillStore(
        Path(args.prefill_dir),
        settings(args.model_sha256, **context),
        max_bytes=args.prefill_max_mb * 2**20,
        min_tokens=args.prefill_min_tokens,
    )


def _swa_full_by_default() -> None:
    """The server's settings cannot pass swa_full; make the Llama default explicit."""
    import llama_cpp

    original_init = llama_cpp.Llama.__init__

    def init(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        kwargs.setdefault("swa_full", True)
        original_init(self, *args, **kwargs)

    llama_cpp.Llama.__init__ = init  # type: ignore[method-assign]


def default_threads() -> int:
    """The CPUs this process may run on (cgroup/affinity aware where the OS says)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def _warm_up() -> None:
    """One tiny completion before the port opens: a build that cannot run on this CPU
    (e.g. AMX code in a VM that does not enable AMX: SIGILL) fails here, at start, where
    `LocalServer` reports it, not at the first question."""
    from llama_cpp.server import app as app_module

    proxy = getattr(app_module, "_llama_proxy", None)
    if proxy is None:
        return
    llama = proxy()
    llama.create_completion("The quick brown fox jumps over the lazy dog. " * 4, max_tokens=2, temperature=0.0)
    llama.reset()


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m memorybench.llm.local.serve")
    p.add_argument("--model", required=True, help="GGUF file")
    p.add_argument("--alias", required=True, help="model id answered in /v1/models and completions")
    p.add_argument("--n-ctx", type=int, required=True)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--chat-format", default=None)
    p.add_argument("--n-threads", type=int, default=None)
    p.add_argument("--n-batch", type=int, default=512)
    p.add_argument("--no-flash-attn", action="store_true")
    p.add_argument("--cache", action="store_true", help="llama-cpp-python's RAM prompt cache (off: not needed)")
    p.add_argument(
        "--prefix-reuse",
        choices=("exact", "token"),
        default="exact",
        help="exact: answers bitwise independent of the previous request (see prefix_reuse.py); "
        "token: llama-cpp-python's plain longest-common-prefix reuse (order-dependent answers)",
    )
    p.add_argument("--prefill-dir", default=None, help="keep and restore memory prefix states here (exact reuse only)")
    p.add_argument("--prefill-max-mb", type=int, default=4096, help="bound of --prefill-dir (least recently used out)")
    p.add_argument("--prefill-min-tokens", type=int, default=1024, help="shorter prefixes are not kept")
    p.add_argument("--model-sha256", default=None, help="the model file's sha256 (verified by LocalServer): the store's key")
    p.add_argument("--parent-pid", type=int, default=None)
    p.add_argument("--pdeathsig", action="store_true")
    p.add_argument("--quiet", action="store_true", help="no llama.cpp verbose output")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    if args.parent_pid is not None:
        if args.pdeathsig:
            _set_pdeathsig()
        if os.getppid() != args.parent_pid:  # the parent died before prctl took effect
            sys.exit(EXIT_ORPHANED)
        _watch_parent(args.parent_pid)
    _check_port(args.host, args.port)

    import uvicorn
    from llama_cpp.server.app import create_app
    from llama_cpp.server.settings import ModelSettings, ServerSettings, Settings

    from memorybench.llm.local import chat_formats, prefix_reuse

    _scrub_settings_env(set(Settings.model_fields))
    chat_formats.register()
    _answer_with_alias(args.alias)
    _swa_full_by_default()
    threads = max(1, args.n_threads or default_threads())
    if args.prefix_reuse == "exact":
        prefix_reuse.install(_prefill_store(args, threads))
    server_settings = ServerSettings(host=args.host, port=args.port, api_key=None, interrupt_requests=False)
    model_settings = ModelSettings(
        model=args.model,
        model_alias=args.alias,
        chat_format=args.chat_format,
        n_ctx=args.n_ctx,
        n_batch=args.n_batch,
        n_ubatch=args.n_batch,
        n_threads=threads,
        n_threads_batch=threads,
        n_gpu_layers=0,
        logits_all=False,
        flash_attn=not args.no_flash_attn,
        cache=args.cache,
        use_mlock=False,
        verbose=not args.quiet,
    )
    app = create_app(server_settings=server_settings, model_settings=[model_settings])
    _warm_up()
    print(f"memorybench-serve: {args.alias} loaded, n_ctx={args.n_ctx}, threads={threads}", file=sys.stderr, flush=True)
    uvicorn.run(_RestoredTokens(app), host=args.host, port=args.port, log_level="info", timeout_graceful_shutdown=2)


if __name__ == "__main__":
    main()
