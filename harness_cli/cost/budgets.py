"""Budgets that stop work cleanly: per case, per workflow run and per day, in tokens and $.

Checked at the one safe point every workflow shares — before a model call starts, when
nothing is in flight and everything before it is on disk — so the call that crosses a limit
finishes and is recorded, and the next one is refused with ``BudgetExceeded`` (exit code 4).
The investigation ends on it with ``exit=budget``; every other workflow ends with exit 4 and
one DM (``commands/_workflow.running``). The operator raises a case's limit with
``admin: budget <case> <amount>`` (case.json ``budget_usd``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from harness_cli.cost import meter
from harness_cli.cost.meter import Tally
from harness_cli.cost.prices import Budgets
from harness_cli.errors import HarnessError, PolicyRefused
from harness_cli.workspace import registry

Kind = Literal["case", "workflow", "day"]


class BudgetExceeded(PolicyRefused):
    """A spending limit is reached: the run ends at this safe point (exit 4)."""

    def __init__(self, kind: Kind, unit: str, limit: float, spent: Tally, case: str | None):
        self.kind: Kind = kind
        self.unit = unit
        self.limit = limit
        self.spent = spent
        self.case = case
        owner = {"case": f"case {case}'s", "workflow": "this workflow run's", "day": "today's"}
        amount = f"${limit:g}" if unit == "usd" else f"{int(limit):,} tokens"
        hint = (
            f"raise it with `admin: budget {case} <amount>` and run the workflow again"
            if kind == "case"
            else f"raise cost.budgets.{kind}_{unit} in harness.yaml, then run the workflow again"
        )
        super().__init__(
            f"{owner[kind]} budget of {amount} is reached (spent {spent.text()})", hint=hint
        )

    @property
    def note(self) -> str:
        """The exit line's note."""
        amount = f"${self.limit:g}" if self.unit == "usd" else f"{int(self.limit):,} tokens"
        return f"{self.kind} budget {amount} reached: spent ${self.spent.usd:.4f}"


@dataclass
class CaseSpend:
    """What a case had spent before this run, and its own limit (None: harness.yaml's)."""

    before: Tally
    budget_usd: float | None


_CASES: dict[str, CaseSpend] = {}
"""Per run id: the case's spend as case.json had it when the run made its first call."""


def case_spend(case_id: str, run: str) -> CaseSpend:
    key = f"{run}:{case_id}"
    found = _CASES.get(key)
    if found is None:
        found = _CASES[key] = _load_case_spend(case_id)
    return found


def _load_case_spend(case_id: str) -> CaseSpend:
    try:
        case = registry.load_case(case_id)
    except HarnessError:
        return CaseSpend(Tally(), None)
    cost: dict[str, Any] = dict(case.cost or {})
    before = Tally(
        calls=int(cost.get("calls", 0)),
        input=int(cost.get("input", 0)),
        output=int(cost.get("output", 0)),
        cache_write=int(cost.get("cache_write", 0)),
        cache_read=int(cost.get("cache_read", 0)),
        usd=float(cost.get("usd", 0.0)),
    )
    return CaseSpend(before, case.budget_usd)


def _plus(a: Tally, b: Tally) -> Tally:
    return Tally(
        a.calls + b.calls,
        a.input + b.input,
        a.output + b.output,
        a.cache_write + b.cache_write,
        a.cache_read + b.cache_read,
        a.usd + b.usd,
    )


def check(budgets: Budgets) -> None:
    """Raise ``BudgetExceeded`` when the current scope's run, case or day has reached a limit."""
    where = meter.current()
    run, case = where.get("run"), where.get("case")
    spent_run = meter.run_tally(run)
    _over("workflow", budgets.workflow_usd, budgets.workflow_tokens, spent_run, case)
    if case and run:
        spend = case_spend(str(case), str(run))
        limit = spend.budget_usd if spend.budget_usd is not None else budgets.case_usd
        _over("case", limit, budgets.case_tokens, _plus(spend.before, spent_run), str(case))
    if budgets.day_usd is not None or budgets.day_tokens is not None:
        _over("day", budgets.day_usd, budgets.day_tokens, meter.day_tally(), case)


def _over(
    kind: Kind, usd: float | None, tokens: int | None, spent: Tally, case: str | None
) -> None:
    if usd is not None and spent.usd >= usd:
        raise BudgetExceeded(kind, "usd", usd, spent, case)
    if tokens is not None and spent.tokens >= tokens:
        raise BudgetExceeded(kind, "tokens", tokens, spent, case)
