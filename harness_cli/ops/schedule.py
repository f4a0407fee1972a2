"""The crontab block: rendered from ``cron/crontab``, installed only on explicit request.

``harness init --install-cron`` prints the block; only ``--yes`` writes it, and then only the
lines between the two marker comments change — a user's own crontab lines are never touched.
``harness doctor`` reads the same markers to say whether the cycles are scheduled.
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


def cron_dir() -> Path:
    """``cron/`` of the checkout the package runs from."""
    return Path(__file__).resolve().parents[2] / "cron"


def template() -> str:
    path = cron_dir() / "crontab"
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(
            f"{path} not found",
            hint="the cron templates ship in the harness repository; run from a checkout",
        ) from None


def harness_bin() -> str:
    """The ``harness`` console script of this installation (absolute: cron's PATH is bare)."""
    sibling = Path(sys.executable).with_name("harness")
    if sibling.exists():
        return str(sibling)
    found = shutil.which("harness")
    return found or "harness"


def render(*, home: Path, config: Path, bin_path: str | None = None) -> str:
    values = {
        "@HARNESS_HOME@": str(home),
        "@HARNESS_CONFIG@": str(config),
        "@HARNESS_BIN@": bin_path or harness_bin(),
        "@HARNESS_CRON@": str(cron_dir() / "harness-cron"),
    }
    text = template()
    for key, value in values.items():
        text = text.replace(key, value)
    return text


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
