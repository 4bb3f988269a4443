"""Our agent isolation against bubblewrap, property by property, with the same probe.

    python bench/sandbox_compare.py          # as root or with unprivileged user namespaces

`answer/agent/_isolation.py` builds the agent's sandbox from util-linux (`unshare`,
`setpriv`, a 40-line mount script). Issue 29 asked whether bubblewrap (the sandbox Codex
itself uses on Linux, which the Codex npm package ships as `codex-resources/bwrap`) should
replace it. This runs the probe that `Isolation.probe` runs before every Codex run
(`Isolation.findings`: CLI runs, no capability, no_new_privs, read-only system folders and
vendor folder, a minimal /dev, no writable /sys, the host's loopback unreachable, the model
endpoint's port bridged, `open_by_handle_at` refused, the host sees the agent's files owned
by a uid other than 0) under three wrappers laid out alike:

- ours: `Isolation.wrap`;
- bwrap: `bwrap --unshare-all --unshare-user --uid AGENT_ID` with the same binds;
- setpriv + bwrap: our privilege drop first (`setpriv` to AGENT_ID), then the same bwrap.

Prints each wrapper's findings (none: every property holds) and writes
``bench/results/sandbox_compare.json``. docs/design.md (security) quotes the result and
says why ours stays; tests/answer/test_sandbox_compare.py asserts the same verdicts.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import sys
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import report  # noqa: E402

from memorybench.answer.agent._cli import locate_cli  # noqa: E402
from memorybench.answer.agent._isolation import AGENT_ID, SYSTEM_LINKS, Isolation, Wrapper, system_roots  # noqa: E402
from memorybench.errors import UserError  # noqa: E402


def bwrap_binary(vendor: Path) -> str | None:
    """The bwrap the pinned Codex CLI ships (the one its own sandbox runs), else Debian's."""
    shipped = vendor / "codex-resources" / "bwrap"
    return str(shipped) if shipped.is_file() else shutil.which("bwrap")


def bwrap_wrapper(bwrap: str, isolation: Isolation, *, drop_first: bool) -> Wrapper:
    """`Isolation.wrap`'s layout in bubblewrap's flags: /usr and /etc (and the real /lib*)
    read-only, a minimal /dev, a fresh /proc and /tmp, the always-visible and read-only paths
    bound read-only, the visible ones writable, every namespace new, all capabilities dropped."""

    def wrap(argv: Sequence[str], *, cwd: Path, visible: Sequence[Path] = (), readonly: Sequence[Path] = ()) -> list[str]:
        line = [
            bwrap,
            "--unshare-all",
            "--unshare-user",
            "--uid",
            str(AGENT_ID),
            "--gid",
            str(AGENT_ID),
            "--die-with-parent",
            "--new-session",
            "--cap-drop",
            "ALL",
        ]
        for root in system_roots():
            line += ["--ro-bind", str(root), str(root)]
        for link in SYSTEM_LINKS:
            if os.path.islink(link):
                line += ["--symlink", os.readlink(link), link]
        line += ["--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]
        for path in (*isolation.always_visible, *(Path(r).resolve() for r in readonly)):
            line += ["--ro-bind", str(path), str(path)]
        for path in (Path(v).resolve() for v in visible):
            if drop_first:
                os.chown(path, AGENT_ID, AGENT_ID)
            line += ["--bind", str(path), str(path)]
        line += ["--chdir", str(cwd.resolve()), "--", *argv]
        if drop_first and os.geteuid() == 0:
            line = [
                "setpriv",
                f"--reuid={AGENT_ID}",
                f"--regid={AGENT_ID}",
                "--clear-groups",
                "--bounding-set=-all",
                "--inh-caps=-all",
                "--no-new-privs",
                "--",
                *line,
            ]
        return line

    return wrap


@contextlib.contextmanager
def model_endpoint() -> Iterator[int]:
    """A listening port on the host's 127.0.0.1 standing for the model endpoint to bridge."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(8)
        yield s.getsockname()[1]


def compare(scratch: Path) -> dict[str, Any]:
    """Each wrapper's findings under the same probe; None when it could not start (why)."""
    cli = locate_cli()
    bwrap = bwrap_binary(cli.vendor_dir)
    results: dict[str, Any] = {"binary": bwrap}
    with model_endpoint() as port:
        isolation = Isolation.create(scratch / "root", [cli.vendor_dir], endpoint=f"http://127.0.0.1:{port}/v1")
        try:
            wrappers: dict[str, Wrapper | None] = {"ours": isolation.wrap}
            if bwrap:
                wrappers["bwrap"] = bwrap_wrapper(bwrap, isolation, drop_first=False)
                wrappers["setpriv + bwrap"] = bwrap_wrapper(bwrap, isolation, drop_first=True)
            for name, wrap in wrappers.items():
                workspace = scratch / name.replace(" ", "").replace("+", "_")
                workspace.mkdir(parents=True)
                try:
                    results[name] = isolation.findings([], cwd=workspace, visible=[workspace], binary=cli.binary, wrap=wrap)
                except UserError as e:
                    results[name] = [f"could not start: {e}"]
        finally:
            isolation.close()
    return results


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="sandbox-compare-") as tmp:
        # bwrap started after the drop must reach every bound path as AGENT_ID: a temp folder's
        # 0700 stops it ("Can't find source path"), where ours binds as root, then drops
        os.chmod(tmp, 0o755)
        results = compare(Path(tmp))
    figures: dict[str, Any] = {"bwrap binary": results.pop("binary") or "not found (apt-get install bubblewrap)"}
    for name, bad in results.items():
        figures[f"{name}: findings"] = bad or "none: every probed property holds"
    report("sandbox_compare", figures)


if __name__ == "__main__":
    main()
