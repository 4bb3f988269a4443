"""Gold out of reach: run the agent in a minimal root where only what it needs exists.

Codex's read-only sandbox may read the whole filesystem, and so would the agent: the
dataset, the pins cache and every pack hold gold answers. So each `codex exec` runs
inside a new mount and PID namespace (`unshare`) whose root is an empty tmpfs holding
only the system folders (/usr, /etc, /dev, /sys, real /lib*), a fresh /tmp, the CLI's
own vendor folder and the run's scratch paths (CODEX_HOME, HOME, TMPDIR, the
workspace), each bound at its own path; `pivot_root` then makes that the whole
filesystem. Everything else (the repo, the data, the packs, the caches, other users'
homes) does not exist for the agent. Codex's own bubblewrap sandbox runs inside it.

Default-deny, not a list of hidden paths: a copy of the data in a place nobody thought
of is out of reach too. What stays visible is the system folders: a secret placed under
/usr, /etc, /dev or /sys is refused before any run (`check_secrets`).

As root this needs CAP_SYS_ADMIN; as another user, unprivileged user namespaces
(`unshare --user --map-root-user`). `Isolation.probe` proves the mechanism before the
first question; where it cannot be set up the harness refuses with one line.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from memorybench.errors import UserError

SYSTEM_DIRS = ("/usr", "/etc", "/dev", "/sys")
SYSTEM_LINKS = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
#: files under /etc that may be symlinks out of it (DNS for a remote provider)
ETC_FILES = ("/etc/resolv.conf", "/etc/hosts", "/etc/nsswitch.conf")

# $1 new root mountpoint, $2 working directory, then visible paths, "--", the command.
SCRIPT = r"""
set -eu
PATH=/usr/sbin:/usr/bin:/sbin:/bin
R="$1"; WD="$2"; shift 2
mount -t tmpfs -o mode=0755 memorybench-agent-root "$R"
for d in /usr /etc /dev /sys; do
  [ -d "$d" ] || continue
  mkdir -p "$R$d"; mount --rbind "$d" "$R$d"
done
for d in /usr /etc; do mount -o remount,bind,ro "$R$d" 2>/dev/null || true; done
if [ -d "$R/dev/shm" ]; then mount -t tmpfs -o mode=1777 memorybench-agent-shm "$R/dev/shm"; fi
for l in /bin /sbin /lib /lib32 /lib64 /libx32; do
  if [ -L "$l" ]; then ln -s "$(readlink "$l")" "$R$l"
  elif [ -d "$l" ]; then mkdir -p "$R$l"; mount --rbind "$l" "$R$l"; fi
done
mkdir -p "$R/proc" "$R/tmp"
mount -t proc proc "$R/proc"
mount -t tmpfs -o mode=1777 memorybench-agent-tmp "$R/tmp"
while [ "$1" != "--" ]; do
  if [ -d "$1" ]; then mkdir -p "$R$1"
  else mkdir -p "$(dirname "$R$1")"; [ -e "$R$1" ] || : > "$R$1"; fi
  mount --rbind "$1" "$R$1"
  shift
done
shift
cd "$R"; mkdir .oldroot; pivot_root . .oldroot; umount -l /.oldroot; rmdir /.oldroot
cd "$WD"
exec "$@"
"""

PROBE = r"""
for p in "$@"; do
  if [ -e "$p" ]; then echo "still readable inside the agent's root: $p"; exit 3; fi
done
"""


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


@dataclass(frozen=True)
class Isolation:
    #: an empty folder to mount the new root on (inside a private mount namespace)
    mountpoint: Path
    #: paths every call sees (the CLI's vendor folder, CODEX_HOME, HOME, TMPDIR)
    always_visible: tuple[Path, ...]

    @classmethod
    def create(cls, mountpoint: Path, always_visible: Sequence[Path]) -> Isolation:
        mountpoint.mkdir(parents=True, exist_ok=True)
        return cls(mountpoint.resolve(), tuple(p.resolve() for p in always_visible) + tuple(etc_extras()))

    @staticmethod
    def unshare_prefix() -> list[str]:
        unshare = shutil.which("unshare") or "/usr/bin/unshare"
        flags = ["--mount", "--pid", "--fork", "--kill-child", "--propagation", "private"]
        if os.geteuid() != 0:
            flags = ["--user", "--map-root-user", *flags]
        return [unshare, *flags]

    def wrap(self, argv: Sequence[str], *, cwd: Path, visible: Sequence[Path] = ()) -> list[str]:
        """`argv` run with `cwd` inside the minimal root that shows only `visible` (+ always_visible)."""
        paths = [str(p) for p in (*self.always_visible, *(Path(v).resolve() for v in visible))]
        return [*self.unshare_prefix(), "--", "/bin/sh", "-c", SCRIPT, "memorybench-agent-root",
                str(self.mountpoint), str(cwd.resolve()), *paths, "--", *argv]

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

    def probe(self, sentinels: Sequence[Path], *, cwd: Path, visible: Sequence[Path], binary: Path) -> None:
        """Run the CLI's `--version` and a check that each sentinel file is gone, inside the root."""
        reasons = []
        if not shutil.which("unshare"):
            reasons.append("`unshare` (util-linux) is not installed")
        if reasons:
            raise UserError(f"cannot isolate the agent from the gold files: {'; '.join(reasons)}; install util-linux")
        argv = ["/bin/sh", "-c", f'"$0" --version >/dev/null || exit 4\n{PROBE}', str(binary),
                *(str(s) for s in sentinels)]
        try:
            done = subprocess.run(self.wrap(argv, cwd=cwd, visible=visible), capture_output=True, text=True, timeout=60)
        except (OSError, subprocess.SubprocessError) as e:
            raise UserError(f"cannot isolate the agent from the gold files ({e}); answerer=codex needs Linux namespaces") from None
        if done.returncode != 0:
            detail = (done.stderr.strip() or done.stdout.strip() or f"exit {done.returncode}").splitlines()[-1]
            who = "root with CAP_SYS_ADMIN" if os.geteuid() == 0 else "unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1)"
            raise UserError(
                f"cannot isolate the agent from the gold files: {detail}; answerer=codex refuses to run unsafe. "
                f"It needs a private mount+PID namespace ({who}); in a container, run it with --privileged "
                "or --cap-add SYS_ADMIN --security-opt seccomp=unconfined"
            )
