"""The write guard (004 "La session couvre l'intention. Le Guard couvre ce qui est écrit"):
the files an agent run actually changed — from git, against the run's base, never from the
task text — are attached to its session, and a change inside another live session's exclusive
reservation is refused before push, with the rule and the holder in the message the agent
reads::

    blocked by the write guard: session denied by preflight gate: "acme/billing: src/invoice/"
    is being worked on by claude-code/alice (add proration) — src/invoice/rounding.py

If the check itself fails (the remote unreachable) the write passes, logged: "le Guard ne bloque
jamais un agent à cause de ses propres erreurs".
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from harness_cli import clock
from harness_cli.errors import HarnessError
from harness_cli.logs import event
from harness_cli.services.git import Git
from harness_cli.sessions import lifecycle
from harness_cli.sessions.gate import deny_line, exclusive_in
from harness_cli.sessions.model import Element
from harness_cli.sessions.reservations import look
from harness_cli.state.locks import hold as local_lock

if TYPE_CHECKING:
    from harness_cli.delivery.worktrees import Worktree

log = logging.getLogger("harness.sessions")
PREFIX = "blocked by the write guard: "


@dataclass(frozen=True)
class Blocked:
    file: str
    line: str
    """The deny line naming the holder and the element."""

    def render(self) -> str:
        return f"{PREFIX}{self.line} — {self.file}"


def run_base(wt: Worktree) -> str:
    """The run's base: where the case branch leaves its base branch (after a rebase onto a
    newer base, the base's own new commits are not this run's changes)."""
    try:
        found = Git(wt.path).run("merge-base", "HEAD", f"refs/remotes/origin/{wt.base_branch}")
    except HarnessError:
        return wt.base_sha
    return found or wt.base_sha


def changed_files(path: Path, base: str) -> list[str]:
    """Committed since ``base`` plus what is left in the working tree (tracked or not)."""
    git = Git(path)
    files = set(git.run("diff", "--name-only", f"{base}..HEAD").split()) if base else set()
    for line in git.status_porcelain().splitlines():
        name = line[3:].split(" -> ")[-1].strip().strip('"')
        if name:
            files.add(name)
    return sorted(files)


def write_guard(repo: str, path: Path, base: str) -> list[Blocked]:
    """The changed files of this run that lie in another session's exclusive reservation on
    ``repo``; attaches every changed file to the running session."""
    files = changed_files(path, base)
    session = lifecycle.current()
    if session is not None:
        session.attach_files(files)
    if not files:
        return []
    mine = session.record.id if session is not None else ""
    try:
        with local_lock("sessions-board", timeout=60, what="the reservation board"):
            snap = look(lifecycle.open_board(), clock.now(), lifecycle.machine_id())
    except HarnessError as exc:
        event(log, "write_guard_unchecked", logging.WARNING, repo=repo, error=exc.line())
        return []
    blocked: list[Blocked] = []
    for name in files:
        wanted = Element.repo(repo, name)
        for holder in snap.live:
            if holder.session == mine:
                continue
            hit = next(
                (e for e in holder.elements if e.overlaps(wanted) and exclusive_in(holder, e)), None
            )
            if hit is not None:
                blocked.append(Blocked(name, deny_line(hit, holder)))
                if session is not None:
                    session.held_by_others = sorted({*session.held_by_others, hit.label})
                break
    if blocked:
        event(
            log,
            "write_guard_blocked",
            repo=repo,
            files=[b.file for b in blocked],
            holders=sorted({b.line for b in blocked}),
        )
    return blocked


def revert_note(blocked: list[Blocked], base: str) -> str:
    """What the agent reads: the rule, the holder, and how to give the files back."""
    lines = [b.render() for b in blocked]
    files = " ".join(sorted({b.file for b in blocked}))
    return (
        "The harness refused this change before push: another work session holds these files "
        "exclusively.\n" + "\n".join(lines) + f"\nPut them back as they were (`git checkout "
        f"{base[:12]} -- {files}`, or delete a file you added) and finish the task without them."
    )
