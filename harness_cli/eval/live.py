"""Live mode (#31 item 6): ``harness eval --live`` runs the corpus's cases with the real model
in every role, on either runtime, through the same path as a case's ``models: {ROLE: live}``:
each trial's Anthropic emulator hands every request on to ANTHROPIC_BASE_URL with the real
ANTHROPIC_API_KEY (``sandbox.anthropic_forward``), so the prompts are still read from the wire,
faults are still injected, and the harness meters what the real API says it served.

Before anything runs: the key is required (one line, exit 2, nothing written), the cost is
estimated from the trials planned × a per-trial token estimate × the price table of the
harness.yaml the trials use, and ``--max-usd`` refuses a plan whose estimate is above it.
During the run the metered spend is summed as trials end; once it reaches the cap no trial
starts, the trials in flight end under the harness's own budget (each trial's ``case_usd`` and
``workflow_usd`` lowered to what was left of the cap when it started) and the report says how
many trials never started.

A live trial is a *model eval*'s trial (``TrialResult.live``): ``--runs`` trials per case,
intervals, cost and latency. It is graded on the harness's decisions only (exit, exit code,
status, the review's decision, an honest model never forced, nothing forbidden reaching the
operator): iteration counts, confidence sequences, sparklines and the scripted answer's words
are the script's, not something a real model owes.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml

from harness_cli.agents.policy import ROLES
from harness_cli.cost.prices import CostSettings, price_usd
from harness_cli.errors import InputError, PolicyRefused
from harness_cli.eval.calibration import brier, ece, percentile
from harness_cli.eval.cases import LibraryCase
from harness_cli.eval.suites import LIVE_DEFAULT_URL
from harness_cli.eval.trial import TrialResult, TrialSpec
from harness_cli.sandbox.model_script import DEFAULT_ROLE

TIMEOUT_S = 1800.0
"""A live trial's default wall clock (``--timeout``): a real investigation of up to 20
iterations with its reviews, or a delivery with its CI, takes many minutes; a trial killed at
it counts as a timeout (with what it had spent)."""
KEY_ENV = "ANTHROPIC_API_KEY"
BASE_ENV = "ANTHROPIC_BASE_URL"


@dataclass(frozen=True)
class TokensPerTrial:
    """What one live trial is expected to consume, by kind of token (each has its price)."""

    input: int
    output: int
    cache_write: int
    cache_read: int

    @property
    def total(self) -> int:
        return self.input + self.output + self.cache_write + self.cache_read


TOKENS_PER_TRIAL: dict[str, TokensPerTrial] = {
    # An investigation trial: the precommit lock, ~4 iterations of ~6 tool turns each (every
    # turn re-sends the case's prompt, mostly read from the prompt cache), the adversarial
    # review and the red team. The scripted corpus measures ~8k tokens a case because a
    # script answers each role in one or two turns; a real model reads files and sources.
    "investigation": TokensPerTrial(input=60_000, output=20_000, cache_write=40_000,
                                    cache_read=250_000),
    # A delivery trial: a dev-agent run with the shell (edit, run the tests, commit) and the
    # flow's follow-up (a CI fix or a review answered): more turns, longer tool results.
    "delivery": TokensPerTrial(input=80_000, output=30_000, cache_write=60_000,
                               cache_read=500_000),
}  # fmt: skip
"""The one place the live estimate's per-trial figures live. They are an estimate, printed as
such; a live run's report gives the metered $ per trial beside it."""


DEMO_RUNS = ("investigation", "delivery", "delivery")
"""What ``harness demo --live`` is estimated at: the investigation with its reviews, then two
delivery runs' worth (the MR's task; the red CI fixed and the review answered)."""


def upstream(env: dict[str, str]) -> Any:
    """Where the emulators hand every role's request (``require_key``'s key and endpoint)."""
    from harness_cli.sandbox.anthropic_forward import Upstream

    return Upstream(env[BASE_ENV], env[KEY_ENV], LIVE_ROLES)


def has_key() -> bool:
    return bool(os.environ.get(KEY_ENV))


def require_key(what: str) -> dict[str, str]:
    """The real API's key and endpoint, or the one-line refusal (exit 2) that says how to fix
    it. Read before anything is planned, started or written."""
    key = os.environ.get(KEY_ENV)
    if not key:
        raise InputError(
            f"{what} --live needs {KEY_ENV} and it is not set: nothing was run",
            hint=f"export {KEY_ENV}=… (and {BASE_ENV} for a gateway), or drop --live to run "
            "the scripted models",
        )
    return {KEY_ENV: key, BASE_ENV: os.environ.get(BASE_ENV) or LIVE_DEFAULT_URL}


LIVE_ROLES = frozenset(ROLES) | {"judge", DEFAULT_ROLE}
"""Every role a trial's model plays (``agents.policy.ROLES``), the grader's ``judge``
(``eval.judge``) and ``default``, the claude CLI's own side calls without a role marker: in
live mode the script answers none of them."""


def selected(cases: Sequence[tuple[str, Path, LibraryCase]]) -> tuple[list[Any], list[str]]:
    """The cases a live run can grade (``honest: true``: the model tells the truth, so the
    expected decision is what a good real model should get), and the ids left out (their
    script misbehaves on purpose; a real model need not repeat it)."""
    kept = [c for c in cases if c[2].honest]
    return kept, [c[2].id for c in cases if not c[2].honest]


def live_case(case: LibraryCase, usd_cap: float | None = None) -> LibraryCase:
    """``case`` with the real model in every role and graded on the harness's decisions;
    ``usd_cap`` lowers the trial's own budgets (the harness stops it, exit=budget)."""
    e = case.expect
    expect = e.model_copy(update={
        "iterations": None, "confidences": None, "trajectory": None, "prompt_contains": {},
        "prompt_once": {}, "guard_notes": [], "verdict_codes": [], "dm_contains": [],
        "analysis_contains": [], "case_show_contains": [], "exit_note": None,
    })  # fmt: skip
    if e.delivery is not None:
        # The fix's words and file contents are the script's; and a real model's commands may
        # fail on the way (a red test run before the fix, a grep that finds nothing): what it
        # is graded on is the MR, its pipeline, the push and the acceptance record.
        expect.delivery = e.delivery.model_copy(update={
            "branch_contains": [], "replies_contain": [], "dm_contains": [],
            "commands_may_fail": [""],
        })  # fmt: skip
    setup = case.setup
    if usd_cap is not None:
        config = dict(setup.config)
        budgets = dict(config.get("cost", {}).get("budgets", {}))
        for key in ("case_usd", "workflow_usd"):
            budgets[key] = min(float(budgets.get(key) or usd_cap), usd_cap)
        config["cost"] = {**config.get("cost", {}), "budgets": budgets}
        setup = setup.model_copy(update={"config": config})
    return case.model_copy(update={
        "models": dict.fromkeys(LIVE_ROLES, "live"), "roles": {}, "rules_first": {},
        "behaviours": {}, "expect": expect, "setup": setup,
    })  # fmt: skip


def trial_case(spec: TrialSpec, case: LibraryCase) -> LibraryCase:
    """What a worker runs for ``spec``: the case itself, or its live form."""
    return live_case(case, spec.usd_cap) if spec.live else case


# -- the estimate ------------------------------------------------------------------------------


@dataclass
class Estimate:
    model: str
    trials: int
    usd: float
    per_kind: dict[str, dict[str, Any]] = field(default_factory=dict)
    unit: str = "live trial"

    def line(self) -> str:
        kinds = "; ".join(
            f"{k}: {v['trials']} × ~{v['tokens']:,} tokens × ${v['usd_per_trial']:.2f}"
            for k, v in self.per_kind.items()
        )
        return (f"estimate: ~${self.usd:.2f} for {self.trials} {self.unit}(s) on {self.model} "
                f"({kinds}; per-trial figures estimated in harness_cli/eval/live.py)")  # fmt: skip

    def to_json(self) -> dict[str, Any]:
        return {"model": self.model, "trials": self.trials, "usd": round(self.usd, 4),
                "per_kind": self.per_kind}  # fmt: skip


def trial_config(config_root: Path | None) -> tuple[str, CostSettings]:
    """The model and the price table of the harness.yaml the trials run with."""
    from harness_cli import resources
    from harness_cli.agents.anthropic_loop import DEFAULT_MODEL

    folder = config_root / "agent-config" if config_root else resources.example_config()
    data = yaml.safe_load((folder / "harness.yaml").read_text(encoding="utf-8")) or {}
    settings = CostSettings.model_validate(data.get("cost") or {})
    return str(data.get("model") or DEFAULT_MODEL), settings


def estimate(
    kinds: Sequence[str], model: str, settings: CostSettings, unit: str = "live trial"
) -> Estimate:
    """``kinds``: one entry per planned trial (its case's kind)."""
    out = Estimate(model, len(kinds), 0.0, unit=unit)
    for kind in sorted(set(kinds)):
        t = TOKENS_PER_TRIAL[kind]
        each = price_usd(model, input_tokens=t.input, output_tokens=t.output,
                         cache_write_tokens=t.cache_write, cache_read_tokens=t.cache_read,
                         settings=settings)  # fmt: skip
        n = sum(1 for k in kinds if k == kind)
        out.per_kind[kind] = {"trials": n, "tokens": t.total, "usd_per_trial": round(each, 4)}
        out.usd += n * each
    return out


def refuse_over(est: Estimate, max_usd: float | None) -> None:
    if max_usd is not None and est.usd > max_usd:
        raise PolicyRefused(
            f"the live run's estimate ~${est.usd:.2f} is over --max-usd {max_usd:g}: nothing "
            "was run",
            hint="raise --max-usd, lower --runs, or name fewer cases",
        )


# -- the cap during the run --------------------------------------------------------------------


@dataclass
class Cap:
    """The metered spend against ``--max-usd``, summed as trials end."""

    max_usd: float | None
    spent: float = 0.0
    not_started: int = 0

    @property
    def reached(self) -> bool:
        return self.max_usd is not None and self.spent >= self.max_usd

    def add(self, result: TrialResult) -> None:
        self.spent += result.usd

    def admit(self, spec: TrialSpec) -> TrialSpec | None:
        """The spec to start, with what is left of the cap as its own budget; None once the
        cap is reached (no trial starts after that)."""
        if self.reached:
            return None
        if self.max_usd is None:
            return spec
        return replace(spec, usd_cap=round(self.max_usd - self.spent, 6))

    def to_json(self) -> dict[str, Any]:
        return {"max_usd": self.max_usd, "spent_usd": round(self.spent, 6),
                "reached": self.reached, "trials_not_started": self.not_started}  # fmt: skip


def summary(trials: Sequence[TrialResult], est: Estimate, cap: Cap) -> dict[str, Any]:
    """A model eval's cost and latency beside the estimate, and its calibration: over the
    trials the harness accepted as done (exit=complete), the confidence the operator was told
    — the claim "done, and right at X %" — against the trial's grade. A blocked exit's low
    confidence is no claim of a right answer, so it is not scored."""

    seconds = [t.wall_seconds for t in trials if t.finished]
    usd = sum(t.usd for t in trials)
    told = [(t.outcome["confidence"] / 100, t.passed) for t in trials
            if t.accepted and isinstance(t.outcome.get("confidence"), int)]  # fmt: skip
    return {
        "estimate": est.to_json(),
        "cap": cap.to_json(),
        "spent_usd": round(usd, 6),
        "usd_per_trial": round(usd / len(trials), 6) if trials else 0.0,
        "latency_s": {"p50": percentile(seconds, 0.5), "p95": percentile(seconds, 0.95)},
        "calibration": {"n": len(told), "brier": brier(told), "ece": ece(told)},
    }


def _seconds(value: float | None) -> str:
    # No trial finished (each was killed at its wall clock): no latency to report, not 0 s.
    return "n/a" if value is None else f"{value:.1f} s"


def lines(data: dict[str, Any]) -> list[str]:
    cap, lat, cal = data["cap"], data["latency_s"], data["calibration"]
    out = [f"live: ${data['spent_usd']:.4f} metered (${data['usd_per_trial']:.4f} a trial; "
           f"estimated ${data['estimate']['usd']:.2f}); latency p50 {_seconds(lat['p50'])}, p95 "
           f"{_seconds(lat['p95'])}"]  # fmt: skip
    if cal["n"]:
        out.append(f"calibration of the told confidence over {cal['n']} accepted trial(s): Brier "
                   f"{cal['brier']:.3f}, ECE {cal['ece']:.3f} (lower is better)")  # fmt: skip
    if cap["reached"]:
        out.append(f"stopped at the cap: ${cap['spent_usd']:.4f} spent of --max-usd "
                   f"{cap['max_usd']:g}; {cap['trials_not_started']} trial(s) not started "
                   "(this report is partial)")  # fmt: skip
    return out


def write(data: dict[str, Any], out: Path) -> str:
    """``live.json`` and ``live.md`` (the same lines as the terminal's) beside the report."""
    import json

    out.mkdir(parents=True, exist_ok=True)
    (out / "live.json").write_text(json.dumps(data, indent=2), encoding="utf-8")
    text = "# harness eval --live\n\n" + "\n".join(f"- {line}" for line in lines(data)) + "\n"
    (out / "live.md").write_text(text, encoding="utf-8")
    return f"wrote {out / 'live.md'} and {out / 'live.json'}"
