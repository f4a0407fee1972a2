"""Nothing leaves with a push that should not (#21 p2): before any push, the lines the new
commits add are scanned for every secret value the harness knows (its environment and the env
file ``$HARNESS_HOME/env`` that cron and systemd source) and for token-shaped strings
(detect-secrets' format plugins plus the shapes of the tokens the harness itself holds).

A hit refuses the push. What is reported is the file and the line, never the value: the
operator gets one DM that says where to look, and the branch stays local.
"""

from __future__ import annotations

import logging
import os
import re
import shlex
from dataclasses import dataclass
from pathlib import Path

from harness_cli import paths
from harness_cli.errors import ServiceError
from harness_cli.logs import event
from harness_cli.services.git import Git

log = logging.getLogger("harness.delivery.secret_scan")

SECRET_NAME = re.compile(r"TOKEN|SECRET|PASSWORD|PASSWD|API_KEY|PRIVATE_KEY|CREDENTIAL", re.I)
"""An environment variable whose name says it holds a secret."""
MIN_SECRET_CHARS = 8
"""Shorter values are too common to mean anything (``true``, a port)."""
TOKEN_SHAPES = {
    "Slack token": re.compile(r"xox[abposre]-[A-Za-z0-9-]{10,}|xapp-[A-Za-z0-9-]{10,}"),
    "GitLab token": re.compile(r"gl(?:pat|dt|rt|ptt|oas|cbt|imt|ft|agent)-[A-Za-z0-9_\-]{16,}"),
    "Anthropic key": re.compile(r"sk-ant-[A-Za-z0-9_\-]{16,}"),
    "PagerDuty token": re.compile(r"\bu\+[A-Za-z0-9_\-]{18,}"),
    "private key": re.compile(r"-----BEGIN (?:[A-Z0-9]+ )?PRIVATE KEY-----"),
}
"""The shapes of the tokens the harness holds, as they leak (ours, so never missed)."""
PLUGINS = (
    "AWSKeyDetector", "ArtifactoryDetector", "AzureStorageKeyDetector", "BasicAuthDetector",
    "DiscordBotTokenDetector", "GitHubTokenDetector", "GitLabTokenDetector", "JwtTokenDetector",
    "MailchimpDetector", "NpmDetector", "OpenAIDetector", "PrivateKeyDetector",
    "PypiTokenDetector", "SendGridDetector", "SlackDetector", "SquareOAuthDetector",
    "StripeDetector", "TelegramBotTokenDetector", "TwilioKeyDetector",
)  # fmt: skip
"""detect-secrets' plugins that match a format, not a guess: no entropy or keyword plugin,
whose false positives on ordinary code would block honest pushes."""


@dataclass(frozen=True)
class Finding:
    path: str
    line: int
    kind: str
    """What matched (``GITLAB_TOKEN's value``, ``Slack Token``…): never the text itself."""

    def render(self) -> str:
        return f"{self.path}:{self.line} ({self.kind})"


def known_secrets() -> dict[str, str]:
    """Value → the variable it came from: secret-named variables of the environment and every
    variable of the env file (it exists to hold tokens)."""
    found: dict[str, str] = {}
    for name, value in os.environ.items():
        if SECRET_NAME.search(name) and len(value) >= MIN_SECRET_CHARS:
            found[value] = name
    for name, value in _env_file(paths.home() / "env").items():
        if len(value) >= MIN_SECRET_CHARS:
            found.setdefault(value, name)
    return found


def _env_file(path: Path) -> dict[str, str]:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return {}
    values: dict[str, str] = {}
    for raw in text.splitlines():
        line = raw.strip().removeprefix("export ").strip()
        name, sep, value = line.partition("=")
        if not sep or line.startswith("#") or not name.strip().isidentifier():
            continue
        try:
            parts = shlex.split(value, comments=True)
        except ValueError:
            parts = [value.strip().strip("'\"")]
        values[name.strip()] = " ".join(parts)
    return values


def added_lines(git: Git, base: str | None, head: str) -> list[tuple[str, int, str]]:
    """(path, line number, text) of every line the commits ``base..head`` add (all of
    ``head`` when there is no base)."""
    spec = [f"{base}..{head}"] if base else [_empty_tree(git), head]
    out = git.run("diff", "-U0", "--no-color", "--no-ext-diff", "--no-renames", *spec)
    found: list[tuple[str, int, str]] = []
    path, number = "", 0
    for line in out.splitlines():
        if line.startswith("+++ "):
            path = line[4:].removeprefix("b/")
        elif line.startswith("@@"):
            match = re.search(r"\+(\d+)", line)
            number = int(match.group(1)) if match else 0
        elif line.startswith("+"):
            found.append((path, number, line[1:]))
            number += 1
    return found


def _empty_tree(git: Git) -> str:
    return git.run("hash-object", "-t", "tree", "/dev/null")


def scan(git: Git, base: str | None, head: str) -> list[Finding]:
    """Every added line of ``base..head`` that carries a known secret or a token shape."""
    secrets = known_secrets()
    findings: list[Finding] = []
    lines = added_lines(git, base, head)
    for path, number, text in lines:
        kinds = [f"{name}'s value" for value, name in secrets.items() if value in text]
        kinds += [kind for kind, shape in TOKEN_SHAPES.items() if shape.search(text)]
        findings += [Finding(path, number, kind) for kind in dict.fromkeys(kinds)]
    flagged = {(f.path, f.line) for f in findings}
    findings += [
        Finding(path, number, kind)
        for path, number, kind in _detect_secrets([x for x in lines if x[:2] not in flagged])
    ]
    return findings


def _detect_secrets(lines: list[tuple[str, int, str]]) -> list[tuple[str, int, str]]:
    if not lines:
        return []
    from detect_secrets.core.scan import scan_line
    from detect_secrets.settings import transient_settings

    found: list[tuple[str, int, str]] = []
    with transient_settings({"plugins_used": [{"name": name} for name in PLUGINS]}):
        for path, number, text in lines:
            kinds = dict.fromkeys(str(s.type) for s in scan_line(text))
            found += [(path, number, kind) for kind in kinds]
    return found


def scan_branch(worktree: Path, branch: str, base_branch: str) -> list[Finding]:
    """The commits a push of ``branch`` would send: those not on ``origin/<branch>`` yet (or
    not on ``origin/<base_branch>`` before the first push)."""
    git = Git(worktree)
    head = git.head_sha(f"refs/heads/{branch}")
    if head is None:
        return []
    base = git.head_sha(f"refs/remotes/origin/{branch}") or git.head_sha(
        f"refs/remotes/origin/{base_branch}"
    )
    try:
        findings = scan(git, base, head)
    except ServiceError as exc:  # fail closed: what cannot be scanned does not leave
        return [Finding("(the diff)", 0, f"could not be scanned: {exc.message}")]
    if findings:
        event(
            log, "secret_scan_hit", logging.WARNING, branch=branch,
            where=[f.render() for f in findings],
        )  # fmt: skip
    return findings


def refusal_text(case_id: str, branch: str, findings: list[Finding]) -> str:
    shown = findings[:20]
    more = f"\n…and {len(findings) - len(shown)} more" if len(findings) > len(shown) else ""
    return (
        f":no_entry: Push refused — case {case_id}: the new commits on `{branch}` carry what "
        "looks like a secret, so nothing was pushed and the MR stays (or goes back to) a draft. "
        "Where:\n"
        + "\n".join(f"• `{f.render()}`" for f in shown)
        + more
        + "\nRemove it from the branch's history (and rotate it if it is real), then run the "
        "dev-agent again."
    )
