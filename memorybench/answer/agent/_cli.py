"""The pinned Codex CLI: `@openai/codex` at the exact version of the repo's package.json.

`npm ci` at the repo root (setup.sh) installs it into node_modules/; the npm package is a
Node shim that execs a native binary shipped per platform, so we run that binary
directly (no Node at run time). Its version goes into every pack.
"""

from __future__ import annotations

import json
import platform
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from memorybench import PROJECT_ROOT
from memorybench.errors import UserError
from memorybench.hashing import sha256_file_cached

PACKAGE = "@openai/codex"
#: (system, machine) -> (rust target triple, npm platform package), as in the package's bin/codex.js
PLATFORMS = {
    ("Linux", "x86_64"): ("x86_64-unknown-linux-musl", "@openai/codex-linux-x64"),
    ("Linux", "aarch64"): ("aarch64-unknown-linux-musl", "@openai/codex-linux-arm64"),
}


@dataclass(frozen=True)
class CodexCli:
    binary: Path
    #: the platform package's vendor/<triple> folder (binary, bundled bwrap and rg): the agent must see it
    vendor_dir: Path
    #: the exact version pinned in package.json (and installed)
    version: str
    #: what `codex --version` printed
    reported: str
    binary_sha256: str

    @property
    def spec(self) -> str:
        return f"{PACKAGE}@{self.version}"


def pinned_version(root: Path = PROJECT_ROOT) -> str:
    """The exact `@openai/codex` version of the repo's package.json."""
    manifest = root / "package.json"
    try:
        spec = json.loads(manifest.read_text("utf-8"))["dependencies"][PACKAGE]
    except (OSError, ValueError, KeyError):
        raise UserError(f"{manifest} does not pin {PACKAGE}; restore the file from git") from None
    if not re.fullmatch(r"\d+\.\d+\.\d+", str(spec)):
        raise UserError(f"{manifest} pins {PACKAGE} as {spec!r}; it must be an exact version such as 0.171.0")
    return str(spec)


def locate_cli(root: Path = PROJECT_ROOT) -> CodexCli:
    """The installed pinned CLI, checked: right version installed, binary runs and says so."""
    version = pinned_version(root)
    fix = f"run `npm ci` in {root} (setup.sh does it)"
    key = (platform.system(), platform.machine())
    if key not in PLATFORMS:
        raise UserError(
            f"answerer=codex runs on Linux x86_64 or aarch64 only (this is {key[0]} {key[1]}): "
            "the agent's isolation from the gold files needs Linux mount namespaces"
        )
    triple, package = PLATFORMS[key]
    installed = root / "node_modules" / PACKAGE / "package.json"
    try:
        got = json.loads(installed.read_text("utf-8"))["version"]
    except (OSError, ValueError, KeyError):
        raise UserError(f"the pinned Codex CLI {PACKAGE}@{version} is not installed in {root / 'node_modules'}; {fix}") from None
    if got != version:
        raise UserError(f"node_modules has {PACKAGE}@{got} but package.json pins {version}; {fix}")
    vendor = root / "node_modules" / package / "vendor" / triple
    binary = vendor / "bin" / "codex"
    if not binary.is_file():
        raise UserError(f"the Codex binary {binary} is missing (optional dependency {package} not installed); {fix}")
    try:
        out = subprocess.run([str(binary), "--version"], capture_output=True, text=True, timeout=60, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError) as e:
        raise UserError(f"the Codex binary {binary} does not run ({e}); {fix}") from None
    if not out.endswith(version):
        raise UserError(f"{binary} reports {out!r}, expected version {version}; {fix}")
    return CodexCli(
        binary=binary.resolve(),
        vendor_dir=vendor.resolve(),
        version=version,
        reported=out,
        binary_sha256=sha256_file_cached(binary),
    )
