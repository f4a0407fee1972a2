"""The schedule: the crontab block and the systemd user units, rendered from the packaged
templates (``harness_cli/defaults/cron/``) with this machine's absolute paths, installed only on
explicit request.

``harness init --install-cron`` prints the block; only ``--yes`` writes it, and then only the
lines between the two marker comments change — a user's own crontab lines are never touched.
``--install-systemd --yes`` writes the units into the user's systemd folder. Both carry the
installed ``harness``, every HARNESS_* path and the env file, because neither cron nor systemd
gives a job the login shell's environment. ``harness doctor`` checks them against this run's.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from harness_cli.errors import ConfigError, ServiceError

BEGIN = "# >>> harness >>>"
END = "# <<< harness <<<"
_ASSIGN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")


UNITS = (
    "harness-listen.service",
    "harness-poll-slack.service",
    "harness-poll-slack.timer",
    "harness-session-fetch.service",
)
BASE_PATH = "/usr/local/bin:/usr/bin:/bin"


def cron_dir() -> Path:
    """The packaged schedule files (crontab, harness-cron, systemd/, hooks/)."""
    from harness_cli.resources import cron_dir as packaged

    return packaged()


def wrapper() -> Path:
    return cron_dir() / "harness-cron"


def template(name: str = "crontab") -> str:
    path = cron_dir() / name
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(
            f"{path} not found", hint="the harness package is incomplete: reinstall it"
        ) from None


def harness_bin() -> str:
    """The ``harness`` console script of this installation (absolute: cron's PATH is bare)."""
    sibling = Path(sys.executable).with_name("harness")
    if sibling.exists():
        return str(sibling)
    found = shutil.which("harness")
    return found or "harness"


def values(
    *,
    home: Path,
    config: Path,
    workspace: Path | None = None,
    worktrees: Path | None = None,
    bin_path: str | None = None,
) -> dict[str, str]:
    """What every scheduled run is started with: absolute paths, nothing left to a shell."""
    from harness_cli import paths
    from harness_cli.services.claude_cli import find_claude

    binary = bin_path or harness_bin()
    claude = find_claude()
    dirs = [str(Path(binary).parent)] if "/" in binary else []
    dirs += [str(Path.home() / ".local" / "bin"), BASE_PATH]
    return {
        "HARNESS_HOME": str(home),
        "HARNESS_CONFIG": str(config),
        "HARNESS_WORKSPACE": str(workspace or home / "workspace"),
        "HARNESS_WORKTREES": str(worktrees or Path.home() / ".worktrees"),
        "HARNESS_ENV_FILE": str(home / paths.env_file().name),
        "HARNESS_BIN": binary,
        "HARNESS_CLAUDE_BIN": str(claude.resolve()) if claude else "",
        "HARNESS_PATH": ":".join(dict.fromkeys(":".join(dirs).split(":"))),
        "HARNESS_CRON": str(wrapper()),
    }


def render(
    *,
    home: Path,
    config: Path,
    bin_path: str | None = None,
    workspace: Path | None = None,
    worktrees: Path | None = None,
    name: str = "crontab",
) -> str:
    """The crontab block (``name="crontab"``) or one systemd unit (``systemd/<unit>``)."""
    found = values(
        home=home, config=config, workspace=workspace, worktrees=worktrees, bin_path=bin_path
    )
    text = template(name)
    for key, value in found.items():
        text = text.replace(f"@{key}@", value)
    return text


def assignments(text: str) -> dict[str, str]:
    """The ``VAR=value`` lines of a crontab text (cron hands these to every job)."""
    found: dict[str, str] = {}
    for raw in text.splitlines():
        line = raw.strip()
        if _ASSIGN.match(line):
            key, _, value = line.partition("=")
            found[key] = value.strip()
    return found


def systemd_dir() -> Path:
    """Where systemd looks for user units: ``$XDG_CONFIG_HOME/systemd/user``."""
    import os

    base = os.environ.get("XDG_CONFIG_HOME")
    return (Path(base) if base else Path.home() / ".config") / "systemd" / "user"


@dataclass(frozen=True)
class Entry:
    schedule: str
    """The five cron fields."""
    argv: list[str]
    """The command line after the cron fields."""


def entries(text: str) -> list[Entry]:
    """The job lines of a crontab text (comments, blank lines and VAR=value lines skipped)."""
    found = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#") or _ASSIGN.match(line):
            continue
        fields = line.split()
        found.append(Entry(" ".join(fields[:5]), fields[5:]))
    return found


def block_of(crontab: str) -> str:
    """The harness block of a crontab, markers included ("" when there is none)."""
    lines = crontab.splitlines()
    if BEGIN not in lines:
        return ""
    start = lines.index(BEGIN)
    end = lines.index(END, start) if END in lines[start:] else len(lines) - 1
    return "\n".join(lines[start : end + 1]) + "\n"


def merge(existing: str, block: str) -> str:
    """``existing`` with its harness block replaced by ``block`` (appended when absent)."""
    old = block_of(existing)
    rest = existing.replace(old, "") if old else existing
    if rest and not rest.endswith("\n"):
        rest += "\n"
    return rest + block


def current(crontab: str = "crontab") -> str | None:
    """The user's crontab ("" when there is none); None when there is no crontab command."""
    exe = shutil.which(crontab)
    if exe is None:
        return None
    proc = subprocess.run([exe, "-l"], capture_output=True, text=True, check=False, timeout=30)
    if proc.returncode != 0:
        if "no crontab" in proc.stderr.lower():
            return ""
        raise ServiceError(f"`crontab -l` failed: {proc.stderr.strip()[:200]}")
    return proc.stdout


def install(text: str, crontab: str = "crontab") -> None:
    """Replace the user's crontab with ``text`` (the caller merged it)."""
    exe = shutil.which(crontab)
    if exe is None:
        raise ServiceError(
            "no `crontab` command on this machine",
            hint="install cron (apt-get install cron), or use the systemd units in cron/systemd/",
        )
    proc = subprocess.run(
        [exe, "-"], input=text, capture_output=True, text=True, check=False, timeout=30
    )
    if proc.returncode != 0:
        raise ServiceError(f"`crontab -` failed: {proc.stderr.strip()[:200]}")
