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

What is masked: the value of every known secret — the token variables in the environment and
in ``$HARNESS_HOME/env`` (the file cron and systemd read) — and anything shaped like a token
(Slack ``xox?-``/``xapp-``, GitLab ``glpat-``…, Anthropic ``sk-ant-``, GitHub, AWS access keys,
private key blocks, bearer/private-token headers, credentials in URLs), whatever its source: a
customer pasting their token into a ticket must not see it echoed by the harness either.
"""

from __future__ import annotations

import os
import re
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
_SECRET_NAME = re.compile(r"(TOKEN|SECRET|PASSWORD|PASSWD|API_KEY|PRIVATE_KEY|CREDENTIALS?)$")
"""Any other variable named like a credential (``JIRA_API_TOKEN``, ``DB_PASSWORD``…)."""
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

_env_cache: tuple[Any, tuple[str, ...]] | None = None
_file_cache: tuple[str, float, int, tuple[str, ...]] | None = None
_known_cache: tuple[tuple[str, ...], tuple[str, ...], list[str]] | None = None


def env_file() -> Path:
    """``$HARNESS_HOME/env``: the tokens cron and the systemd units load (cron/README.md)."""
    return Path(_env_file_name())


def _env_file_name() -> str:
    home = os.environ.get("HARNESS_HOME") or "~/.harness"
    if home.startswith("~"):
        home = os.path.expanduser(home)
    return home + "/env"


def _is_secret_name(name: str) -> bool:
    return name in SECRET_ENV or bool(_SECRET_NAME.search(name))


def _from_environment() -> tuple[str, ...]:
    """Secret values of the process environment, re-read only when it changes."""
    global _env_cache
    data = getattr(os.environ, "_data", None)  # CPython's raw mapping: cheap to compare
    key = tuple(data.items()) if isinstance(data, dict) else tuple(os.environ.items())
    cached = _env_cache
    if cached is not None and cached[0] == key:
        return cached[1]
    found = tuple(v for k, v in os.environ.items() if _is_secret_name(k))
    _env_cache = (key, found)
    return found


def _from_env_file(name: str) -> tuple[str, ...]:
    """Secret values of the env file (``KEY=value`` lines, optional quotes and ``export``);
    re-read only when the file changes."""
    global _file_cache
    try:
        stat = os.stat(name)
    except OSError:
        return ()
    cached = _file_cache
    if cached and cached[0] == name and cached[1] == stat.st_mtime and cached[2] == stat.st_size:
        return cached[3]
    values: list[str] = []
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
        if _is_secret_name(key.strip()) and value:
            values.append(value)
    found = tuple(values)
    _file_cache = (name, stat.st_mtime, stat.st_size, found)
    return found


def known_secrets() -> list[str]:
    """Every secret value the harness knows of, longest first (so a value containing another
    is masked whole)."""
    global _known_cache
    env, file = _from_environment(), _from_env_file(_env_file_name())
    cached = _known_cache
    if cached is not None and cached[0] is env and cached[1] is file:
        return cached[2]
    values = {v for v in (*env, *file) if len(v) >= MIN_SECRET_LENGTH}
    known = sorted(values, key=len, reverse=True)
    _known_cache = (env, file, known)
    return known


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
