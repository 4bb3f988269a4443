"""Gold out of reach: run the agent in a minimal root where only what it needs exists.

Codex's read-only sandbox may read the whole filesystem, and so would the agent: the
dataset, the pins cache and every pack hold gold answers. So each `codex exec` runs
inside new mount, PID and network namespaces (`unshare`) whose root is an empty tmpfs
holding only /usr, /etc and the real /lib* (all read-only), a minimal /dev (null, zero,
full, random, urandom, tty, a private devpts and a /dev/shm tmpfs), no /sys, a fresh
/proc and /tmp, the CLI's own vendor folder (read-only) and the run's scratch paths
(CODEX_HOME, HOME, TMPDIR, the workspace), each bound at its own path; `pivot_root`
then makes that the whole filesystem. Everything else (the repo, the data, the packs,
the caches, other users' homes, the disks) does not exist for the agent. Codex's own
bubblewrap sandbox runs inside it.

Then the agent drops to an unprivileged identity before `exec`, also when memorybench
runs as root: `setpriv` (uid/gid AGENT_ID of the host, no groups, no inheritable or
ambient capabilities, no_new_privs) and a new user namespace of its own (`unshare
--user`, AGENT_ID mapped to itself) for Codex's sandbox to nest in. Its `exec` as a uid
other than 0 clears the permitted and effective sets: the agent holds no capability
anywhere and, with no_new_privs, can gain none. As root
the wrapper first hands the writable scratch paths to AGENT_ID (`chown -R`, links not
followed). As another user the outer namespaces come from `unshare --user
--map-root-user` and the same drop applies inside.

The network namespace is fresh: the agent's 127.0.0.1 is its own. A model endpoint on
the host's 127.0.0.1 or localhost is bridged port for port (`_bridge`), so the base URL
Codex is given does not change. An https endpoint elsewhere is reached through
HTTPS_PROXY=127.0.0.1:PROXY_PORT inside, bridged to a CONNECT that the harness allows to
that endpoint's host and port only. A plain-http endpoint elsewhere is refused before
the first question unless `answerer.network=shared` (the host's network, as before,
recorded in cli.json).

Default-deny, not a list of hidden paths: a copy of the data in a place nobody thought
of is out of reach too. What stays visible is the system folders: a secret placed under
/usr or /etc is refused before any run (`check_secrets`). `Isolation.probe` proves each
property from inside before the first question (the CLI runs; no sentinel file is
there; no capability; the host sees the agent's files owned by a uid other than 0; the
vendor folder is not writable; no block device and no /sys that can be written; the
host's loopback unreachable and the bridged endpoint reachable; `open_by_handle_at`
refused); where one fails the harness refuses with one line.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from memorybench.answer.agent._bridge import BRIDGED_HOSTS, INNER, PROXY_PORT, Bridge, loopback_port
from memorybench.errors import UserError

SYSTEM_DIRS = ("/usr", "/etc")
SYSTEM_LINKS = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
#: the only device nodes the agent gets (bound from the host's /dev), besides a private devpts
DEVICES = ("null", "zero", "full", "random", "urandom", "tty")
#: files under /etc that may be symlinks out of it (DNS for a remote provider)
ETC_FILES = ("/etc/resolv.conf", "/etc/hosts", "/etc/nsswitch.conf")
#: the host uid and gid the agent runs as when memorybench runs as root (no account needs to exist)
AGENT_ID = 64_000
#: what runs argv with cwd, showing visible (writable) and readonly paths: `Isolation.wrap`'s signature
Wrapper = Callable[..., list[str]]
#: isolated: a network namespace of its own (the endpoint bridged); shared: the host's network
NETWORKS = ("isolated", "shared")

# $1 new root mountpoint, $2 working directory, $3 owner of the writable paths ("-": keep),
# $4 network (isolated|shared), $5 python, $6 bridge code, $7 bridge control socket, $8 bridged ports,
# then read-only paths, "--", writable paths, "--", the command (the drop, then the CLI).
SCRIPT = r"""
set -eu
PATH=/usr/sbin:/usr/bin:/sbin:/bin
R="$1"; WD="$2"; OWNER="$3"; NET="$4"; PY="$5"; BRIDGE="$6"; CTL="$7"; PORTS="$8"; shift 8
place() {
  if [ -d "$1" ]; then mkdir -p "$R$1"
  else mkdir -p "$(dirname "$R$1")"; [ -e "$R$1" ] || : > "$R$1"; fi
}
# bound recursively, then every mount under it made read-only (a container's /etc/hosts is one)
bind_ro() {
  place "$1"; mount --rbind "$1" "$R$1"
  while read -r _ _ _ _ m _; do
    case "$m" in "$R$1"|"$R$1"/*) mount -o remount,bind,ro,nosuid,nodev "$m";; esac
  done < /proc/self/mountinfo
}
mount -t tmpfs -o mode=0755 memorybench-agent-root "$R"
for d in /usr /etc; do if [ -d "$d" ]; then bind_ro "$d"; fi; done
for l in /bin /sbin /lib /lib32 /lib64 /libx32; do
  if [ -L "$l" ]; then ln -s "$(readlink "$l")" "$R$l"
  elif [ -d "$l" ]; then bind_ro "$l"; fi
done
mkdir -p "$R/dev" "$R/proc" "$R/tmp"
mount -t tmpfs -o mode=0755,nosuid,noexec memorybench-agent-dev "$R/dev"
for n in null zero full random urandom tty; do
  [ -c "/dev/$n" ] || continue
  : > "$R/dev/$n"; mount --bind "/dev/$n" "$R/dev/$n"
done
mkdir "$R/dev/pts" "$R/dev/shm"
mount -t devpts -o newinstance,ptmxmode=0666,mode=0620,nosuid,noexec memorybench-agent-pts "$R/dev/pts"
ln -s pts/ptmx "$R/dev/ptmx"; ln -s /proc/self/fd "$R/dev/fd"
ln -s /proc/self/fd/0 "$R/dev/stdin"; ln -s /proc/self/fd/1 "$R/dev/stdout"; ln -s /proc/self/fd/2 "$R/dev/stderr"
mount -t tmpfs -o mode=1777,nosuid,nodev memorybench-agent-shm "$R/dev/shm"
mount -o remount,bind,ro "$R/dev"
mount -t proc -o nosuid,nodev,noexec proc "$R/proc"
mount -t tmpfs -o mode=1777,nosuid,nodev memorybench-agent-tmp "$R/tmp"
while [ "$1" != "--" ]; do bind_ro "$1"; shift; done
shift
while [ "$1" != "--" ]; do
  if [ "$OWNER" != - ]; then chown -R -h -P "$OWNER" "$1"; fi
  place "$1"; mount --rbind "$1" "$R$1"
  # nosuid,nodev where the kernel lets us (a user namespace cannot drop a locked noexec, say)
  mount -o remount,bind,nosuid,nodev "$R$1" 2>/dev/null || true
  shift
done
shift
if [ "$NET" = isolated ]; then "$PY" -I -S -c "$BRIDGE" "$CTL" "$PORTS"; fi
cd "$R"; mkdir .oldroot; pivot_root . .oldroot; umount -l /.oldroot; rmdir /.oldroot
cd "$WD"
exec "$@"
"""

PROBE = r"""
for p in "$@"; do
  if [ -e "$p" ]; then echo "still readable inside the agent's root: $p"; exit 3; fi
done
"""

#: run inside as the agent (stdlib only): prints a JSON list of what does not hold
PROBE_PY = r"""
import ctypes, errno, json, os, socket, stat, sys
cfg, bad = json.loads(sys.argv[1]), []
status = {}
with open("/proc/self/status") as f:
    for line in f:
        key, _, value = line.partition(":")
        status[key] = value.strip()
for key in ("CapInh", "CapPrm", "CapEff", "CapAmb"):
    if int(status.get(key, "0"), 16):
        bad.append(f"the agent holds capabilities ({key} {status[key]})")
if status.get("NoNewPrivs") != "1":
    bad.append("the agent may gain privileges (no_new_privs is not set)")
with open(cfg["marker"], "w") as f:
    f.write("probe")
for p in cfg["readonly"]:
    try:
        if os.path.isdir(p):
            target = os.path.join(p, ".memorybench-probe")
            os.close(os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
            os.unlink(target)
        else:
            os.close(os.open(p, os.O_WRONLY | os.O_APPEND))
        bad.append(f"{p} is writable by the agent")
    except OSError:
        pass
allowed = {"/dev/" + n for n in ("null", "zero", "full", "random", "urandom", "tty")}
for root, dirs, files in os.walk("/dev"):
    for name in dirs + files:
        path = os.path.join(root, name)
        mode = os.lstat(path).st_mode
        if stat.S_ISBLK(mode):
            bad.append(f"the block device {path} is in the agent's /dev")
        elif stat.S_ISCHR(mode) and path not in allowed and not path.startswith("/dev/pts/"):
            bad.append(f"the device {path} is in the agent's /dev")
if os.path.exists("/sys") and not os.statvfs("/sys").f_flag & os.ST_RDONLY:
    bad.append("/sys is writable in the agent's root")
if cfg.get("host_port"):
    try:
        socket.create_connection(("127.0.0.1", cfg["host_port"]), timeout=3).close()
        bad.append(f"the host's 127.0.0.1:{cfg['host_port']} answers the agent (the network is shared)")
    except OSError:
        pass
for port in cfg.get("bridged", []):
    try:
        socket.create_connection(("127.0.0.1", port), timeout=10).close()
    except OSError as e:
        bad.append(f"the model endpoint's port {port} is not reachable through the bridge ({e.strerror})")
try:
    libc = ctypes.CDLL(None, use_errno=True)
    class Handle(ctypes.Structure):
        _fields_ = [("handle_bytes", ctypes.c_uint), ("handle_type", ctypes.c_int), ("f_handle", ctypes.c_ubyte * 128)]
    handle, mount_id = Handle(handle_bytes=128), ctypes.c_int()
    if libc.name_to_handle_at(-100, cfg["marker"].encode(), ctypes.byref(handle), ctypes.byref(mount_id), 0) != 0:
        handle = Handle(handle_bytes=8, handle_type=1)  # a forged one: the refusal comes before any decoding
    at = os.open("/", os.O_RDONLY | os.O_DIRECTORY)
    fd = libc.open_by_handle_at(at, ctypes.byref(handle), os.O_RDONLY)
    if fd >= 0:
        os.close(fd)
        bad.append("open_by_handle_at is allowed to the agent")
except (OSError, AttributeError) as e:
    bad.append(f"cannot check open_by_handle_at ({e})")
print(json.dumps(bad))
"""
MARKER = "memorybench-probe-owner"


def _is_under(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def system_roots() -> list[Path]:
    """What the agent's root shares with the machine (besides the visible paths of a call)."""
    roots = [Path(d) for d in SYSTEM_DIRS if Path(d).is_dir()]
    roots += [Path(d) for d in SYSTEM_LINKS if Path(d).is_dir() and not Path(d).is_symlink()]
    return roots


def etc_extras() -> list[Path]:
    """DNS files under /etc that point outside it (e.g. into /run): bound file by file."""
    extras = []
    for name in ETC_FILES:
        p = Path(name)
        if p.is_symlink() and p.exists():
            target = p.resolve()
            if not any(_is_under(target, r) for r in system_roots()):
                extras.append(target)
    return extras


def _tool(name: str) -> str:
    return shutil.which(name) or f"/usr/bin/{name}"


def _endpoint(url: str) -> str:
    """scheme://host:port of `url`, without userinfo, path or query (nothing secret)."""
    parts = urlsplit(url)
    try:
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        port = ""
    return f"{parts.scheme}://{parts.hostname or ''}{port}"


def cert_paths() -> list[Path]:
    """SSL_CERT_FILE / SSL_CERT_DIR (passed to the CLI) outside the system folders: bound read-only."""
    extras = []
    for name in ("SSL_CERT_FILE", "SSL_CERT_DIR"):
        value = os.environ.get(name)
        if value and Path(value).exists():
            target = Path(value).resolve()
            if not any(_is_under(target, r) for r in system_roots()):
                extras.append(target)
    return extras


@dataclass(frozen=True)
class Isolation:
    #: an empty folder to mount the new root on (inside a private mount namespace)
    mountpoint: Path
    #: paths every call sees, read-only (the CLI's vendor folder, DNS files outside /etc)
    always_visible: tuple[Path, ...]
    #: isolated | shared (see NETWORKS)
    network: str = "isolated"
    #: the bridge to the model endpoint (network isolated): its loopback port, or a CONNECT to a remote https one
    bridge: Bridge | None = None

    @classmethod
    def create(
        cls, mountpoint: Path, always_visible: Sequence[Path], *, endpoint: str | None = None, network: str = "isolated"
    ) -> Isolation:
        """`endpoint`: the model's base URL the agent must reach; `network`: `answerer.network`."""
        if network not in NETWORKS:
            raise UserError(f"answerer.network={network!r} is unknown; use one of {', '.join(NETWORKS)}")
        mountpoint.mkdir(parents=True, exist_ok=True)
        mountpoint = mountpoint.resolve()
        bridge = None
        if network == "isolated" and endpoint:
            port = loopback_port(endpoint)
            parts = urlsplit(endpoint)
            if port is not None:
                bridge = Bridge((port,), upstream_host=parts.hostname or "127.0.0.1")
            elif parts.scheme == "https" and parts.hostname:
                try:
                    remote_port = parts.port or 443
                except ValueError:
                    remote_port = 443
                bridge = Bridge(connect_to=(parts.hostname, remote_port))
            else:
                raise UserError(
                    f"the model endpoint {_endpoint(endpoint)} is plain http and not on this machine's 127.0.0.1 or "
                    "localhost, so the agent's isolated network (answerer.network=isolated) cannot reach it: use its "
                    "https URL, serve it through a local gateway on 127.0.0.1, or set answerer.network=shared"
                )
        shown = (*(p.resolve() for p in always_visible), *etc_extras(), *cert_paths())
        return cls(mountpoint, tuple(dict.fromkeys(shown)), network, bridge)

    def agent_env(self) -> dict[str, str]:
        """Environment the CLI needs to reach its endpoint through the bridge: HTTPS_PROXY for a
        remote endpoint; for a loopback one, NO_PROXY (a proxy of the host is out of reach inside)."""
        if self.bridge is None:
            return {}
        if self.bridge.connect_to is None:
            direct = ",".join(BRIDGED_HOSTS)
            return {"NO_PROXY": direct, "no_proxy": direct}
        proxy = f"http://127.0.0.1:{PROXY_PORT}"
        return {"HTTPS_PROXY": proxy, "https_proxy": proxy, "NO_PROXY": "", "no_proxy": ""}

    def close(self) -> None:
        if self.bridge is not None:
            self.bridge.close()

    @staticmethod
    def unshare_prefix() -> list[str]:
        flags = ["--mount", "--pid", "--fork", "--kill-child", "--propagation", "private"]
        if os.geteuid() != 0:
            flags = ["--user", "--map-root-user", *flags]
        return [_tool("unshare"), *flags]

    @staticmethod
    def drop_prefix() -> list[str]:
        """What runs the command as the agent: an unprivileged uid, no capabilities, its own user namespace."""
        # as root: host uid AGENT_ID, no groups, an empty bounding set. As another user the outer
        # namespace's root keeps its bounding set: emptied, the nested namespace could not map its uid
        ids = [f"--reuid={AGENT_ID}", f"--regid={AGENT_ID}", "--clear-groups", "--bounding-set=-all"] if os.geteuid() == 0 else []
        return [
            _tool("setpriv"),
            *ids,
            "--inh-caps=-all",
            "--no-new-privs",
            "--",
            _tool("unshare"),
            "--user",
            f"--map-user={AGENT_ID}",
            f"--map-group={AGENT_ID}",
            "--",
        ]

    def wrap(self, argv: Sequence[str], *, cwd: Path, visible: Sequence[Path] = (), readonly: Sequence[Path] = ()) -> list[str]:
        """`argv` run with `cwd` inside the minimal root that shows only `visible` (writable),
        `readonly` and always_visible, as the unprivileged agent."""
        ro = [str(p) for p in (*self.always_visible, *(Path(r).resolve() for r in readonly))]
        rw = [str(Path(v).resolve()) for v in visible]
        isolated = self.network == "isolated"
        ctl = str(self.bridge.ctl_path) if self.bridge is not None else "-"
        ports = ",".join(map(str, self.bridge.ports)) if self.bridge is not None else "-"
        owner = f"{AGENT_ID}:{AGENT_ID}" if os.geteuid() == 0 else "-"
        return [
            *self.unshare_prefix(),
            *(["--net"] if isolated else []),
            "--",
            "/bin/sh",
            "-c",
            SCRIPT,
            "memorybench-agent-root",
            str(self.mountpoint),
            str(cwd.resolve()),
            owner,
            self.network,
            sys.executable,
            INNER,
            ctl,
            ports,
            *ro,
            "--",
            *rw,
            "--",
            *self.drop_prefix(),
            *argv,
        ]

    def visible_roots(self, visible: Sequence[Path] = ()) -> list[Path]:
        return [*system_roots(), *self.always_visible, *(Path(v).resolve() for v in visible)]

    def check_secrets(self, secrets: dict[str, Path], visible: Sequence[Path]) -> None:
        """Refuse when a gold-bearing path would lie inside something the agent sees."""
        roots = self.visible_roots(visible)
        for what, secret in secrets.items():
            real = secret.expanduser().resolve()
            for root in roots:
                if _is_under(real, root):
                    raise UserError(
                        f"the {what} {real} lies under {root}, which the agent can read; move it elsewhere "
                        "(or set answerer.scratch_dir to a folder that does not contain it)"
                    )

    def describe(self) -> str:
        """What cli.json records of the isolation."""
        if self.network == "shared":
            net = "the host's network (answerer.network=shared)"
        elif self.bridge is not None and self.bridge.connect_to is not None:
            net = (
                "its own network namespace (HTTPS_PROXY 127.0.0.1:%d inside, bridged to a CONNECT to the model "
                "endpoint's host and port only)" % PROXY_PORT
            )
        else:
            net = "its own network namespace (the model endpoint's port bridged from the host's loopback)"
        return (
            "unshare mount+pid namespace; pivot_root into a tmpfs root holding /usr, /etc (read-only), a minimal "
            "/dev, no /sys, the CLI's vendor folder (read-only), and the process's own fresh CODEX_HOME, HOME, "
            f"TMPDIR and workspace only; run as host uid {AGENT_ID if os.geteuid() == 0 else os.geteuid()} in a "
            f"user namespace of its own, no capabilities, no_new_privs; {net}"
        )

    def probe(self, sentinels: Sequence[Path], *, cwd: Path, visible: Sequence[Path], binary: Path) -> None:
        """Prove the isolation from inside before the first question: the CLI's `--version` runs,
        each sentinel file is gone, and every property of the module docstring holds."""
        missing = [tool for tool in ("unshare", "setpriv") if not shutil.which(tool)]
        if missing:
            raise UserError(
                f"cannot isolate the agent from the gold files: {' and '.join(missing)} (util-linux) "
                "not installed; install util-linux"
            )
        bad = self.findings(sentinels, cwd=cwd, visible=visible, binary=binary)
        if bad:
            more = f" (and {len(bad) - 1} more)" if len(bad) > 1 else ""
            raise UserError(f"the agent's isolation does not hold: {bad[0]}{more}; answerer=codex refuses to run unsafe")

    def findings(
        self, sentinels: Sequence[Path], *, cwd: Path, visible: Sequence[Path], binary: Path, wrap: Wrapper | None = None
    ) -> list[str]:
        """What does not hold of the module docstring's properties, seen from inside `wrap`
        (default: this isolation's own `wrap`; bench/sandbox_compare.py runs the same probe
        under bubblewrap). Raises UserError when the wrapper cannot start at all."""
        wrap = wrap or self.wrap
        python, extra = _probe_python()
        with _host_listener(self.network == "isolated") as host_port:
            readonly = [*system_roots(), *self.always_visible, binary]
            config = {
                "marker": MARKER,
                "readonly": [str(p) for p in readonly],
                "host_port": host_port,
                "bridged": list(self.bridge.ports) if self.bridge else [],
            }
            argv = [
                "/bin/sh",
                "-c",
                f'"$0" --version >/dev/null || exit 4\nPY="$1"; CODE="$2"; CFG="$3"; shift 3\n'
                f'{PROBE}exec "$PY" -I -S -c "$CODE" "$CFG"',
                str(binary),
                python,
                PROBE_PY,
                json.dumps(config),
                *(str(s) for s in sentinels),
            ]
            marker = cwd / MARKER
            with contextlib.suppress(FileNotFoundError):
                marker.unlink()
            try:
                done = subprocess.run(
                    wrap(argv, cwd=cwd, visible=visible, readonly=extra), capture_output=True, text=True, timeout=60
                )
            except (OSError, subprocess.SubprocessError) as e:
                raise UserError(
                    f"cannot isolate the agent from the gold files ({e}); answerer=codex needs Linux namespaces"
                ) from None
        if done.returncode != 0:
            detail = (done.stderr.strip() or done.stdout.strip() or f"exit {done.returncode}").splitlines()[-1]
            who = (
                "root with CAP_SYS_ADMIN"
                if os.geteuid() == 0
                else "unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1)"
            )
            raise UserError(
                f"cannot isolate the agent from the gold files: {detail}; answerer=codex refuses to run unsafe. "
                f"It needs private mount, PID, network and user namespaces ({who}); in a container, run it with "
                "--privileged or --cap-add SYS_ADMIN --security-opt seccomp=unconfined"
            )
        try:
            bad = json.loads(done.stdout.strip().splitlines()[-1])
        except (ValueError, IndexError):
            bad = [f"the probe printed no verdict ({(done.stderr.strip() or 'no output').splitlines()[-1]})"]
        try:
            if marker.lstat().st_uid == 0:
                bad.append("the agent runs as uid 0 of the host")
        except FileNotFoundError:
            bad.append("the probe could not write its workspace")
        return bad


def _probe_python() -> tuple[str, list[Path]]:
    """A Python the probe can run inside the root, and what must be bound (read-only) for it."""
    real = Path(sys.executable).resolve()
    if any(_is_under(real, r) for r in system_roots()):
        return str(real), []
    for candidate in (Path("/usr/bin/python3"), Path("/usr/local/bin/python3")):
        if candidate.exists() and any(_is_under(candidate.resolve(), r) for r in system_roots()):
            return str(candidate), []
    prefix = Path(sys.base_prefix).resolve()
    return str(real), [prefix] if prefix != Path("/") else []


@contextlib.contextmanager
def _host_listener(wanted: bool) -> Iterator[int | None]:
    """A TCP port on the host's 127.0.0.1 that the isolated agent must not reach."""
    if not wanted:
        yield None
        return
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        s.listen(1)
        yield s.getsockname()[1]
