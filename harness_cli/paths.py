"""Where things live, per CONTRACT §2–§3. Pure functions of the environment; nothing is
created here (callers create what they write)."""

from __future__ import annotations

import logging
import os
from pathlib import Path


def home() -> Path:
    """``$HARNESS_HOME`` [``~/.harness``]: local, per-machine state."""
    value = os.environ.get("HARNESS_HOME")
    return Path(value).expanduser() if value else Path.home() / ".harness"


def config_dir() -> Path:
    """``$HARNESS_CONFIG``, else ``$HARNESS_HOME/agent-config`` once ``harness init`` wrote it,
    else ``./agent-config`` if present (CONTRACT §2), else ``$HARNESS_HOME/agent-config``.

    A real install always has its own config (init writes it, the schedule names it in
    HARNESS_CONFIG), so cron, a checkout's root (whose ``agent-config/`` is the sandbox's
    example) and wherever the operator stands all read the same one; ``./agent-config`` is
    only a fallback for a machine with no install, and using it is said in a warning line,
    never silently. ``stray_config()`` names an ``./agent-config`` that is being ignored."""
    value = os.environ.get("HARNESS_CONFIG")
    if value:
        return Path(value).expanduser()
    installed = install_config_dir()
    if installed.is_dir():
        return installed
    local = Path.cwd() / "agent-config"
    if local.is_dir():
        _warn_local_config(local)
        return local
    return installed


def install_config_dir() -> Path:
    """Where ``harness init`` writes the config and the schedule points: ``$HARNESS_CONFIG``
    [``$HARNESS_HOME/agent-config``] — never the current directory."""
    value = os.environ.get("HARNESS_CONFIG")
    return Path(value).expanduser() if value else home() / "agent-config"


_warned_local: set[Path] = set()


def _warn_local_config(local: Path) -> None:
    if local in _warned_local:
        return
    _warned_local.add(local)

    logging.getLogger("harness.config").warning(
        "using %s from the current directory: %s does not exist; `harness init` writes the "
        "install's own config (or set HARNESS_CONFIG)",
        local,
        install_config_dir(),
    )


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


def control_root() -> Path:
    """``$HARNESS_WORKSPACE/control``: what the harness decided about each case (status,
    approvals, budgets, cost, acceptance results), beside ``case-workspaces/`` and outside
    every agent's writable root (#28 R4). Synced with the workspace, so machines agree."""
    return workspace() / "control"


def logs_dir() -> Path:
    return home() / "logs"


def locks_dir() -> Path:
    return home() / "locks"


def precommit_dir() -> Path:
    """The pre-commitment lock's records (one per case), outside every case folder."""
    return home() / "precommit"


def payloads_dir() -> Path:
    return home() / "payloads"


def state_file(name: str) -> Path:
    return home() / name


def read_env_file(path: Path) -> dict[str, str]:
    """``KEY=value`` lines as the wrapper's ``set -a; . file`` and systemd read them: comments
    and blank lines skipped, one level of double or single quotes removed."""
    values: dict[str, str] = {}
    for raw in path.read_text(encoding="utf-8").splitlines():
        line = raw.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, _, value = line.partition("=")
        key = key.strip().removeprefix("export ").strip()
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
            value = value[1:-1]
        values[key] = value
    return values
