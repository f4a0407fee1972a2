"""Run trials in parallel, up to the cores, each worker a process of its own (``worker``), and
count every trial started: a trial past its wall clock is killed and counted as ``timeout``, a
worker that dies mid-trial is counted as ``crash`` — and replaced, so the run goes on."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import selectors
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import IO

from harness_cli.eval.trial import TrialResult, TrialSpec, failed_trial

Progress = Callable[[TrialResult, int, int], None]
log = logging.getLogger("harness.eval")


@dataclass
class _Worker:
    proc: subprocess.Popen[str]
    spec: TrialSpec | None = None
    started: float = 0.0
    buffer: str = field(default="")
    tmp: str = ""
    """The worker's own temporary folder: a trial killed in it leaves its home there."""

    @property
    def out(self) -> IO[str]:
        assert self.proc.stdout is not None
        return self.proc.stdout


def default_jobs() -> int:
    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 1)


def run_trials(
    specs: Sequence[TrialSpec],
    *,
    jobs: int | None = None,
    timeout_s: float = 300.0,
    progress: Progress | None = None,
    admit: Callable[[TrialSpec], TrialSpec | None] | None = None,
) -> list[TrialResult]:
    """Every started spec's result, in spec order. ``admit`` sees each spec before it starts
    and may change it or return None: then no further trial starts (a live run's cost cap),
    the ones in flight end and are counted."""
    pending = list(specs)[::-1]
    results: dict[int, TrialResult] = {}
    workers: list[_Worker] = []
    sel = selectors.DefaultSelector()
    total = len(pending)
    # The trials' temporary homes live here: a killed worker's leftovers go with it.
    cli = any(s.runtime == "claude-code" for s in specs)
    scratch = tempfile.mkdtemp(prefix="harness-eval-", dir=scratch_parent(claude_cli=cli))
    # HARNESS_EVAL_LEAN: a trial runs the subcommands its case grades, no more.
    env = {**os.environ, "TMPDIR": scratch, "HARNESS_EVAL_LEAN": "1"}
    # The workers run this very harness, wherever `harness eval` is started from (a checkout
    # with a harness_cli/ of its own, an improvement MR's pipeline, must not shadow it).
    here = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (here, os.environ.get("PYTHONPATH")) if p)
    try:
        for _ in range(min(jobs or default_jobs(), total)):
            workers.append(_spawn(sel, env, scratch))
        while pending or any(w.spec is not None for w in workers):
            for w in workers:
                if w.spec is None and pending:
                    spec = admit(pending.pop()) if admit else pending.pop()
                    if spec is None:
                        pending.clear()
                        break
                    _give(w, spec)
            now = time.monotonic()
            waits = [w.started + timeout_s - now for w in workers if w.spec is not None]
            for key, _ in sel.select(timeout=max(0.05, min(waits, default=1.0))):
                w = key.data
                line = w.out.readline()
                if line:
                    _done(w, TrialResult.from_json(json.loads(line)), results, progress, total)
                    continue
                sel.unregister(w.out)  # EOF: the worker died with its trial
                spec = w.spec
                if spec is not None:
                    why = f"the trial's worker died (exit {w.proc.wait()})"
                    res = failed_trial(spec, "crash", why, time.monotonic() - w.started)
                    _done(w, _spent_by(w, res), results, progress, total)
                workers[workers.index(w)] = _spawn(sel, env, scratch)
            for i, w in enumerate(workers):
                if w.spec is not None and time.monotonic() - w.started > timeout_s:
                    spec = w.spec
                    _kill(w, sel)
                    res = failed_trial(spec, "timeout", f"past its {timeout_s:g} s wall clock",
                                       time.monotonic() - w.started)  # fmt: skip
                    _done(w, _spent_by(w, res), results, progress, total)
                    workers[i] = _spawn(sel, env, scratch)
    finally:
        for w in workers:
            _stop(w, sel)
        shutil.rmtree(scratch, ignore_errors=True)
    return [results[s.index] for s in specs if s.index in results]


def scratch_parent(*, claude_cli: bool = False) -> str | None:
    """Where trials keep their throw-away homes: memory (``/dev/shm``) when the machine has it,
    where git and every fsync cost a fraction of a disk's. The harness runs unchanged; only
    the storage of a home deleted after its trial differs. HARNESS_EVAL_SCRATCH overrides.

    Not under ``/dev`` when a trial runs the claude CLI (``claude_cli``): the CLI's sandbox
    mounts a fresh ``/dev``, so a worktree there vanishes from the agent's commands (every
    test run "file not found") — the disk's temporary folder then."""
    chosen = os.environ.get("HARNESS_EVAL_SCRATCH")
    if chosen:
        if claude_cli and _under_dev(chosen):
            log.warning("HARNESS_EVAL_SCRATCH=%s is under /dev, which the claude CLI's sandbox "
                        "replaces: the trials use the temporary folder", chosen)  # fmt: skip
            return None
        return chosen
    shm = "/dev/shm"
    if claude_cli:
        return None
    return shm if os.path.isdir(shm) and os.access(shm, os.W_OK) else None


def _under_dev(path: str) -> bool:
    return Path(os.path.realpath(path)).is_relative_to("/dev")


def _spent_by(w: _Worker, result: TrialResult) -> TrialResult:
    """A killed trial's spend, from the cost log its home left in the worker's folder: a
    timeout of a live trial spent real money, and a cap that did not see it would overrun."""
    for log_file in Path(w.tmp).glob("*/*/logs/cost/*.jsonl"):
        for raw in log_file.read_text(encoding="utf-8", errors="replace").splitlines():
            with contextlib.suppress(ValueError, TypeError, AttributeError):
                line = json.loads(raw)
                result.usd += float(line.get("usd", 0.0))
                result.tokens += sum(int(line.get(k, 0)) for k in ("in", "out", "cw", "cr"))
    result.usd = round(result.usd, 6)
    shutil.rmtree(w.tmp, ignore_errors=True)
    return result


def _spawn(sel: selectors.BaseSelector, env: dict[str, str], scratch: str) -> _Worker:
    # Each worker's trials make their homes in a folder of its own (TMPDIR).
    own = tempfile.mkdtemp(prefix="w", dir=scratch)
    proc = subprocess.Popen(
        [sys.executable, "-m", "harness_cli.eval.worker"],
        cwd=own,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        bufsize=1,
        env={**env, "TMPDIR": own},
    )
    worker = _Worker(proc, tmp=own)
    sel.register(worker.out, selectors.EVENT_READ, worker)
    return worker


def _give(w: _Worker, spec: TrialSpec) -> None:
    assert w.proc.stdin is not None
    w.spec, w.started = spec, time.monotonic()
    w.proc.stdin.write(json.dumps(asdict(spec)) + "\n")
    w.proc.stdin.flush()


def _done(
    w: _Worker,
    result: TrialResult,
    results: dict[int, TrialResult],
    progress: Progress | None,
    total: int,
) -> None:
    w.spec = None
    results[result.index] = result
    if progress is not None:
        progress(result, len(results), total)


def _kill(w: _Worker, sel: selectors.BaseSelector) -> None:
    with contextlib.suppress(KeyError, ValueError):
        sel.unregister(w.out)
    w.proc.kill()
    w.proc.wait()


def _stop(w: _Worker, sel: selectors.BaseSelector) -> None:
    if w.proc.poll() is None:
        assert w.proc.stdin is not None
        try:
            w.proc.stdin.close()
            w.proc.wait(timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            w.proc.kill()
            w.proc.wait()
    with contextlib.suppress(KeyError, ValueError):
        sel.unregister(w.out)
