"""Who the harness's commits on case branches are by: the configured author, else the
machine's own git identity — never a placeholder.

The style SOP: "No AI attribution at all … The MR belongs to the team and not to the model."
A commit authored ``harness <harness@localhost>`` (or by the model's name) says the opposite on
every line of ``git log``. So ``delivery.commit_author`` in harness.yaml names the author; when
it is empty, the identity ``harness doctor`` reports (``git config --global user.name`` /
``user.email``) is used; with neither, nothing is committed and the operator is told how to set
one.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

from harness_cli.delivery.thresholds import DeliveryThresholds
from harness_cli.errors import ConfigError
from harness_cli.services.git import FALLBACK_EMAIL, FALLBACK_NAME

_AUTHOR = re.compile(r"^\s*(?P<name>[^<>]+?)\s*<(?P<email>[^<>\s]+@[^<>\s]+)>\s*$")
_PLACEHOLDER_EMAIL = re.compile(
    r"@localhost(\.localdomain)?$|noreply@anthropic\.com$|^harness@",
    re.IGNORECASE,
)
_PLACEHOLDER_NAME = re.compile(
    r"^(harness|root|claude( code)?|assistant|ai|bot|.*\[bot\])$", re.IGNORECASE
)
HINT = (
    'set delivery.commit_author: "Your Name <you@team.example>" in harness.yaml, or '
    "`git config --global user.name …` and `user.email …` on this machine (see `harness doctor`)"
)


def is_placeholder(name: str, email: str) -> bool:
    """The fallback identity, the model's, a bot's, or an address nobody reads."""
    if (name, email) == (FALLBACK_NAME, FALLBACK_EMAIL):
        return True
    return bool(_PLACEHOLDER_NAME.match(name.strip()) or _PLACEHOLDER_EMAIL.search(email.strip()))


def parse_author(text: str) -> tuple[str, str]:
    match = _AUTHOR.match(text)
    if match is None:
        raise ConfigError(
            f'delivery.commit_author {text!r} is not "Name <email>"',
            hint='e.g. commit_author: "Jane Doe <jane@team.example>"',
        )
    return match["name"], match["email"]


def machine_identity() -> tuple[str, str] | None:
    """``git config user.name/user.email`` outside any repository (global and system config)."""
    found: list[str] = []
    for key in ("user.name", "user.email"):
        proc = subprocess.run(
            ["git", "config", "--get", key],
            capture_output=True,
            text=True,
            check=False,
            cwd=Path(os.path.expanduser("~")) if Path(os.path.expanduser("~")).is_dir() else "/",
            env={**os.environ, "GIT_DIR": os.devnull},
        )
        found.append(proc.stdout.strip())
    name, email = found
    return (name, email) if name and email else None


def commit_identity(th: DeliveryThresholds) -> tuple[str, str]:
    """(name, email) for the harness's commits; ConfigError when only a placeholder is known."""
    if th.commit_author.strip():
        name, email = parse_author(th.commit_author)
        source = "delivery.commit_author"
    else:
        found = machine_identity()
        if found is None:
            raise ConfigError("no git identity for the harness's commits", hint=HINT)
        name, email = found
        source = "the machine's git config"
    if is_placeholder(name, email):
        raise ConfigError(
            f"{source} is a placeholder identity ({name} <{email}>); commits would not be the "
            "team's",
            hint=HINT,
        )
    return name, email
