"""The one redaction point: every byte that leaves the harness passes :func:`redact`.

CONTRACT §2: "No secret is ever written to a log, a case file, a commit or an error message".
Issue #17 found secrets reaching Slack through error paths (a service error echoing the
credentials, forwarded verbatim into the operator's DM and the case files) because only the
logs were redacted. So the exits call this one function, never a copy of it:

- Slack posts and edits (``ops.outbound.Outbound``), GitLab MR titles, descriptions and notes
  (``services.gitlab``), commit messages (``services.git.Git.commit``);
- model prompts and tool results (``agents``), case and state files (``state.store`` atomic
  writes, and the workspace sync scrubs whatever else an agent wrote before it commits);
- logs, crash logs, error lines and command output (``logs``, ``crash``, ``cli``, ``output``).

What is masked: the value of every known secret, and anything shaped like a token (Slack
``xox?-``/``xapp-``, GitLab ``glpat-``…, Anthropic ``sk-ant-``, GitHub, AWS access keys, private
key blocks, bearer/private-token headers, credentials in URLs), whatever its source: a customer
pasting their token into a ticket must not see it echoed by the harness either.

Secrets by value, not by name (#28 R3: ``AWS_SECRET_ACCESS_KEY`` and ``DD_APP_KEY`` passed a
name pattern anchored at the end). The known secrets are: **every** value of the env file
(``$HARNESS_ENV_FILE`` and ``$HARNESS_HOME/env``, the files cron and systemd load) except the
few documented settings that are not credentials (:data:`PUBLIC_SETTINGS`: URLs of the
services, HARNESS_* paths, the locale…); the harness's own credential variables
(:data:`SECRET_ENV`); and any variable of the process named like a credential anywhere in its
name. Each is masked as written and in the common encodings (:func:`encoded_forms`: base64,
hex, URL-encoded), and :func:`without_secrets` removes every variable holding one from an
environment handed to code the harness does not trust (an agent's commands, the checks).
"""

from __future__ import annotations

import base64
import os
import re
import urllib.parse
from collections.abc import Mapping
from pathlib import Path
from typing import Any

REDACTED = "[REDACTED]"

SECRET_ENV = (
    "SLACK_USER_TOKEN",
    "SLACK_APP_TOKEN",
    "SLACK_BOT_TOKEN",
    "GITLAB_TOKEN",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "PAGERDUTY_TOKEN",
)
"""The variables the harness itself reads its credentials from (CONTRACT §2)."""
_SECRET_NAME = re.compile(
    r"TOKEN|SECRET|PASSW|PASSPHRASE|API_?KEY|PRIVATE_KEY|ACCESS_KEY|APP_KEY|CREDENTIAL"
    r"|_KEY$|^KEY$|COOKIE|SESSION|_DSN$|_PAT$",
    re.IGNORECASE,
)
"""A process variable named like a credential anywhere in its name (``JIRA_API_TOKEN``,
``AWS_SECRET_ACCESS_KEY``, ``DD_APP_KEY``…). The env file needs no name: every value in it is
a secret unless it is a public setting."""
PUBLIC_SETTINGS = frozenset(
    {
        "SLACK_API_URL", "GITLAB_URL", "ANTHROPIC_BASE_URL", "GITHUB_URL", "JIRA_URL",
        "JIRA_USER", "PAGERDUTY_API_URL", "PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG",
        "LANGUAGE", "TZ", "TERM", "TMPDIR", "XDG_RUNTIME_DIR", "XDG_CONFIG_HOME",
        "CLAUDE_CONFIG_DIR", "DISABLE_TELEMETRY", "IS_SANDBOX", "NO_PROXY", "PYTHONPATH",
        "VIRTUAL_ENV", "SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE",
        "GIT_CONFIG_GLOBAL", "GIT_CONFIG_NOSYSTEM", "GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL",
        "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL",
    }
)  # fmt: skip
"""Env-file variables that are settings, not credentials (CONTRACT §2): their values stay
readable. Every other value of the env file is a secret."""
PUBLIC_PREFIXES = ("HARNESS_", "LC_", "CLAUDE_CODE_", "MCP_")
MIN_SECRET_LENGTH = 8
"""Shorter values are not masked by value (masking "1" or "yes" would garble every text);
token shapes below still catch short real tokens."""

_PATTERNS: list[tuple[tuple[str, ...], re.Pattern[str]]] = [
    # (hints, pattern): a pattern runs only on text holding one of its hints (lower-cased for
    # the case-insensitive ones) — most text holds none, and redact() runs on every log line.
    (
        ("PRIVATE KEY",),
        re.compile(
            r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----.*?"
            r"(?:-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|\Z)",
            re.DOTALL,
        ),
    ),
    (("xox",), re.compile(r"xox[abposre]-[A-Za-z0-9-]{6,}")),
    (("xapp-",), re.compile(r"xapp-[A-Za-z0-9-]{6,}")),
    (("gl",), re.compile(r"gl(?:pat|dt|rt|ptt|oas|cbt|imt|ft|agent|soat|ffct)-[A-Za-z0-9_\-]{8,}")),
    (("sk-ant-",), re.compile(r"sk-ant-[A-Za-z0-9_\-]{6,}")),
    (
        ("gh", "github_pat_"),
        re.compile(r"(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}"),
    ),
    (("AKIA", "ASIA"), re.compile(r"(?<![A-Z0-9])(?:AKIA|ASIA)[A-Z0-9]{16}(?![A-Z0-9])")),
    # a bearer credential, not prose ("Bearer authentication fails"): long, with a digit
    (
        ("bearer",),
        re.compile(r"(?i)(bearer\s+)(?=[A-Za-z0-9._~+/=\-]*[0-9])[A-Za-z0-9._~+/=\-]{16,}"),
    ),
    (
        ("private-token",),
        re.compile(r"(?i)(private-token[\"']?\s*[:=]\s*[\"']?)[A-Za-z0-9._\-]{8,}"),
    ),
    (("x-api-key",), re.compile(r"(?i)(x-api-key[\"']?\s*[:=]\s*[\"']?)[A-Za-z0-9._\-]{8,}")),
    # credentials embedded in a URL: scheme://user:secret@host (never across quotes or spaces)
    (("://",), re.compile(r"(?<=://)([^/\s:@\"'<>]+):([^/\s@\"'<>]+)@")),
]

_SCANS = [(hints, pattern, bool(pattern.flags & re.IGNORECASE)) for hints, pattern in _PATTERNS]

Pairs = tuple[tuple[str, str], ...]
"""(variable name, value) of the secrets found in one source."""
_env_cache: tuple[Any, Pairs] | None = None
_file_cache: dict[str, tuple[float, int, int, Pairs]] = {}
_known_cache: tuple[Pairs, Pairs, list[str], list[str]] | None = None


def env_file() -> Path:
    """``$HARNESS_HOME/env``: the tokens cron and the systemd units load (cron/README.md)."""
    return Path(_env_file_names()[-1])


def _env_file_names() -> list[str]:
    """``$HARNESS_ENV_FILE`` (what harness-cron and the units read, when set) and
    ``$HARNESS_HOME/env``."""
    home = os.environ.get("HARNESS_HOME") or "~/.harness"
    if home.startswith("~"):
        home = os.path.expanduser(home)
    names = [os.path.expanduser(os.environ.get("HARNESS_ENV_FILE") or ""), home + "/env"]
    return list(dict.fromkeys(n for n in names if n))


def _is_secret_name(name: str) -> bool:
    return name in SECRET_ENV or bool(_SECRET_NAME.search(name))


def is_public_setting(name: str) -> bool:
    """A documented setting whose value is not a credential (see :data:`PUBLIC_SETTINGS`)."""
    known = name in PUBLIC_SETTINGS or name.startswith(PUBLIC_PREFIXES)
    return known and not _is_secret_name(name)


def _from_environment() -> Pairs:
    """Secret values of the process environment, re-read only when it changes."""
    global _env_cache
    data = getattr(os.environ, "_data", None)  # CPython's raw mapping: cheap to compare
    key = tuple(data.items()) if isinstance(data, dict) else tuple(os.environ.items())
    cached = _env_cache
    if cached is not None and cached[0] == key:
        return cached[1]
    found = tuple((k, v) for k, v in os.environ.items() if _is_secret_name(k))
    _env_cache = (key, found)
    return found


def _from_env_files() -> Pairs:
    found: list[tuple[str, str]] = []
    for name in _env_file_names():
        found += _from_env_file(name)
    return tuple(found)


def _from_env_file(name: str) -> Pairs:
    """Every value of the env file (``KEY=value`` lines, optional quotes and ``export``) but
    the public settings'; re-read only when the file changes."""
    try:
        stat = os.stat(name)
    except OSError:
        return ()
    cached = _file_cache.get(name)
    if cached and cached[:3] == (stat.st_mtime, stat.st_size, stat.st_ino):
        return cached[3]
    values: list[tuple[str, str]] = []
    try:
        with open(name, encoding="utf-8", errors="replace") as handle:
            lines = handle.read().splitlines()
    except OSError:
        return ()
    for line in lines:
        line = line.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, _, value = line.removeprefix("export ").partition("=")
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
            value = value[1:-1]
        if value and not is_public_setting(key.strip()):
            values.append((key.strip(), value))
    found = tuple(values)
    _file_cache[name] = (stat.st_mtime, stat.st_size, stat.st_ino, found)
    return found


def _known() -> tuple[list[str], list[str]]:
    """(the secret values, longest first; the same with their encodings), cached until the
    environment or an env file changes."""
    global _known_cache
    env, file = _from_environment(), _from_env_files()
    cached = _known_cache
    if cached is not None and cached[0] == env and cached[1] == file:
        return cached[2], cached[3]
    values = sorted({v for _, v in (*env, *file) if len(v) >= MIN_SECRET_LENGTH}, key=len,
                    reverse=True)  # fmt: skip
    forms = {f for v in values for f in (v, *encoded_forms(v))}
    _known_cache = (env, file, values, sorted(forms, key=len, reverse=True))
    return values, _known_cache[3]


def secret_sources() -> dict[str, str]:
    """Each secret value → the variable it came from (for a report that must name, never
    show, what it found)."""
    env, file = _from_environment(), _from_env_files()
    found = {v: k for k, v in reversed((*env, *file)) if len(v) >= MIN_SECRET_LENGTH}
    return dict(sorted(found.items(), key=lambda item: len(item[0]), reverse=True))


def secret_values() -> list[str]:
    """Every secret value the harness knows of, as written, longest first."""
    return _known()[0]


def known_secrets() -> list[str]:
    """Every secret value the harness knows of and its encodings, longest first (so a value
    containing another is masked whole)."""
    return _known()[1]


def encoded_forms(value: str) -> list[str]:
    """How ``value`` looks once encoded where it may be hidden in a text or a file: base64
    (standard and URL-safe, at each of the three alignments it can take inside a longer
    string — the characters every alignment shares), hex (both cases), URL-encoded."""
    raw = value.encode("utf-8")
    forms: set[str] = set()
    for offset in range(3):
        padded = b"\0" * offset + raw
        whole = len(padded) // 3 * 4  # the characters that depend on the value's bytes only
        for encoded in (base64.b64encode(padded), base64.urlsafe_b64encode(padded)):
            inner = encoded.decode("ascii")[4 if offset else 0 : whole]
            if len(inner) >= MIN_SECRET_LENGTH:
                forms.add(inner)
    forms.update({raw.hex(), raw.hex().upper(), urllib.parse.quote(value, safe="")})
    forms.discard(value)
    return sorted(forms)


def without_secrets(env: Mapping[str, str]) -> dict[str, str]:
    """``env`` without the variables that hold a known secret (by value, whatever their name):
    for the environment of code the harness does not trust."""
    values = secret_values()
    return {k: v for k, v in env.items() if not any(s in v for s in values)}


def redact(text: str) -> str:
    """``text`` with every known secret value and every token-shaped string masked."""
    if not text:
        return text
    for value in known_secrets():
        if value in text:
            text = text.replace(value, REDACTED)
    lower = text.lower()
    for hints, pattern, folded in _SCANS:
        haystack = lower if folded else text
        if not any(h in haystack for h in hints):
            continue
        if pattern.groups == 2:  # url credentials: keep the user, hide the secret
            text = pattern.sub(lambda m: f"{m.group(1)}:{REDACTED}@", text)
        elif pattern.groups == 1:
            text = pattern.sub(lambda m: m.group(1) + REDACTED, text)
        else:
            text = pattern.sub(REDACTED, text)
    return text


def redact_bytes(data: bytes) -> bytes:
    """Text files are redacted; bytes that are not UTF-8 (images, archives) pass unchanged."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return data
    cleaned = redact(text)
    return data if cleaned == text else cleaned.encode("utf-8")


def redact_value(value: Any) -> Any:
    """Every string inside a JSON-like structure (dict keys included), redacted."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {redact_value(k): redact_value(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(redact_value(v) for v in value)
    return value


def contains_secret(text: str) -> bool:
    return redact(text) != text
