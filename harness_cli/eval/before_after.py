"""The improvement MR's before/after figures: the eval suite run on the prompts and SOPs as
they are and as the MR leaves them — the same cases, seeds and model scripts — rendered into
the MR description by the harness from the run's results, never from model text.

A config-level eval measures what an improvement MR may change in the config (prompt
templates, SOPs); changes to the harness's code are measured by the MR's own pipeline, whose
acceptance run (``improvement.self_repo_checks``) is the harness's test suite, eval tests
included.
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

from harness_cli import resources
from harness_cli.errors import InputError
from harness_cli.eval import runner
from harness_cli.eval.gate import BASELINE_FILE, MODEL_FACING, Baseline, manifest, write
from harness_cli.eval.runner import row
from harness_cli.eval.stats import PairedDelta, paired_delta
from harness_cli.eval.suites import resolve
from harness_cli.eval.trial import TrialResult

OVERLAYS = tuple(MODEL_FACING.items())
"""Where an improvement's prompts and SOPs may sit in the harness repo → where the eval
trial's config takes them (the one list: ``gate.MODEL_FACING``)."""


@dataclass
class BeforeAfter:
    suites: list[str]
    runs: int
    before: tuple[float, int, float, float, int]
    """cases passed (a stochastic case adds its rate), cases, low, high, defective accepted"""
    after: tuple[float, int, float, float, int]
    delta: PairedDelta

    def paragraph(self) -> str:
        def rate(x: tuple[float, int, float, float, int]) -> str:
            share = x[0] / x[1] if x[1] else 0.0
            return (
                f"{x[0]:g} of {x[1]} cases passed ({share:.0%}, 95 % interval "
                f"{x[2]:.0%} to {x[3]:.0%})"
            )

        d = self.delta
        return (
            f"The harness ran its eval suite ({', '.join(self.suites)}, {self.runs} trial(s) per "
            "case, the same cases and seeds) on the prompts and SOPs before and after this "
            f"change: {rate(self.before)} before and {rate(self.after)} after, a paired "
            f"difference of {d.delta * 100:+.0f} points (95 % interval {d.low * 100:+.0f} to "
            f"{d.high * 100:+.0f}); defective results accepted as done went from "
            f"{self.before[4]} to {self.after[4]}. These figures come from the run itself."
        )

    def proof(self) -> str:
        def short(x: tuple[float, int, float, float, int]) -> str:
            return f"{x[0]:g}/{x[1]} [{x[2]:.0%}, {x[3]:.0%}]"

        return (
            f"    $ harness eval {' '.join(self.suites)} --runs {self.runs} --config-root DIR\n"
            f"    before {short(self.before)}  after {short(self.after)}  "
            f"delta {self.delta.delta * 100:+.0f} [{self.delta.low * 100:+.0f}, "
            f"{self.delta.high * 100:+.0f}]"
        )

    def baseline(self, specs: list[str]) -> Baseline:
        """The before run, as the MR's pipeline gates on it (``evals/baseline.json``);
        ``specs``: the suites as finalize named them, so the pipeline runs the same ones."""
        passed, started, low, high, _ = self.before
        return Baseline(list(specs), self.runs, passed, started, low, high)

    def pipeline_line(self) -> str:
        return (
            f"This MR carries the before run as {BASELINE_FILE}; its pipeline runs `harness "
            f"eval --overlay . --baseline {BASELINE_FILE}` and fails when the pass rate falls "
            f"below {self.before[2]:.0%}, the lower end of the before interval."
        )

    def insert_into(self, description: str) -> str:
        """The figures before the ``Changes:`` list, or at the end when there is no such
        list. Prose only: the MR's proof-of-work block is the harness's own required-check run
        (``delivery.mr``), which replaces any indented block the description carries."""
        block = f"{self.paragraph()} {self.pipeline_line()}\n"
        lines = description.rstrip("\n").split("\n")
        at = next((i for i, ln in enumerate(lines) if ln.strip().lower() == "changes:"), None)
        if at is None:
            return f"{description.rstrip()}\n\n{block}"
        return "\n".join([*lines[:at], block, *lines[at:]]) + "\n"


def _config(root: Path, worktree: Path | None) -> Path:
    shutil.copytree(resources.example_config(), root / "agent-config")
    shutil.copytree(resources.example_sops(), root / "sops")
    if worktree is not None:
        for source, target in OVERLAYS:
            if (worktree / source).is_dir():
                shutil.copytree(worktree / source, root / target, dirs_exist_ok=True)
    return root


@contextlib.contextmanager
def overlaid(repo: Path) -> Iterator[Path]:
    """A config root for ``harness eval --overlay REPO``: the packaged config with the repo's
    prompts and SOPs laid over it, as ``measure`` builds its "after" (removed on exit)."""
    if not repo.is_dir():
        raise InputError(f"--overlay {repo} is not a folder", hint="give the harness repo")
    scratch = Path(tempfile.mkdtemp(prefix="harness-eval-overlay-"))
    try:
        yield _config(scratch, repo)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def measure(
    suites: list[str], runs: int, worktree: Path, *, jobs: int | None = None
) -> BeforeAfter:
    """Run ``suites`` on the packaged config (before) and with the worktree's prompts and SOPs
    laid over it (after)."""

    scratch = Path(tempfile.mkdtemp(prefix="harness-before-after-"))
    try:
        before_root = _config(scratch / "before", None)
        after_root = _config(scratch / "after", worktree)
        before = runner.evaluate(suites, runs=runs, jobs=jobs, config_root=before_root)
        after = runner.evaluate(suites, runs=runs, jobs=jobs, config_root=after_root)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)

    return compare([resolve(s)[0] for s in suites], runs, before.trials, after.trials)


def measure_for_mr(
    suites: list[str], runs: int, worktree: Path, base_sha: str
) -> tuple[BeforeAfter, str]:
    """An improvement MR's figures (``improvement.patch_suggester`` is handed this by the
    edge): ``suites`` before and after the worktree's change, and the before run written into
    the worktree as the baseline its pipeline gates on (``harness eval --overlay . --baseline
    FILE``). The baseline names the model-facing files as they were at ``base_sha``, so the
    gate can tell an MR that changes what the model reads (which scripted evals cannot judge)
    from a code-only one. Returns the figures and the baseline's path inside the worktree,
    for the caller to commit."""
    figures = measure(suites, runs, worktree)
    baseline = replace(figures.baseline(suites), model_facing=manifest(worktree, base_sha))
    write(worktree / BASELINE_FILE, baseline, inside=worktree)
    return figures, BASELINE_FILE


def compare(
    suites: list[str], runs: int, before: list[TrialResult], after: list[TrialResult]
) -> BeforeAfter:

    b, a = row("*", "*", "before", before), row("*", "*", "after", after)
    after_by = {(t.suite, t.case, t.seed): t.passed for t in after}
    pairs = [(t.passed, after_by[(t.suite, t.case, t.seed)]) for t in before
             if (t.suite, t.case, t.seed) in after_by]  # fmt: skip
    return BeforeAfter(
        suites,
        runs,
        # The case is the unit (``runner.Row.rate``): passed counts cases (a stochastic one
        # adds its pass rate), started counts cases.
        (b.case_score, b.cases, b.low, b.high, b.defective_accepted),
        (a.case_score, a.cases, a.low, a.high, a.defective_accepted),
        paired_delta(pairs),
    )
