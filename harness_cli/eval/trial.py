"""One trial: one case, one seed, one variant, run for real and graded — and what a trial that
did not finish counts as. 003's rule 6: "Comptez chaque essai démarré, y compris les timeouts,
les arrêts de politique, les crashes du harness et les échecs de l'évaluateur."
"""

from __future__ import annotations

import re
import time
import traceback
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from harness_cli.eval.cases import LibraryCase, Observed
from harness_cli.eval.grader import check
from harness_cli.eval.investigation_driver import run_case

Status = Literal["pass", "fail", "policy_stop", "timeout", "crash", "grader_error"]
ACCEPTED_EXIT = "complete"
"""An investigation that ends ``complete`` is work the harness accepted as done."""


@dataclass(frozen=True)
class TrialSpec:
    """What a worker needs to run one trial (JSON across the pipe)."""

    index: int
    suite: str
    case: str
    case_path: str
    runtime: str
    seed: int
    ablate: tuple[str, ...] = ()
    config_root: str | None = None
    live: bool = False
    """``harness eval --live``: the real model plays every role (``eval.live``)."""
    usd_cap: float | None = None
    """What was left of ``--max-usd`` when the trial started: its own budget."""

    @property
    def variant(self) -> str:
        return "+".join(self.ablate) or "baseline"


@dataclass
class TrialResult:
    index: int
    suite: str
    case: str
    seed: int
    variant: str
    status: Status
    problems: list[str] = field(default_factory=list)
    accepted: bool = False
    """The harness accepted the work as done (exit=complete, or an MR marked ready/merged)."""
    usd: float = 0.0
    tokens: int = 0
    wall_seconds: float = 0.0
    defective: bool = False
    """The case is marked defective (``defective:``, or a ``defective_marks`` text reached
    the operator or the MR): accepting this trial's work is a defective acceptance."""
    outcome: dict[str, Any] = field(default_factory=dict)
    """The harness's decision as it reached the world (``outcome``): what an ablation is
    judged by."""
    signature: dict[str, Any] = field(default_factory=dict)
    """The harness's own trace (codes, per-round numbers, iterations): a difference here alone
    is not a changed decision."""
    deterministic: bool = True
    """The case's model is scripted without draws: one trial says all a trial can."""
    live: bool = False
    """A real model played some role: a model eval's trial, not a machinery eval's."""
    inferred: bool = False
    """Not run: an ablation of gates that never fired in this (case, seed)'s deterministic
    baseline trial is that same run (``runner.infer``); its grade and outcome are the
    baseline's, its cost is not counted again and it is no trial started."""

    @property
    def passed(self) -> bool:
        return self.status == "pass"

    @property
    def finished(self) -> bool:
        """The harness ran the case to an end of its own (graded pass or fail)."""
        return self.status in ("pass", "fail", "policy_stop")

    @property
    def defective_accepted(self) -> bool:
        """Defective work accepted as done: a case marked defective in its YAML that ended
        accepted (a failed grade alone is not a defect: an honest run can fail a check)."""
        return self.accepted and self.defective

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> TrialResult:
        return cls(**data)


def failed_trial(spec: TrialSpec, status: Status, why: str, seconds: float) -> TrialResult:
    # A trial that did not finish reached nothing: its outcome is its status alone.
    return TrialResult(spec.index, spec.suite, spec.case, spec.seed, spec.variant, status,
                       [why[:500]], wall_seconds=round(seconds, 3),
                       outcome={"unfinished": status})  # fmt: skip


def run_trial(spec: TrialSpec, case: LibraryCase, anthropic: Any = None) -> TrialResult:
    """Run and grade one trial in this process (a worker's job)."""
    from harness_cli.eval.live import trial_case

    case = trial_case(spec, case)
    began = time.monotonic()
    try:
        seen = run_case(
            case,
            spec.runtime,
            anthropic=anthropic,
            seed=spec.seed,
            ablate=frozenset(spec.ablate),
            config_root=Path(spec.config_root) if spec.config_root else None,
        )
    except Exception as exc:  # noqa: BLE001 - a harness crash is an outcome to count
        tail = "".join(traceback.format_exception_only(exc)).strip()
        return failed_trial(spec, "crash", f"the harness crashed: {tail}", time.monotonic() - began)
    try:
        problems = check(case, seen)
    except Exception as exc:  # noqa: BLE001 - so is a grader that cannot grade
        return failed_trial(spec, "grader_error", f"the grader failed: {exc!r}",
                            time.monotonic() - began)  # fmt: skip
    status: Status = "pass" if not problems else "fail"
    if problems and seen.exit_code == 4:
        status = "policy_stop"
    took = accepted(case, seen)
    return TrialResult(
        spec.index, spec.suite, spec.case, spec.seed, spec.variant, status, problems[:5],
        accepted=took, usd=round(seen.usd, 6), tokens=seen.tokens,
        wall_seconds=round(time.monotonic() - began, 3), defective=defective(case, seen),
        outcome=outcome(case, seen, took), signature=signature(seen),
        deterministic=not case.trials_matter, live=case.needs_api_key,
    )  # fmt: skip


def accepted(case: LibraryCase, seen: Observed) -> bool:
    if case.kind == "delivery":
        d = seen.delivery
        return bool(d.get("mr_state") == "merged" or (d.get("mr_state") and not d.get("draft")))
    return seen.exit == ACCEPTED_EXIT


_CONFIDENCE = re.compile(r"confidence=(\d+)%")


def reached_operator(dm: list[str]) -> str:
    """The operator's DMs without what varies with no decision behind it: the cost line, the
    exit line's iteration count and elapsed time, request ids, token and dollar figures (the
    exit line's name, confidence and note stay: they are what the operator reads)."""
    kept = []
    for message in dm:
        for line in message.splitlines():
            if line.startswith("Cost:"):
                continue
            line = re.sub(r"\s+iterations=\d+\s+elapsed=\S+", " ", line)
            line = _IDS.sub(r"\1_…", line)  # a request id is no decision
            line = unvarying(line)
            if "token" in line or "$" in line:  # nor is how many tokens a prompt happened to be
                line = re.sub(r"\d[\d,.]*", "#", line)
            kept.append(line.strip())
    return "\n".join(kept)


_IDS = re.compile(r"\b(req|msg|toolu)_[0-9A-Za-z]{8,}")
_PORT = re.compile(r"\b(127\.0\.0\.1|localhost):\d+")
_SHA = re.compile(r"\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*\d)[0-9a-f]{7,40}\b")


def unvarying(text: str) -> str:
    """``text`` without what differs between two runs of the same decision: an emulator's
    port (each trial starts its own), a commit id (it hashes the commit's time)."""
    return _SHA.sub("<sha>", _PORT.sub(r"\1:<port>", text))


def outcome(case: LibraryCase, seen: Observed, took: bool) -> dict[str, Any]:
    """What the harness decided, as the world saw it: accepted or not, the exit, the number
    the operator was given, what reached the operator; for a delivery, the MR and its
    threads. An ablation that changes none of these changed no decision."""
    if case.kind == "delivery":
        d = seen.delivery
        return {"accepted": took, "status": seen.status, "mr_state": d.get("mr_state"),
                "pushed": bool(d.get("pushed")),
                "replies": sorted({unvarying(str(r)) for r in d.get("replies", [])}),
                "operator": reached_operator(seen.dm)}  # fmt: skip
    found = _CONFIDENCE.search(seen.exit_line)
    return {"accepted": took, "exit": seen.exit, "exit_code": seen.exit_code,
            "status": seen.status, "confidence": int(found.group(1)) if found else None,
            "operator": reached_operator(seen.dm)}  # fmt: skip


def signature(seen: Observed) -> dict[str, Any]:
    """The harness's own trace: what an ablation removes first and what alone is no flip."""
    return {"codes": sorted(seen.codes), "confidences": list(seen.confidences),
            "iterations": seen.iterations}  # fmt: skip


def defective(case: LibraryCase, seen: Observed) -> bool:
    if case.defective:
        return True
    if not case.defective_marks:
        return False
    world = "\n".join([*seen.dm, *map(str, seen.delivery.get("replies", [])),
                       str(seen.delivery.get("branch_text", ""))])  # fmt: skip
    return any(mark in world for mark in case.defective_marks)
