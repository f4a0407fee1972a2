"""Fail-closed acceptance: the harness runs the required checks itself and keeps the evidence.

The model cannot declare its own success. A change counts as passing only when the harness has
run every required check in the worktree, read the exit codes, and durably recorded the tested
snapshot, the commands, their results and the tool versions (reference 003, "L'acceptation
nécessite des éléments probants indépendants"). Nothing in the record comes from the model.

Any later change to a file invalidates the result: :func:`is_valid_for` recomputes the head sha
and the snapshot digest (``git diff HEAD`` plus the untracked files) and compares both. The
required checks stay out of the agent's reach: :func:`checks_changed` lists the changes to the
files they depend on, for the operator to approve before the result is trusted.

Fail-closed means: no check configured, a check that cannot start, a timeout, or a worktree that
changed while the checks ran all give ``passed=False``.

The checks run code the agent wrote, so they run in the agent's box (``agents.sandbox``): a
clean checkout of the snapshot (:mod:`clean_tree`) mounted at the worktree's path, read-write,
the toolchain read-only, a scratch HOME, no network, no ``$HARNESS_HOME``, no credentials. With
no working sandbox they are refused like any other agent command, unless harness.yaml says
``sandbox.required: false``. ``python -m pytest`` runs the harness's own pytest, imported
before the tree is on ``sys.path`` (:data:`PYTEST_BOOT`): a ``pytest.py`` in the tree cannot
stand in for it (#28 R6).
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import importlib.metadata
import importlib.util
import os
import platform
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Collection, Sequence
from datetime import datetime
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from harness_cli import __version__, clock, components
from harness_cli.agents import limits, sandbox
from harness_cli.agents.sandbox import View
from harness_cli.agents.sandbox_settings import LimitSettings, SandboxSettings
from harness_cli.bounded import Bounded, drain, drain_and_wait
from harness_cli.delivery import clean_tree, test_weakening
from harness_cli.delivery.check_guard import DEFAULT_CHECK_PATHS, checks_changed, guard_verdict
from harness_cli.delivery.worktrees import git_for
from harness_cli.errors import ConfigError, HarnessError
from harness_cli.services.git import Git
from harness_cli.workspace import control

__all__ = [
    "DEFAULT_CHECKS",
    "DEFAULT_CHECK_PATHS",
    "AcceptanceRecord",
    "CheckRun",
    "accepts_head",
    "checks_changed",
    "is_valid_for",
    "latest_record",
    "required_checks",
    "run_acceptance",
]

CHECKS_KEY = "required_checks"
"""The optional projects.yaml key (per project) listing the commands acceptance runs."""
DEFAULT_CHECKS = ("python -m pytest -q",)
PYTEST_BOOT = (
    "import sys, pytest; sys.argv[0] = 'pytest'; sys.path.insert(0, ''); "
    "raise SystemExit(pytest.main())"
)
"""``python -m pytest`` as the harness runs it: ``python -I -B -c PYTEST_BOOT …`` imports the
runner from the harness's interpreter first (isolated: no cwd, no PYTHON* variables), then puts
the tree first on ``sys.path`` as ``-m`` would, for the code under test."""
TAIL_CHARS = 4000
_NOISE_PARTS = frozenset(
    {"__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache", ".tox", ".nox", ".venv"}
)
_NOISE_SUFFIXES = (".pyc", ".pyo")


class CheckRun(BaseModel):
    model_config = ConfigDict(extra="allow")

    command: str
    """As configured, e.g. ``python -m pytest -q``."""
    argv: list[str]
    """What was executed (``python`` resolved to the harness's interpreter)."""
    exit_code: int | None
    """None when the command could not start or was killed on timeout."""
    duration_s: float
    timed_out: bool = False
    error: str = ""
    stdout_tail: str = ""
    stderr_tail: str = ""
    stdout_bytes: int = 0
    """How much the check printed in all; only the tail is kept."""
    stderr_bytes: int = 0

    @property
    def output_tail(self) -> str:
        """What a person (or the agent, when a check failed) reads first: stdout, then stderr."""
        parts = [self.error, self.stdout_tail.rstrip(), self.stderr_tail.rstrip()]
        return "\n".join(p for p in parts if p)


class AcceptanceRecord(BaseModel):
    """``control/<case>/acceptance/<stamp>-<sha12>.json`` (mirrored in the case folder): the
    evidence that a snapshot passed."""

    model_config = ConfigDict(extra="allow")

    schema_version: int = 1
    worktree: str
    head_sha: str
    """``git rev-parse HEAD`` when the checks started."""
    snapshot_digest: str
    """sha256 over the head sha, ``git diff HEAD`` and the untracked files' contents."""
    dirty_paths: list[str] = Field(default_factory=list)
    """Uncommitted or untracked paths in the tested snapshot; non-empty means the commit alone
    was not what got tested."""
    excluded: list[str] = Field(default_factory=list)
    """Worktree-relative prefixes left out of the digest (the case dir, when it lies inside)."""
    checks: list[CheckRun] = Field(default_factory=list)
    tools: dict[str, str] = Field(default_factory=dict)
    passed: bool
    reason: str = ""
    """Why it did not pass, in one line; empty when it did."""
    started_at: datetime
    finished_at: datetime
    base_sha: str = ""
    """The branch's base, against which changes to the checks were looked for (empty: not
    looked for)."""
    checks_changed: list[str] = Field(default_factory=list)
    """What the required checks run that this change edits (:mod:`check_guard`)."""
    checks_digest: str = ""
    """The digest of exactly that change, which the operator's OK names."""
    tests_weakened: list[str] = Field(default_factory=list)
    """How the change takes away a test CI reported failing (``test_weakening``): never
    accepted, whatever the checks and the pipeline say."""
    checks_approved: bool = False
    """The operator accepted exactly that change; only then may ``passed`` be true with it."""


def required_checks(project: object) -> list[str]:
    """The project's ``required_checks`` from projects.yaml, or :data:`DEFAULT_CHECKS`."""
    value = getattr(project, CHECKS_KEY, None)
    if value is None:
        return list(DEFAULT_CHECKS)
    if not isinstance(value, list) or not all(isinstance(c, str) and c.strip() for c in value):
        raise ConfigError(
            f"{CHECKS_KEY} must be a list of commands, got {value!r}",
            hint='e.g. required_checks: ["python -m pytest -q"]',
        )
    return list(value)


# -- the snapshot -----------------------------------------------------------------------------
def _noise(path: str) -> bool:
    parts = path.split("/")
    return path.endswith(_NOISE_SUFFIXES) or any(p in _NOISE_PARTS for p in parts)


def _untracked(git: Git, excluded: Sequence[str]) -> list[str]:
    raw = git.run("ls-files", "--others", "--exclude-standard", "-z")
    return sorted(
        p
        for p in raw.split("\0")
        if p and not _noise(p) and not any(p == e or p.startswith(e + "/") for e in excluded)
    )


class _Digesting(Bounded):
    """A buffer that keeps nothing: every chunk goes into the digest (the agent's change may
    be a file of any size, #28 R10)."""

    def __init__(self, digest: hashlib._Hash) -> None:
        super().__init__(0, 0)
        self.digest = digest

    def feed(self, chunk: bytes) -> None:
        self.total += len(chunk)
        self.digest.update(chunk)


def snapshot(worktree: Path, *, excluded: Sequence[str] = ()) -> tuple[str, str, list[str]]:
    """(head sha, digest, dirty paths) of ``worktree`` as it is now."""
    git = git_for(worktree)
    head = git.run("rev-parse", "HEAD")
    digest = hashlib.sha256()
    digest.update(head.encode("utf-8") + b"\0")
    # Bytes, not text: a decoding step could map two different edits to the same digest.
    git.stream(
        "diff", "--binary", "--no-color", "--no-ext-diff", "--no-renames", "HEAD",
        into=_Digesting(digest),
    )  # fmt: skip
    digest.update(b"\0")
    changed = git.run("diff", "--name-only", "-z", "--no-renames", "HEAD").split("\0")
    untracked = _untracked(git, excluded)
    for rel in untracked:
        path = worktree / rel
        digest.update(rel.encode("utf-8") + b"\0")
        if path.is_symlink():
            digest.update(os.readlink(path).encode("utf-8"))
        elif path.is_file():
            with path.open("rb") as handle:
                for chunk in iter(lambda: handle.read(1 << 16), b""):
                    digest.update(chunk)
        digest.update(b"\0")
    dirty = sorted({p for p in changed if p} | set(untracked))
    return head, digest.hexdigest(), dirty


# -- running the checks -----------------------------------------------------------------------
def _argv(command: str) -> list[str]:
    argv = shlex.split(command)
    if argv and argv[0] in ("python", "python3"):
        argv[0] = sys.executable
        if argv[1:3] == ["-m", "pytest"]:
            argv[1:3] = ["-I", "-B", "-c", PYTEST_BOOT]
    return argv


def _env(box: View | None) -> dict[str, str]:
    # The checks run code the agent wrote: an allowlist (an agent command's environment), never
    # the harness's own minus a list of names (#28 R3: AWS_SECRET_ACCESS_KEY got through).
    home = box.home if box is not None else Path(os.environ.get("HOME") or "/nonexistent")
    return sandbox.agent_env(home)


def _run_check(
    command: str, worktree: Path, timeout_s: float, box: View | None, bounds: LimitSettings
) -> CheckRun:
    run = CheckRun(command=command, argv=[], exit_code=None, duration_s=0.0)
    started = time.monotonic()
    # Streamed into bounded tails (#28 R10): a check runs the agent's code, which may print
    # without end; only the tails are kept, the rest is counted.
    out, err = Bounded(0, TAIL_CHARS * 4), Bounded(0, TAIL_CHARS * 4)
    with limits.applied(bounds, own_userns=box is not None) as wrap:
        try:
            run.argv = _argv(command)
            # bwrap --die-with-parent: killing the group below ends everything inside the box
            argv = wrap.inner(run.argv)
            argv = sandbox.bwrap_argv(box, argv) if box is not None else argv
            proc = wrap.popen(
                wrap.outer(argv),
                cwd=worktree,
                env=_env(box),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
            )
        except (ValueError, OSError) as exc:  # unparseable quoting, command not found
            run.error = str(exc)
            return run
        assert proc.stdout is not None and proc.stderr is not None
        with proc.stdout, proc.stderr:
            left = started + timeout_s - time.monotonic()
            if not drain_and_wait(proc, {proc.stdout: out, proc.stderr: err}, left):
                # The whole process group: a test runner's children must not outlive the check.
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                drain({proc.stdout: out, proc.stderr: err}, time.monotonic() + 5)
                run.timed_out, run.error = True, f"killed after {timeout_s:g}s"
        code = proc.wait()
    run.exit_code = None if run.timed_out else code
    run.duration_s = round(time.monotonic() - started, 3)
    run.stdout_tail, run.stderr_tail = out.text()[-TAIL_CHARS:], err.text()[-TAIL_CHARS:]
    run.stdout_bytes, run.stderr_bytes = out.total, err.total
    return run


def _tools(worktree: Path) -> dict[str, str]:
    tools = {
        "harness": __version__,
        "python": f"{platform.python_version()} ({sys.executable})",
        "platform": platform.platform(),
    }
    with contextlib.suppress(HarnessError):
        tools["git"] = Git(worktree).run("--version")
    if importlib.util.find_spec("pytest") is not None:
        with contextlib.suppress(importlib.metadata.PackageNotFoundError):
            tools["pytest"] = importlib.metadata.version("pytest")
    return tools


def _verdict(checks: list[CheckRun], changed_during: bool) -> str:
    if not checks:
        return "no required checks configured; nothing was verified"
    failed = [c for c in checks if c.exit_code != 0]
    if failed:
        first = failed[0]
        how = first.error or f"exit {first.exit_code}"
        return f"{len(failed)} of {len(checks)} checks failed; first: {first.command!r} ({how})"
    if changed_during:
        return "the worktree changed while the checks ran; the tested snapshot is gone"
    return ""


def run_acceptance(
    worktree: Path,
    checks: list[str],
    case_dir: Path,
    *,
    timeout_s: float = 600,
    base_sha: str | None = None,
    approved: Collection[str] = (),
    box: SandboxSettings | None = None,
    worktrees: Path | None = None,
) -> AcceptanceRecord:
    """Run every check in ``worktree`` (each up to ``timeout_s``), record the result durably in
    ``<case_dir>/acceptance/`` and return it. Every check runs even after one fails, so the
    record shows the whole picture. ``base_sha``: fail closed when the change edits what the
    checks run, unless ``approved`` holds the digest of exactly that change. ``box``: the
    harness.yaml ``sandbox:`` settings the checks run under (default: boxed, failing closed);
    ``worktrees``: the configured worktrees' folder, out of the checks' sight."""
    worktree = Path(worktree).resolve()
    case_dir = Path(case_dir)
    excluded: list[str] = []
    with contextlib.suppress(ValueError):
        excluded.append(case_dir.resolve().relative_to(worktree).as_posix())
    started_at = clock.now()
    head, digest, dirty = snapshot(worktree, excluded=excluded)
    settings = box or SandboxSettings()
    with (
        sandbox.scratch() as folder,
        clean_tree.checkout(worktree, folder, excluded=excluded) as tree,
    ):
        view, where = None, tree
        if checks and sandbox.required_box("anthropic", settings, "acceptance"):
            view = sandbox.view_for(
                worktree,
                [],
                [],
                folder / "home",
                extra_toolchain=settings.toolchain,
                worktrees=worktrees,
            )
            view = dataclasses.replace(view, mounted=((tree, worktree),))
            where = worktree  # the box's cwd: the tree, mounted there
        runs = [_run_check(command, where, timeout_s, view, settings.limits) for command in checks]
    after = snapshot(worktree, excluded=excluded)
    reason = _verdict(runs, after[:2] != (head, digest))
    guard = guard_verdict(worktree, base_sha, checks, approved) if base_sha else None
    if guard is not None and guard.blocks and not reason:
        reason = guard.reason()
    # The tests CI reported failing may be fixed, never taken away: no approval makes a fix
    # that deletes, skips or weakens them acceptable (#31 item 8; ``test_weakening``).
    weak = test_weakening.weakened(worktree, base_sha, test_weakening.protected(case_dir)) \
        if base_sha else []  # fmt: skip
    if weak and not reason:
        reason = ("the change takes away a test CI reported failing (" + "; ".join(weak)
                  + "): a CI fix must make it pass, not delete, skip or weaken it")  # fmt: skip
    record = AcceptanceRecord(
        worktree=str(worktree),
        head_sha=head,
        snapshot_digest=digest,
        dirty_paths=dirty,
        excluded=excluded,
        checks=runs,
        tools=_tools(worktree),
        passed=not reason,
        reason=reason,
        started_at=started_at,
        finished_at=clock.now(),
        base_sha=base_sha or "",
        checks_changed=guard.changed if guard else [],
        checks_digest=guard.digest if guard else "",
        checks_approved=bool(guard and guard.approved),
        tests_weakened=weak,
    )
    _write(record, case_dir)
    return record


def _write(record: AcceptanceRecord, case_dir: Path) -> None:
    # In the harness's control folder (#28 R4), mirrored into the case folder for humans.
    text = record.model_dump_json(indent=2) + "\n"
    stamp = f"{clock.stamp(record.finished_at)}-{record.head_sha[:12]}"
    control.write_text(case_dir, f"acceptance/{stamp}.json", text)
    control.write_text(case_dir, "acceptance/latest.json", text)


def latest_record(case_dir: Path) -> AcceptanceRecord | None:
    """The newest record of the case, or None (an unreadable one counts as none: fail closed).
    Read from the control folder, never from the case folder's mirror."""
    try:
        return AcceptanceRecord.model_validate_json(
            control.read_bytes(case_dir, "acceptance/latest.json")
        )
    except (OSError, ValueError):
        return None


# -- using a record ---------------------------------------------------------------------------
def is_valid_for(record: AcceptanceRecord, worktree: Path) -> bool:
    """True only if the record passed and ``worktree`` is still exactly the tested snapshot."""
    if not record.passed:
        return False
    try:
        head, digest, _ = snapshot(Path(worktree).resolve(), excluded=record.excluded)
    except HarnessError:
        return False
    return head == record.head_sha and digest == record.snapshot_digest


def accepts_head(record: AcceptanceRecord | None, head_sha: str) -> bool:
    """True if ``record`` is a pass for exactly the commit ``head_sha`` and nothing else: a
    snapshot with uncommitted changes was not the commit that gets pushed."""

    if not components.enabled("acceptance"):  # an eval ablation: whatever the record says
        return bool(head_sha)
    return (
        record is not None
        and record.passed
        and bool(head_sha)
        and record.head_sha == head_sha
        and not record.dirty_paths
    )
