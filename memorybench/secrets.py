"""The credentials the harness holds, and the one way to keep them out of what it writes.

A secret is known by its value: the values of credential environment variables
(`credential_values`: OPENAI_API_KEY, *_API_KEY, *_TOKEN, ...) and of the variables a config
names in `api_key_env`, the userinfo and secret-looking query values of every endpoint URL
in the config, and the header values a client derives from them (`known_secrets`). A
process learns them when it composes its config (`register`: `validate_config` and `run_qa`
call it, and a `ChatClient` registers what it holds), and every writer passes its text
through `scrub` before it reaches a pack file, a journal, a stream or MLflow: each known
value becomes `***` wherever it occurs (inside a model's reply too), in every form a message
gives it (`secret_forms`: without surrounding whitespace, repr/JSON-escaped as in a bytes
literal `b'...'`, percent-encoded) and from its first `PREFIX_LENGTH` characters on where it
was cut, as does any token shaped like a key (`sk-...`); `contains_secret` is the one test
of whether a text holds any of these, and what must never carry one (a run id, a launcher's
plain env) is refused on it. A URL anywhere in the text loses its userinfo and the values of
its secret-looking query parameters (`clean_url`). In a YAML file a masked value is quoted
(`scrub_yaml`: a plain `***` would be an alias). A config without secrets is left byte for byte as it is, so run ids and
golden packs do not move.

Credentials in a URL are sent as credentials (`split_url`), never left in the URL:
`http://KEY@host/v1`, `http://:KEY@host/v1` and `http://user:sk-...@host/v1` send the key as
the API key (`Authorization: Bearer`); any other `user:password` is HTTP basic auth
(`Authorization: Basic`, a server behind an authenticating proxy). Query parameters are
sent as query parameters of every request (the SDK would paste them into the path).
"""

from __future__ import annotations

import base64
import contextlib
import copy
import functools
import json
import os
import re
import sys
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, TextIO
from urllib.parse import quote, unquote, urlsplit, urlunsplit

__all__ = [
    "CREDENTIAL_ENV",
    "MASK",
    "MIN_SECRET_LENGTH",
    "EndpointURL",
    "clean_config",
    "clean_url",
    "contains_secret",
    "credential_values",
    "known_secrets",
    "looks_like_key",
    "register",
    "registered",
    "scrub",
    "scrub_bytes",
    "scrub_yaml",
    "scrubbed_stdio",
    "secret_forms",
    "split_url",
]

#: what a secret value is replaced by
MASK = "***"
#: values shorter than this are not secrets we can replace (they would match anywhere)
MIN_SECRET_LENGTH = 8
#: a secret at least this long (an API key) is masked from its first PREFIX_LENGTH characters on
#: as well: a server or a cut that shortened it must not leave its first part readable
PREFIX_SECRET_LENGTH = 16
#: the shortest prefix of such a secret that is masked (past its scheme head: see `_KEY_HEAD`)
PREFIX_LENGTH = 8
#: environment variables whose values are credentials
CREDENTIAL_ENV = re.compile(r"(?:^OPENAI_API_KEY$|_API_KEY$|_TOKEN$|_SECRET$|_SECRET_KEY$|_ACCESS_KEY$|_PASSWORD$)")
#: query parameter names whose values are credentials (`key`, `api-key`, `access_token`, `sig`, `X-Amz-Signature`, ...)
_SECRET_QUERY_NAME = re.compile(
    r"(?:^|[-_.])(?:api[-_]?key|key|token|secret|password|passwd|pwd|sig|signature|auth|authorization|credentials?|session|code)$",
    re.IGNORECASE,
)
#: values that are credentials whatever they are called (an OpenAI-style key and the like)
_SECRET_VALUE = re.compile(r"^(?:sk-|gh[pousr]_|github_pat_|hf_|xox[abprs]-|AIza|ya29\.)[A-Za-z0-9._-]{16,}$")
#: such a value inside any text (an override as typed that Hydra quotes in its error, before any
#: config is known): masked whether or not it was registered
_KEY_TOKEN = re.compile(r"(?<![A-Za-z0-9._-])(?:sk-|gh[pousr]_|github_pat_|hf_|xox[abprs]-|AIza|ya29\.)[A-Za-z0-9._-]{16,}")
#: the public head of such a value (every OpenAI project key starts `sk-proj-`): a masked prefix
#: reaches at least 4 characters past it, so a plain `sk-proj-` in a text stays as it is
_KEY_HEAD = re.compile(r"^(?:sk-(?:proj-|svcacct-|admin-|ant-[a-z]+\d*-)?|gh[pousr]_|github_pat_|hf_|xox[abprs]-|AIza|ya29\.)")
#: a URL inside any text (a YAML value, an override, a Python list's repr, an error line)
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s\"'<>`\\]+")

_registered: set[str] = set()


#: (the process environment as last read, its credential values): every trace line is scrubbed,
#: and reading the environment anew costs about as much as the rest of a question's bookkeeping
_environ_read: tuple[dict[Any, Any], list[str]] | None = None


def credential_values(environ: Mapping[str, str] | None = None) -> list[str]:
    """Values of the credential variables present (OPENAI_API_KEY, *_API_KEY, *_TOKEN, ...)."""
    global _environ_read
    data = getattr(os.environ, "_data", None) if environ is None else None
    if isinstance(data, dict):  # the process environment: read again only when it changed
        if _environ_read is None or _environ_read[0] != data:
            _environ_read = (dict(data), _credential_values(os.environ))
        return list(_environ_read[1])
    return _credential_values(os.environ if environ is None else environ)


def _credential_values(env: Mapping[str, str]) -> list[str]:
    # stripped: a key pasted from a file ends with a newline (the key is the rest)
    return sorted({v.strip() for k, v in env.items() if CREDENTIAL_ENV.search(k.upper()) and len(v.strip()) >= MIN_SECRET_LENGTH})


def looks_like_key(value: str) -> bool:
    """Whether `value` has the shape of an API key or token whatever it is called (`sk-...`, `ghp_...`, ...)."""
    return bool(_SECRET_VALUE.match(value.strip()))


# -- URLs -------------------------------------------------------------------------------
@dataclass(frozen=True)
class EndpointURL:
    """An endpoint URL taken apart: what a client connects to and the credentials it sends."""

    #: the URL without userinfo and without query (the SDK's base URL)
    url: str
    #: query parameters to send with every request, decoded
    query: dict[str, str] = field(default_factory=dict)
    #: the key from the userinfo, sent as `Authorization: Bearer`
    api_key: str | None = None
    #: headers to send (`Authorization: Basic` for a user and password)
    headers: dict[str, str] = field(default_factory=dict)
    #: every credential value this URL holds or led to (raw and percent-decoded)
    secrets: tuple[str, ...] = ()


def _is_secret_param(name: str, value: str) -> bool:
    return bool(value) and (bool(_SECRET_QUERY_NAME.search(unquote(name))) or bool(_SECRET_VALUE.match(unquote(value))))


def _masked_query(query: str) -> str:
    """The query string with each secret-looking value replaced by `***`, every other byte kept."""
    parts = []
    for pair in query.split("&"):
        name, eq, value = pair.partition("=")
        parts.append(f"{name}={MASK}" if eq and value != MASK and _is_secret_param(name, value) else pair)
    return "&".join(parts)


def clean_url(url: str, *, keep_query: bool = True) -> str:
    """`url` without its `user:password@` part and with secret-looking query values masked
    (`keep_query=False`: without its query string at all); a URL with neither comes back
    unchanged, byte for byte (it is part of a run's identity)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return url
    if not parts.scheme or not parts.netloc:
        return url
    netloc = parts.netloc.rpartition("@")[2]
    if keep_query:
        query, fragment = (_masked_query(parts.query) if parts.query else ""), parts.fragment
    else:
        query = fragment = ""
    if netloc == parts.netloc and query == parts.query and fragment == parts.fragment:
        return url
    return urlunsplit((parts.scheme, netloc, parts.path, query, fragment))


def split_url(url: str) -> EndpointURL:
    """The client's view of an endpoint URL: base URL, query, and the credentials it carries."""
    try:
        parts = urlsplit(url)
    except ValueError:  # not a URL: the client reports it as it is
        return EndpointURL(url)
    netloc = parts.netloc.rpartition("@")[2]
    plain = netloc == parts.netloc and not parts.query
    base = url if plain else urlunsplit((parts.scheme, netloc, parts.path, "", parts.fragment))
    found: list[str] = []
    query: dict[str, str] = {}
    for pair in filter(None, parts.query.split("&")):
        name, _, value = pair.partition("=")
        query[unquote(name.replace("+", " "))] = unquote(value.replace("+", " "))
        if _is_secret_param(name, value):
            found += [value, unquote(value)]
    api_key = None
    headers: dict[str, str] = {}
    if "@" in parts.netloc:
        raw_user, colon, raw_password = parts.netloc.rpartition("@")[0].partition(":")
        user, password = unquote(raw_user), unquote(raw_password)
        if not colon or not user or password.startswith("sk-"):
            # the key alone (`KEY@`, `:KEY@`) or an OpenAI-style key as the password: a bearer key
            api_key = password if colon and password else user
            found += [raw_password or raw_user, api_key]
        else:
            token = base64.b64encode(f"{user}:{password}".encode()).decode("ascii")
            headers["Authorization"] = f"Basic {token}"
            found += [raw_password, password, token]
        if _SECRET_VALUE.match(user):  # a user name is no secret, unless it looks like a key
            found += [raw_user, user]
    secrets = tuple(sorted({s for s in found if len(s.strip()) >= MIN_SECRET_LENGTH}))
    return EndpointURL(base, query, api_key or None, headers, secrets)


def _dirty_urls(node: Mapping[str, Any], path: tuple[Any, ...] = ()) -> Iterator[tuple[tuple[Any, ...], str]]:
    for key, value in node.items():
        if key == "base_url" and isinstance(value, str) and (clean := clean_url(value)) != value:
            yield (*path, key), clean
        elif isinstance(value, Mapping):
            yield from _dirty_urls(value, (*path, key))


def clean_config(config: Any) -> Any:
    """A copy of a resolved config (plain data or a DictConfig) whose endpoint URLs are
    clean (`clean_url` on every `base_url`, at any depth); a config without any is returned
    itself, untouched."""
    changes = list(_dirty_urls(config)) if isinstance(config, Mapping) else []
    if not changes:
        return config
    out = copy.deepcopy(config)
    for path, url in changes:
        node = out
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = url
    return out


def known_secrets(config: Mapping[str, Any], environ: Mapping[str, str] | None = None) -> list[str]:
    """Every credential a resolved config leads to: the credential variables of the
    environment, the variables it names in `api_key_env`, and what its `base_url`s carry."""
    env = os.environ if environ is None else environ
    found = set(credential_values(env))

    def walk(node: Mapping[str, Any]) -> None:
        for key, value in node.items():
            if key == "base_url" and isinstance(value, str):
                found.update(split_url(value).secrets)
            elif key == "api_key_env" and isinstance(value, str) and env.get(value):
                found.add(env[value])
            elif isinstance(value, Mapping):
                walk(value)

    walk(config)
    return sorted(s for s in found if len(s.strip()) >= MIN_SECRET_LENGTH)


# -- scrubbing --------------------------------------------------------------------------
def register(values: Iterable[str]) -> None:
    """Remember credential values for `scrub`, for the rest of this process (each without
    its surrounding whitespace: a key read from a file keeps no newline)."""
    _registered.update(v.strip() for v in values if v and len(v.strip()) >= MIN_SECRET_LENGTH)


def registered() -> frozenset[str]:
    """Every value `scrub` replaces now: the registered ones and the environment's credentials."""
    return frozenset(_registered.union(credential_values()))


def secret_forms(value: str) -> frozenset[str]:
    """Every form `value` takes in a message: itself without surrounding whitespace (a key
    read with its newline is masked, the newline kept), escaped as `repr` and JSON write it
    (`\\n`, the inside of a bytes literal `b'...'`, as httpx's `Illegal header value b'...'`),
    and percent-encoded (a URL's query)."""
    core = value.strip()
    if len(core) < MIN_SECRET_LENGTH:
        return frozenset()
    forms = {core, repr(core)[1:-1], json.dumps(core)[1:-1], repr(core.encode("utf-8"))[2:-1], quote(core, safe="")}
    return frozenset(f for f in forms if len(f) >= MIN_SECRET_LENGTH)


@functools.lru_cache(maxsize=64)
def _patterns(values: frozenset[str]) -> tuple[tuple[str, ...], tuple[tuple[str, int], ...]]:
    """(every form of every value, longest first; (value, shortest masked prefix) of the long ones)."""
    forms = sorted({f for v in values for f in secret_forms(v)}, key=lambda f: (-len(f), f))
    prefixes = []
    for value in sorted({v.strip() for v in values}, key=lambda v: (-len(v), v)):
        if len(value) >= PREFIX_SECRET_LENGTH:
            head = _KEY_HEAD.match(value)
            shortest = max(PREFIX_LENGTH, (head.end() + 4) if head else 0)
            if shortest < len(value):
                prefixes.append((value, shortest))
    return tuple(forms), tuple(prefixes)


def _mask_values(text: str) -> str:
    """`text` with every form of every known secret, every prefix of one that is long enough
    to matter (`PREFIX_LENGTH`), and every token shaped like a key (`sk-...`), replaced by `***`."""
    forms, prefixes = _patterns(registered())
    for form in forms:  # longest first: a value that contains another is replaced whole
        if form in text:
            text = text.replace(form, MASK)
    for value, shortest in prefixes:
        start, head = 0, value[:shortest]
        while (i := text.find(head, start)) >= 0:
            j = i + shortest
            while j - i < len(value) and j < len(text) and text[j] == value[j - i]:
                j += 1
            text = text[:i] + MASK + text[j:]
            start = i + len(MASK)
    return _KEY_TOKEN.sub(MASK, text) if _KEY_TOKEN.search(text) else text


def contains_secret(text: str) -> bool:
    """Whether `text` holds a known secret in any of its forms (`secret_forms`), the first
    part of one (`PREFIX_LENGTH` characters or more), or a token shaped like a key: what
    `scrub` would mask. Every writer and printer masks through `scrub`; a value that must
    never be written at all (a run id, a path, a launcher's plain env) is refused on it."""
    return bool(text) and _mask_values(text) != text


def _clean_match(match: re.Match[str]) -> str:
    url = match.group(0)
    return clean_url(url) if "@" in url or "?" in url else url


def scrub(text: str) -> str:
    """`text` with every known secret replaced by `***` (in any of its forms, and its first
    part where it was cut: `contains_secret`) and every URL in it cleaned."""
    text = _mask_values(text)
    if "://" in text:
        text = _URL.sub(_clean_match, text)
    return text


#: a YAML plain scalar that a mask begins (`key: ***`, `- ***...`): YAML would read it as an alias
_YAML_MASKED_SCALAR = re.compile(r"(?m)^(?P<lead>[ \t]*(?:- +)*(?:[^\s#'\"{\[\-][^\n#]*?: +)?)(?P<value>\*\*\*[^\n]*?)[ \t]*$")


def _quote_masked_scalar(match: re.Match[str]) -> str:
    value = match.group("value")
    return match.group("lead") + "'" + value.replace("'", "''") + "'"


def scrub_yaml(text: str) -> str:
    """`scrub` for a YAML file: a value the mask begins is quoted (`model: '***'`), so the
    file still reads as YAML (a plain `***` is an alias to YAML, and loading it fails)."""
    cleaned = scrub(text)
    if cleaned == text or MASK not in cleaned:
        return cleaned
    return _YAML_MASKED_SCALAR.sub(_quote_masked_scalar, cleaned)


def scrub_bytes(data: bytes, *, yaml: bool = False) -> bytes:
    """`scrub` for a file's bytes (`scrub_yaml` with `yaml`); bytes that are not UTF-8 get the value replacement only."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        forms, _ = _patterns(registered())
        for form in forms:
            data = data.replace(form.encode("utf-8"), MASK.encode("ascii"))
        return data
    cleaned = scrub_yaml(text) if yaml else scrub(text)
    return data if cleaned == text else cleaned.encode("utf-8")


class _ScrubbedStream:
    """A text stream whose writes pass `scrub` (everything else goes to the stream it wraps)."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        self._stream.write(scrub(text))
        return len(text)

    def writelines(self, lines: Iterable[str]) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


@contextlib.contextmanager
def scrubbed_stdio() -> Iterator[None]:
    """stdout and stderr pass `scrub` inside the block: for text a library prints itself
    (Hydra echoes a failed job's overrides, URLs included)."""
    out, err = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = _ScrubbedStream(out), _ScrubbedStream(err)  # type: ignore[assignment]
    try:
        yield
    finally:
        sys.stdout, sys.stderr = out, err
