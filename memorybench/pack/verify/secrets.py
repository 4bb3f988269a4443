"""No secret is stored in a pack: secret-looking strings, and the exact values of the credentials given."""

from __future__ import annotations

import re

# the credential variables are the harness's one definition (`memorybench.secrets`): what
# every writer scrubs is what verify searches for
from memorybench.pack.verify.context import Context
from memorybench.pack.verify.findings import Findings, redact
from memorybench.secrets import CREDENTIAL_ENV, credential_values

__all__ = ["CREDENTIAL_ENV", "check_secrets", "credential_values"]

#: (what it looks like, pattern, searched in the lowercased bytes, must not follow a letter or digit).
#: Each pattern starts with a literal, so the regex engine scans for it at memchr speed.
_SECRET_PATTERNS: tuple[tuple[str, re.Pattern[bytes], bool, bool], ...] = tuple(
    (kind, re.compile(pattern), lowered, boundary)
    for kind, pattern, lowered, boundary in (
        ("an OpenAI-style API key", rb"sk-[A-Za-z0-9_-]{20,}", False, True),
        ("a bearer token", rb"bearer[ \t]+[a-z0-9._~+/-]{16,}", True, True),
        ("an AWS access key id", rb"(?:AKIA|ASIA)[0-9A-Z]{16}(?![A-Za-z0-9])", False, True),
        ("an AWS secret access key", rb"aws_secret_access_key[\"']?[ \t]*[:=][ \t]*[\"']?[a-z0-9/+=]{40}", True, False),
        ("a Google API key", rb"AIza[0-9A-Za-z_-]{35}", False, True),
        ("a Google OAuth token", rb"ya29\.[0-9A-Za-z_-]{20,}", False, True),
        ("a private key", rb"-----BEGIN (?:[A-Z]+ )?PRIVATE KEY-----", False, False),
        ("a GitHub token", rb"gh[pousr]_[A-Za-z0-9]{36,}", False, True),
        ("a GitHub token", rb"github_pat_[A-Za-z0-9_]{22,}", False, True),
        ("a Hugging Face token", rb"hf_[A-Za-z0-9]{30,}", False, True),
        ("a Slack token", rb"xox[abprs]-[A-Za-z0-9-]{10,}", False, True),
    )
)
_ALNUM = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")


def check_secrets(ctx: Context, out: Findings) -> None:
    """Every file of the pack, byte for byte: the first match of each kind, shown redacted."""
    given = [secret.encode("utf-8") for secret in ctx.secrets]
    for path, relpath in ctx.rel.items():
        data = path.read_bytes()
        lowered = data.lower()  # same length and offsets as `data`
        hits: dict[str, int] = {}  # kind -> offset of its first match in this file
        for kind, pattern, use_lowered, boundary in _SECRET_PATTERNS:
            for m in pattern.finditer(lowered if use_lowered else data):
                if boundary and m.start() > 0 and data[m.start() - 1] in _ALNUM:
                    continue
                hits.setdefault(kind, m.start())
                break
        for value in given:
            at = data.find(value)
            if at >= 0:
                hits.setdefault("the value of a credential variable of this environment", at)
        for kind, at in sorted(hits.items(), key=lambda kv: kv[1]):
            line = data.count(b"\n", 0, at) + 1
            shown = redact(data[at : at + 8].decode("utf-8", errors="replace"))
            out.add("secret", relpath, f"looks like {kind} ({shown}); remove it from the pack and rotate the credential", line)
