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
    """``$HARNESS_CONFIG`` [``$HARNESS_HOME/agent-config``].

    Never the current directory: a harness run from cron, from a checkout's root (whose
    ``agent-config/`` is the sandbox's example) or from wherever the operator stands must read
    the same config. ``stray_config()`` names an ``./agent-config`` that is being ignored."""
    value = os.environ.get("HARNESS_CONFIG")
    if value:
        return Path(value).expanduser()
    return home() / "agent-config"


def stray_config() -> Path | None:
    """``./agent-config`` when it exists and is not the config in use (doctor and init say so,
    with the ``HARNESS_CONFIG=…`` that would select it)."""
    local = Path.cwd() / "agent-config"
    if not local.is_dir():
        return None
    try:
        return None if local.resolve() == config_dir().resolve() else local.absolute()
    except OSError:
        return local.absolute()


def env_file() -> Path:
    """``$HARNESS_HOME/env``: the tokens that cron (through harness-cron) and the systemd units
    read — ``KEY=value`` lines, mode 0600."""
    return home() / "env"


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
