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

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from harness_cli import paths
from harness_cli.errors import ConfigError, ServiceError
from harness_cli.resources import cron_dir as packaged
from harness_cli.services.claude_cli import find_claude

BEGIN = "# >>> harness >>>"
END = "# <<< harness <<<"
_ASSIGN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")


UNITS = ("harness-listen.service", "harness-session-fetch.service")
"""The units that are files of their own; each periodic subcommand's service and timer are
rendered from ``PERIODIC`` (``job_units``), so the crontab stays the one list of what runs."""
PERIODIC = ("harness-periodic.service", "harness-periodic.timer")
BASE_PATH = "/usr/local/bin:/usr/bin:/bin"


def cron_dir() -> Path:
    """The packaged schedule files (crontab, harness-cron, systemd/, hooks/)."""

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


@dataclass(frozen=True)
class Job:
    """One periodic subcommand: its crontab line, and the systemd units that stand for it."""

    schedule: str
    args: list[str]

    @property
    def name(self) -> str:
        return self.args[0]

    @property
    def service(self) -> str:
        return f"harness-{self.name}.service"

    @property
    def timer(self) -> str:
        return f"harness-{self.name}.timer"


def jobs() -> list[Job]:
    """Every periodic subcommand of the packaged crontab, in its order (the one list: the
    systemd timers and doctor's check of what is scheduled are derived from it)."""
    return [Job(e.schedule, e.argv[1:]) for e in entries(template()) if len(e.argv) > 1]


def unit_names() -> list[str]:
    """Every unit ``--install-systemd`` writes."""
    return [*UNITS, *(u for j in jobs() for u in (j.service, j.timer))]


def enable_command() -> str:
    """What turns the written timers into a schedule (systemd runs no unit it was not told to)."""
    timers = " ".join(j.timer for j in jobs())
    return f"systemctl --user daemon-reload && systemctl --user enable --now {timers}"


_DAYS = ("Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")


def on_calendar(cron_fields: str) -> str:
    """A crontab schedule as systemd's ``OnCalendar=`` says it, for the forms the packaged
    crontab uses: ``*``, ``N``, ``A,B``, ``*/S`` and ``A-B/S`` (B the field's maximum)."""
    minute, hour, dom, month, dow = cron_fields.split()

    def field(value: str, width: int = 2) -> str:
        if value == "*":
            return "*"
        if "/" in value:
            base, step = value.split("/", 1)
            start = "0" if base == "*" else base.split("-")[0]
            return f"{int(start):0{width}d}/{int(step)}"
        if "-" in value:
            low, high = value.split("-", 1)
            return f"{int(low):0{width}d}..{int(high):0{width}d}"
        return ",".join(f"{int(v):0{width}d}" for v in value.split(","))

    days = ""
    if dow != "*":
        days = ",".join(_DAYS[int(d)] for d in dow.split(",")) + " "
    return f"{days}*-{field(month)}-{field(dom)} {field(hour)}:{field(minute)}:00"


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
    job = next((j for j in jobs() if name in (f"systemd/{j.service}", f"systemd/{j.timer}")), None)
    if job is not None:
        text = template(f"systemd/{PERIODIC[0 if name.endswith('.service') else 1]}")
        found = {
            **found,
            "JOB": job.name,
            "ARGS": " ".join(job.args),
            "CRON": job.schedule,
            "ON_CALENDAR": on_calendar(job.schedule),
        }
    else:
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
