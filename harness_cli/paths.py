"""Where things live, per CONTRACT §2–§3. Pure functions of the environment; nothing is
created here (callers create what they write)."""

from __future__ import annotations

import os
from pathlib import Path


def home() -> Path:
    """``$HARNESS_HOME`` [``~/.harness``]: local, per-machine state."""
    value = os.environ.get("HARNESS_HOME")
    return Path(value).expanduser() if value else Path.home() / ".harness"


def config_dir() -> Path:
    """``$HARNESS_CONFIG`` [``./agent-config`` if present, else ``$HARNESS_HOME/agent-config``]."""
    value = os.environ.get("HARNESS_CONFIG")
    if value:
        return Path(value).expanduser()
    local = Path.cwd() / "agent-config"
    return local if local.is_dir() else home() / "agent-config"


def workspace() -> Path:
    """``$HARNESS_WORKSPACE`` [``$HARNESS_HOME/workspace``]: the git-synced case repo."""
    value = os.environ.get("HARNESS_WORKSPACE")
    return Path(value).expanduser() if value else home() / "workspace"


def cases_root() -> Path:
    return workspace() / "case-workspaces"


def logs_dir() -> Path:
    return home() / "logs"


def locks_dir() -> Path:
    return home() / "locks"


def payloads_dir() -> Path:
    return home() / "payloads"


def state_file(name: str) -> Path:
    return home() / name
