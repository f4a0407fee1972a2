"""The empirical anchor (Phase C): iteration one starts from ground truth, not from the ticket.

"Only on iteration one, a few OS-level commands run with no LLM in the loop: journalctl error
tails, disk and memory snapshots and a search for log files. [...] The step never blocks,
silently swallows errors and takes under a second."
"""

from __future__ import annotations

import shutil
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

BUDGET_SECONDS = 0.9
"""The whole anchor stays under a second; each probe gets what is left."""


def empirical_anchor(search_roots: tuple[Path, ...] = (Path("/var/log"),)) -> str:
    started = time.monotonic()
    sections: list[str] = []

    def left() -> float:
        return max(0.05, BUDGET_SECONDS - (time.monotonic() - started))

    probes: list[tuple[str, Callable[[], str]]] = [
        ("journalctl errors (last 20)", lambda: _journal(left())),
        ("disk", _disk),
        ("memory", _memory),
        ("log files", lambda: _log_files(search_roots, started)),
    ]
    for title, probe in probes:
        if time.monotonic() - started > BUDGET_SECONDS:
            sections.append(f"### {title}\n(skipped: anchor time budget used)")
            continue
        try:
            body = probe().strip() or "(nothing)"
        except Exception as exc:  # noqa: BLE001 - the anchor never blocks and never fails
            body = f"(unavailable: {type(exc).__name__})"
        sections.append(f"### {title}\n{body}")
    return (
        "## Empirical anchor (raw, gathered before any hypothesis)\n\n"
        + "\n\n".join(sections)
        + "\n"
    )


def _journal(timeout: float) -> str:
    if not shutil.which("journalctl"):
        return "(journalctl not available)"
    out = subprocess.run(
        ["journalctl", "-p", "err", "-n", "20", "--no-pager", "-q"],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    return out.stdout[-4000:]


def _disk() -> str:
    usage = shutil.disk_usage("/")
    pct = 100 * usage.used / usage.total if usage.total else 0
    return f"/: {usage.used / 2**30:.1f} GiB used of {usage.total / 2**30:.1f} GiB ({pct:.0f}%)"


def _memory() -> str:
    info = Path("/proc/meminfo")
    if not info.exists():
        return "(no /proc/meminfo)"
    keep = ("MemTotal", "MemAvailable", "SwapTotal", "SwapFree")
    return "\n".join(line for line in info.read_text().splitlines() if line.split(":")[0] in keep)


def _log_files(roots: tuple[Path, ...], started: float) -> str:
    found: list[str] = []
    for root in roots:
        if not root.is_dir():
            continue
        for path in root.rglob("*.log"):
            if time.monotonic() - started > BUDGET_SECONDS * 0.8 or len(found) >= 20:
                break
            try:
                found.append(f"{path} ({path.stat().st_size} bytes)")
            except OSError:
                continue
    return "\n".join(found)
