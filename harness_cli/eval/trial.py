"""One trial: one case, one seed, one variant, run for real and graded — and what a trial that
did not finish counts as. 003's rule 6: "Comptez chaque essai démarré, y compris les timeouts,
les arrêts de politique, les crashes du harness et les échecs de l'évaluateur."
"""

from __future__ import annotations

import time
import traceback
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from harness_cli.investigation.library import LibraryCase, Observed, check

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

    @property
    def passed(self) -> bool:
        return self.status == "pass"

    @property
    def finished(self) -> bool:
        """The harness ran the case to an end of its own (graded pass or fail)."""
        return self.status in ("pass", "fail", "policy_stop")

    @property
    def defective_accepted(self) -> bool:
        """Defective work accepted as done: accepted, and the grader says it is wrong."""
        return self.accepted and self.status != "pass"

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> TrialResult:
        return cls(**data)


def failed_trial(spec: TrialSpec, status: Status, why: str, seconds: float) -> TrialResult:
    return TrialResult(spec.index, spec.suite, spec.case, spec.seed, spec.variant, status,
                       [why[:500]], wall_seconds=round(seconds, 3))  # fmt: skip


def run_trial(spec: TrialSpec, case: LibraryCase, anthropic: Any = None) -> TrialResult:
    """Run and grade one trial in this process (a worker's job)."""
    from harness_cli.sandbox.investigation_library import run_case

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
    return TrialResult(
        spec.index, spec.suite, spec.case, spec.seed, spec.variant, status, problems[:5],
        accepted=accepted(case, seen), usd=round(seen.usd, 6), tokens=seen.tokens,
        wall_seconds=round(time.monotonic() - began, 3),
    )  # fmt: skip


def accepted(case: LibraryCase, seen: Observed) -> bool:
    if case.kind == "delivery":
        d = seen.delivery
        return bool(d.get("mr_state") == "merged" or (d.get("mr_state") and not d.get("draft")))
    return seen.exit == ACCEPTED_EXIT
